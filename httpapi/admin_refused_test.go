package httpapi_test

import (
	"context"
	"testing"

	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// TestARefusedResolveWritesNothing: a resolve refused for what the key
// holds writes nothing (bad input changes nothing): the operator's claim,
// even given back at once, would hold the key from its client's retry,
// and for its whole lease should the give-back fail (found by a review).
func TestARefusedResolveWritesNothing(t *testing.T) {
	t.Run("another order id: 409 order_mismatch", func(t *testing.T) {
		e, _, _ := newAdminEnvOver(t, false, true)
		e.unknownKey(t, "k1")
		before := len(e.rec.Writes())
		w := e.do("POST", "/admin/orders/desk-a/k1/resolve?orderId=another", opsToken, `{"status":"accepted"}`)
		if w.Code != 409 || problemCode(t, w) != "order_mismatch" {
			t.Fatalf("resolve = %d %s, want 409 order_mismatch", w.Code, w.Body)
		}
		if got := e.rec.Writes()[before:]; len(got) != 0 {
			t.Errorf("the refused resolve wrote %v; want nothing", got)
		}
	})
	t.Run("another order id, the give-back failing: the key stays its client's", func(t *testing.T) {
		e, faulty, _ := newAdminEnvOver(t, false, true)
		e.unknownKey(t, "k1")
		faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "pending:", Nth: 2}, kvtest.Fault{Op: kvtest.OpPut, Prefix: "pending:", Nth: 3})
		w := e.do("POST", "/admin/orders/desk-a/k1/resolve?orderId=another", opsToken, `{"status":"accepted"}`)
		if w.Code != 409 || problemCode(t, w) != "order_mismatch" {
			t.Fatalf("resolve = %d %s, want 409 order_mismatch", w.Code, w.Body)
		}
		faulty.Set()
		if d := decodeEntry(t, e.do("GET", "/admin/orders/desk-a/k1", opsToken, "")); d.State != "unknown" {
			t.Errorf("after the refused resolve the key is %q, want unknown still", d.State)
		}
		if retry := e.order("k1", deskToken); retry.Code == 409 {
			t.Errorf("the client's retry after the refused resolve = %d %s: the operator's claim holds the key", retry.Code, retry.Body)
		}
	})
	t.Run("a final outcome, its claim left beside it: 409 outcome_final", func(t *testing.T) {
		e, _, mem := newAdminEnvOver(t, false, false)
		if w := e.order("k1", deskToken); w.Code != 201 {
			t.Fatalf("order = %d %s", w.Code, w.Body)
		}
		if _, err := mem.Get(context.Background(), "pending:desk-a:k1"); err != nil {
			t.Fatalf("the claim beside the receipt: %v", err)
		}
		before := len(e.rec.Writes())
		w := e.do("POST", "/admin/orders/desk-a/k1/resolve", opsToken, `{"status":"accepted"}`)
		if w.Code != 409 || problemCode(t, w) != "outcome_final" {
			t.Fatalf("resolve = %d %s, want 409 outcome_final", w.Code, w.Body)
		}
		if got := e.rec.Writes()[before:]; len(got) != 0 {
			t.Errorf("the refused resolve wrote %v; want nothing", got)
		}
	})
}
