package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/kv"
)

// TestAnInvalidOrderCostsNoRateLimitBudget: over KV with the stand-in (the
// default deploy), a body that is no order is bad input: it must be told
// 422 invalid_order and must not spend the caller's budget of new orders,
// which would then refuse its valid orders (and its next invalid one) 429.
func TestAnInvalidOrderCostsNoRateLimitBudget(t *testing.T) {
	asks := 0
	opts := serviceOptions()
	opts.Limit = func(context.Context, string) (bool, error) { asks++; return asks <= 1, nil } // a budget of one new order
	h := httpapi.New(newServiceWith(kv.NewMemoryNamespace(), opts), httpapi.Options{})
	for _, key := range []string{"bad-1", "bad-2"} {
		w := serve(h, request(http.MethodPost, ptr(key), strings.NewReader(`{"symbol":"","side":"buy","quantity":1}`)))
		if w.Code != 422 || !strings.Contains(w.Body.String(), `"error":"invalid_order"`) {
			t.Errorf("invalid order under %s = %d %s, want 422 invalid_order", key, w.Code, w.Body)
		}
	}
	if asks != 0 {
		t.Errorf("the rate limit was asked %d times for bodies that are no order, want 0", asks)
	}
	if w := serve(h, request(http.MethodPost, ptr("good"), strings.NewReader(validBody))); w.Code != 201 {
		t.Errorf("the first valid order = %d %s, want 201: invalid bodies spent its budget", w.Code, w.Body)
	}
}
