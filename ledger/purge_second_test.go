package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/workers"
)

// TestASecondPurgesRetryNeverDeletesAReceiptCommittedSince: a second purge of a key within a minute of the first, which finds
// nothing to delete (the key open again: a new order under it), writes no
// tombstone of its own, as the first's is kept. Its answer is lost; the
// settler commits the new order's receipt; its retry, with its own token,
// deletes that receipt: "a retry never deletes a receipt committed since"
// (docs/operating.md).
func TestASecondPurgesRetryNeverDeletesAReceiptCommittedSince(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	key := intake.Key{Client: "desk-a", ID: "k"}
	// A first order, stored, and purged (its tombstone kept a minute).
	first := leaveOpen(t, m, c, key, c.now.Add(time.Second))
	c.Advance(time.Second)
	s1 := intake.Claim{Token: "s1", Lease: time.Minute, By: intake.RoleSettler, KeepUntil: first.KeepUntil}
	if rec, err := m.Begin(ctx, key, s1); err != nil || rec.State != intake.TookOver {
		t.Fatalf("Begin = %+v, %v", rec, err)
	}
	if err := m.Commit(ctx, key, s1, intake.Result{Body: []byte(`{"orderId":"` + first.OrderID + `"}`), Fingerprint: first.Fingerprint, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if rec, err := m.Purge(ctx, key, ""); err != nil || rec.State != intake.Stored {
		t.Fatalf("first purge = %v, %v", rec.State, err)
	}
	// A new order under the key, its outcome unknown (same order: same order id).
	c.Advance(5 * time.Second)
	again := leaveOpen(t, m, c, key, c.now.Add(time.Second))
	c.Advance(time.Second)
	s2 := intake.Claim{Token: "s2", Lease: time.Minute, By: intake.RoleSettler, KeepUntil: again.KeepUntil}
	calls := 0
	m.RoundTrip = func(_ context.Context, method string, apply func()) error {
		apply()
		if method != "purge" {
			return nil
		}
		if calls++; calls == 1 {
			if rec, err := m.Begin(ctx, key, s2); err != nil || rec.State != intake.TookOver {
				t.Fatalf("the settler's Begin = %+v, %v", rec, err)
			}
			if err := m.Commit(ctx, key, s2, intake.Result{Body: []byte(`{"orderId":"` + again.OrderID + `"}`), Fingerprint: again.Fingerprint, TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
			return &workers.Error{Message: "answer lost", Retryable: true}
		}
		return nil
	}
	rec, err := m.Purge(ctx, key, again.OrderID)
	m.RoundTrip = nil
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != intake.Open {
		t.Errorf("the second purge answered %v, want what it found: Open", rec.State)
	}
	if after, err := m.Lookup(ctx, key); err != nil || after.State != intake.Stored {
		t.Fatalf("after the second purge and its retry the key is %v, %v: the retry deleted the receipt committed since", after.State, err)
	}
}
