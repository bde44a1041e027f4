package intake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
)

// TestAMigratingPurgeOfOneOrderLeavesKVsLiveClaimBesideAnothersReceipt:
// during a migration the ledger holds order-x's receipt, final, and KV
// holds order-y's receipt under the same key (a KV-mode Worker's, while
// both serve) with a live claim beside it (a KV-mode request whose read
// missed that receipt, calling the OMS). A purge scoped to order-x must
// not drop that live claim, as it would for a claim left beside another
// order's receipt, freeing the key for another request while the first
// is still at the OMS: it waits, as beside the same order's receipt.
func TestAMigratingPurgeOfOneOrderLeavesKVsLiveClaimBesideAnothersReceipt(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	old := kv.NewMemoryNamespace()
	old.Now = clock.Now
	o, err := order.Parse([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	oldStore := kv.NewStore(old, clock.Now)
	c := intake.Claim{Token: "stale read", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-y", AcceptedAt: acceptedAt,
		Lease: 10 * time.Minute, KeepUntil: acceptedAt.Add(time.Hour)}
	if rec, err := oldStore.Begin(ctx, key("k"), c); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("KV claim = %+v, %v", rec, err)
	}
	rx := order.Receipt{OrderID: "order-x", Status: order.StatusAccepted, Order: o, AcceptedAt: acceptedAt}.JSON()
	if err := old.Put(ctx, "result:k", kv.Entry{Value: string(rx)}, kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Now: clock.Now, Fallback: oldStore, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	if out, err := svc.Lookup(ctx, key("k")); err != nil || string(out.Receipt) != string(rx) {
		t.Fatalf("Lookup = %s, %v; want order-x's receipt", out.Receipt, err)
	}
	clock.Advance(2 * time.Second)
	ry := order.Receipt{OrderID: "order-y", Status: order.StatusAccepted, Order: o, AcceptedAt: acceptedAt}.JSON()
	if err := old.Put(ctx, "result:k", kv.Entry{Value: string(ry)}, kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if _, err := old.Get(ctx, "pending:k"); err != nil {
		t.Fatalf("KV's claim before the purge: %v", err)
	}
	_, perr := intake.NewAdmin(svc, mem).Purge(ctx, key("k"), "order-x")
	if _, err := old.Get(ctx, "pending:k"); errors.Is(err, kv.ErrNotFound) {
		t.Errorf("Purge(order-x) = %v, and dropped KV's live claim (lease to %v) beside order-y's receipt, which stays", perr, acceptedAt.Add(10*time.Minute))
	}
}
