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

// TestAMigratingPurgeBesideKVsLiveClaimErasesKVsReceiptOrRefuses: during
// a migration the ledger holds the key's receipt (copied from KV), and KV
// holds the same receipt with a live claim beside it (a KV-mode request
// whose read missed the receipt). KV's purge answers that claim Held and
// deletes nothing; the purge must then wait (409) and leave KV's claim,
// not drop the claim, purge the ledger and answer 200 while KV's receipt
// stays, for a later read to copy back into the ledger.
func TestAMigratingPurgeBesideKVsLiveClaimErasesKVsReceiptOrRefuses(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	old := kv.NewMemoryNamespace()
	old.Now = clock.Now
	o, err := order.Parse([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	oldStore := kv.NewStore(old, clock.Now)
	// The KV-mode request whose read missed the receipt: its claim.
	c := intake.Claim{Token: "stale read", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-x", AcceptedAt: acceptedAt,
		Lease: time.Minute, KeepUntil: acceptedAt.Add(time.Hour)}
	if rec, err := oldStore.Begin(ctx, key("k"), c); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("KV claim = %+v, %v", rec, err)
	}
	receipt := order.Receipt{OrderID: "order-x", Status: order.StatusAccepted, Order: o, AcceptedAt: acceptedAt}.JSON()
	if err := old.Put(ctx, "result:k", kv.Entry{Value: string(receipt)}, kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Now: clock.Now, Fallback: oldStore, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	if out, err := svc.Lookup(ctx, key("k")); err != nil || string(out.Receipt) != string(receipt) {
		t.Fatalf("Lookup = %s, %v; want KV's receipt", out.Receipt, err)
	}
	if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Stored {
		t.Fatalf("the ledger holds %v, %v; want the receipt copied", rec.State, err)
	}
	clock.Advance(2 * time.Second)
	rec, err := intake.NewAdmin(svc, mem).Purge(ctx, key("k"), "")
	_, kvErr := old.Get(ctx, "result:k")
	purged := err == nil
	switch {
	case errors.Is(err, intake.ErrInProgress):
		if kvErr != nil {
			t.Errorf("refused in progress, but KV's receipt is gone: %v", kvErr)
		}
	case err == nil:
		if !errors.Is(kvErr, kv.ErrNotFound) {
			t.Errorf("Purge = %v, nil (200), but KV's receipt is still there (%v): the purge erased the ledger's copy only", rec.State, kvErr)
		}
	default:
		t.Fatalf("Purge = %v, %v", rec.State, err)
	}
	if _, err := old.Get(ctx, "pending:k"); errors.Is(err, kv.ErrNotFound) && kvErr == nil {
		t.Errorf("KV's live claim was dropped while its receipt stays: the in-flight request's key is freed")
	}
	if out, err := svc.Lookup(ctx, key("k")); purged && err == nil {
		t.Errorf("Lookup after the purge = %s: the purged receipt is served again (copied back from KV)", out.Receipt)
	}
}
