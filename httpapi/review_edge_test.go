package httpapi_test

import (
	"net/http"
	"strings"

	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/metrics"
	"testing"
)

// TestAnEmptyOrderIDIsNoPreconditionToSkip: a resolve or a purge given
// orderId= with nothing after it (a script's unset variable) names an
// order id no key holds; it must not act as if it had named none.
func TestAnEmptyOrderIDIsNoPreconditionToSkip(t *testing.T) {
	for _, path := range []string{
		"/admin/orders/desk-a/k1/resolve?orderId=",
		"/admin/order/resolve?client=desk-a&key=k1&orderId=",
	} {
		e := newAdminEnv(t, false)
		e.unknownKey(t, "k1")
		w := e.do("POST", path, opsToken, `{"status":"accepted"}`)
		if w.Code != 400 || problemCode(t, w) != "invalid_query" {
			t.Errorf("POST %s = %d %s, want 400 invalid_query", path, w.Code, w.Body)
		}
		if got := decodeEntry(t, e.do("GET", "/admin/orders/desk-a/k1", opsToken, "")); got.State != "unknown" {
			t.Errorf("after POST %s the key is %s, want still unknown", path, got.State)
		}
	}
}

// TestAHeadLookupCountsAsALookup: a HEAD is answered as a GET, a lookup
// (docs/http.md), so its data point's event is lookup, not other (a
// preflight, a refusal: docs/metrics.md).
func TestAHeadLookupCountsAsALookup(t *testing.T) {
	var points []metrics.Point
	h := httpapi.New(newService(kv.NewMemoryNamespace()), httpapi.Options{Metrics: func(p metrics.Point) { points = append(points, p) }})
	if w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody))); w.Code != 201 {
		t.Fatalf("order = %d %s", w.Code, w.Body)
	}
	if w := serve(h, request(http.MethodHead, ptr("k"), nil)); w.Code != 200 {
		t.Fatalf("HEAD = %d", w.Code)
	}
	if got := points[len(points)-1]; got.Event != metrics.Lookup || got.Outcome != metrics.Replay {
		t.Errorf("HEAD's data point: event %s outcome %s, want lookup replay", got.Event, got.Outcome)
	}
}
