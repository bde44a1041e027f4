package kv_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
)

// TestAReceiptOutlivesItsClaimToTheSecond: KV takes a TTL in whole
// seconds, and the claim's and the receipt's are each rounded from their
// own write's time. An order accepted at T (KeepUntil T+keep), its claim
// written 50 ms later, and a gateway that answers in 1.02 s: the claim
// lives 30 ms longer than its receipt, and alone it reads open and due.
func TestAReceiptOutlivesItsClaimToTheSecond(t *testing.T) {
	ctx := context.Background()
	mem, store, c := newSettleStore()
	k := intake.Key{Client: "desk-a", ID: "kept"}
	accepted := c.now
	cl := claimFor(c, "kept", order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1})
	c.now = accepted.Add(50 * time.Millisecond) // the claim's write, after a read
	if _, err := store.Begin(ctx, k, cl); err != nil {
		t.Fatal(err)
	}
	c.now = accepted.Add(1020 * time.Millisecond) // the commit, after the gateway's answer
	if err := store.Commit(ctx, k, cl, intake.Result{Body: []byte(`{"orderId":"order-kept"}`), Fingerprint: cl.Fingerprint, TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	for at := cl.KeepUntil.Add(-time.Second); at.Before(cl.KeepUntil.Add(2 * time.Second)); at = at.Add(10 * time.Millisecond) {
		mem.Now = func() time.Time { return at }
		_, claimErr := mem.Get(ctx, "pending:desk-a:kept")
		_, receiptErr := mem.Get(ctx, "result:desk-a:kept")
		if claimErr == nil && receiptErr != nil {
			t.Fatalf("KeepUntil%+v: the claim is live and the receipt is %v; want the receipt kept as long as the claim", at.Sub(cl.KeepUntil), receiptErr)
		}
	}
}
