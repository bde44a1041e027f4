package kv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

// TestStoreAdminConformance runs the operator's checks against KV mode's
// store over MemoryNamespace, which lists as KV does.
func TestStoreAdminConformance(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := kv.NewMemoryNamespace()
	mem.Now = clock
	storetest.RunAdmin(t, kv.NewStore(mem, clock), "memory:", storetest.Options{
		Short:   kv.MinTTL,
		Now:     clock,
		Advance: func(d time.Duration) { now = now.Add(d) },
	})
}

// TestAPurgeLeavesALiveClaimBesideTheOutcome: a request whose read missed
// the key's receipt (KV's staleness) claims the key beside it and calls
// the OMS. A purge then must not delete its claim: another request would
// find the key free and call the OMS at once with it. It leaves the key
// as it is and answers the claim, held, until the claim's lease ends;
// then it purges the receipt and the claim left beside it.
func TestAPurgeLeavesALiveClaimBesideTheOutcome(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := kv.NewMemoryNamespace()
	mem.Now = clock
	store := kv.NewStore(mem, clock)
	k := intake.Key{Client: "desk-a", ID: "k"}
	o, err := order.Parse([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	c := intake.Claim{Token: "t", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-1", AcceptedAt: now,
		Lease: time.Minute, KeepUntil: now.Add(time.Hour)}
	if rec, err := store.Begin(ctx, k, c); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("Begin = %+v, %v; want the claim", rec, err)
	}
	receipt := order.Receipt{OrderID: "order-1", Status: order.StatusAccepted, Order: o, AcceptedAt: now}.JSON()
	if err := mem.Put(ctx, "result:desk-a:k", kv.Entry{Value: string(receipt)}, kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if rec, err := store.Purge(ctx, k, ""); err != nil || rec.State != intake.Held {
		t.Fatalf("Purge beside a live claim = %v, %v; want the claim, held", rec.State, err)
	}
	for _, name := range []string{"result:desk-a:k", "pending:desk-a:k"} {
		if _, err := mem.Get(ctx, name); err != nil {
			t.Errorf("%s after the purge: %v; want it left", name, err)
		}
	}
	now = now.Add(time.Minute + time.Second) // the claim's lease is over
	if rec, err := store.Purge(ctx, k, ""); err != nil || rec.State != intake.Stored {
		t.Fatalf("Purge once the lease ended = %v, %v; want the receipt purged", rec.State, err)
	}
	for _, name := range []string{"result:desk-a:k", "pending:desk-a:k"} {
		if _, err := mem.Get(ctx, name); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("%s after the purge: %v; want it gone", name, err)
		}
	}
}
