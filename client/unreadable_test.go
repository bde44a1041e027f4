package client_test

import (
	"net/http"
	"testing"

	"github.com/edge-orders/edge-orders/client"
)

// docs/http.md and api/openapi.yaml: 400 unreadable_body, "the body ended
// early; retry under the same key".
func TestUnreadableBodyIsRetriedUnderTheSameKey(t *testing.T) {
	w := newWorker(t, "", fail(400, "unreadable_body"))
	c, _ := newClient(w, &client.Options{MaxAttempts: 3})
	res, err := c.SubmitWithKey(t.Context(), "k-body", msft)
	if err != nil {
		t.Fatalf("SubmitWithKey: %v (IsRetryable %v), want the order placed on the retry", err, client.IsRetryable(err))
	}
	if res.StatusCode != http.StatusCreated || res.Attempts != 2 {
		t.Errorf("status %d attempts %d, want 201 2", res.StatusCode, res.Attempts)
	}
	wantSameKey(t, w, 2, "k-body")
}
