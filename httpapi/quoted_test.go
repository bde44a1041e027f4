package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/kv"
)

// TestAQuotedHeaderFindsTheReferencesReceipt: the handler tells the Store
// that a key came in the draft's quoted form (Key.Quoted), so a POST and a
// GET with the header the TypeScript reference stored its receipt under,
// result:"abc", replay that receipt, and nothing is placed (found by a
// review: only the workerd test saw the handler's part).
func TestAQuotedHeaderFindsTheReferencesReceipt(t *testing.T) {
	const stored = `{"orderId":"11111111-2222-4333-8444-555555555555","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2026-03-14T15:00:00.000Z"}`
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		mem := kv.NewMemoryNamespace()
		if err := mem.Put(t.Context(), `result:"abc"`, kv.Entry{Value: stored}, kv.PutOptions{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(validBody)
		}
		w := serve(httpapi.New(newService(mem), httpapi.Options{}), request(method, ptr(`"abc"`), body))
		if w.Code != http.StatusOK || w.Body.String() != stored {
			t.Errorf(`%s with Idempotency-Key: "abc" = %d %s; want 200 with the reference's receipt`, method, w.Code, w.Body)
		}
	}
}
