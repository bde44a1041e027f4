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

// liveKVClaim is a migration whose KV holds a live claim on key k, a
// KV-mode request's for claimed whose read missed the receipt beside it,
// and whose ledger holds that receipt, copied there by a lookup.
type liveKVClaim struct {
	clock *fakeClock
	old   *kv.MemoryNamespace
	mem   *ledger.MemoryStore
	svc   *intake.Service
	o     order.Order
}

func newLiveKVClaim(t *testing.T, claimed string, lease time.Duration, stored string) *liveKVClaim {
	t.Helper()
	ctx := context.Background()
	w := &liveKVClaim{clock: &fakeClock{now: acceptedAt}, old: kv.NewMemoryNamespace(), mem: ledger.NewMemoryStore()}
	w.old.Now, w.mem.Now = w.clock.Now, w.clock.Now
	var err error
	if w.o, err = order.Parse([]byte(validBody)); err != nil {
		t.Fatal(err)
	}
	oldStore := kv.NewStore(w.old, w.clock.Now)
	c := intake.Claim{Token: "stale read", Fingerprint: w.o.Fingerprint(), Order: w.o, OrderID: claimed, AcceptedAt: acceptedAt,
		Lease: lease, KeepUntil: acceptedAt.Add(time.Hour)}
	if rec, err := oldStore.Begin(ctx, key("k"), c); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("KV claim = %+v, %v", rec, err)
	}
	receipt := w.putKVReceipt(t, stored)
	w.svc = intake.New(w.mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Now: w.clock.Now, Fallback: oldStore, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	if out, err := w.svc.Lookup(ctx, key("k")); err != nil || string(out.Receipt) != string(receipt) {
		t.Fatalf("Lookup = %s, %v; want KV's receipt of %s", out.Receipt, err, stored)
	}
	if rec, err := w.mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Stored {
		t.Fatalf("the ledger holds %v, %v; want the receipt copied", rec.State, err)
	}
	return w
}

// putKVReceipt stores orderID's receipt in KV, as a KV-mode Worker does,
// and returns it.
func (w *liveKVClaim) putKVReceipt(t *testing.T, orderID string) []byte {
	t.Helper()
	receipt := order.Receipt{OrderID: orderID, Status: order.StatusAccepted, Order: w.o, AcceptedAt: acceptedAt}.JSON()
	if err := w.old.Put(context.Background(), "result:k", kv.Entry{Value: string(receipt)}, kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return receipt
}

// TestAMigratingPurgeBesideKVsLiveClaimErasesKVsReceiptOrRefuses: during
// a migration the ledger holds the key's receipt (copied from KV), and KV
// holds the same receipt with a live claim beside it (a KV-mode request
// whose read missed the receipt). KV's purge answers that claim Held and
// deletes nothing; the purge must then wait (409) and leave KV's claim,
// not drop the claim, purge the ledger and answer 200 while KV's receipt
// stays, for a later read to copy back into the ledger.
func TestAMigratingPurgeBesideKVsLiveClaimErasesKVsReceiptOrRefuses(t *testing.T) {
	ctx := context.Background()
	w := newLiveKVClaim(t, "order-x", time.Minute, "order-x")
	w.clock.Advance(2 * time.Second)
	rec, err := intake.NewAdmin(w.svc, w.mem).Purge(ctx, key("k"), "")
	_, kvErr := w.old.Get(ctx, "result:k")
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
	if _, err := w.old.Get(ctx, "pending:k"); errors.Is(err, kv.ErrNotFound) && kvErr == nil {
		t.Errorf("KV's live claim was dropped while its receipt stays: the in-flight request's key is freed")
	}
	if out, err := w.svc.Lookup(ctx, key("k")); purged && err == nil {
		t.Errorf("Lookup after the purge = %s: the purged receipt is served again (copied back from KV)", out.Receipt)
	}
}

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
	w := newLiveKVClaim(t, "order-y", 10*time.Minute, "order-x")
	w.clock.Advance(2 * time.Second)
	w.putKVReceipt(t, "order-y")
	w.clock.Advance(2 * time.Second)
	if _, err := w.old.Get(ctx, "pending:k"); err != nil {
		t.Fatalf("KV's claim before the purge: %v", err)
	}
	_, perr := intake.NewAdmin(w.svc, w.mem).Purge(ctx, key("k"), "order-x")
	if _, err := w.old.Get(ctx, "pending:k"); errors.Is(err, kv.ErrNotFound) {
		t.Errorf("Purge(order-x) = %v, and dropped KV's live claim (lease to %v) beside order-y's receipt, which stays", perr, acceptedAt.Add(10*time.Minute))
	}
}
