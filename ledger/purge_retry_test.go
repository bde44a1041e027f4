package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/workers"
)

// settleOpen has the settler, as token, take over key, left open by
// claim, and commit its order's receipt.
func settleOpen(t *testing.T, m *ledger.MemoryStore, key intake.Key, open intake.Claim, token string) {
	t.Helper()
	ctx := context.Background()
	settler := intake.Claim{Token: token, Lease: time.Minute, By: intake.RoleSettler, KeepUntil: open.KeepUntil}
	if rec, err := m.Begin(ctx, key, settler); err != nil || rec.Took != intake.EventTakeOver {
		t.Fatalf("the settler's Begin = %+v, %v", rec, err)
	}
	receipt := []byte(`{"orderId":"` + open.OrderID + `","status":"accepted"}`)
	if err := m.Commit(ctx, key, settler, intake.Result{Body: receipt, Fingerprint: open.Fingerprint, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
}

// purgeLosingItsAnswer purges key, left open by claim, for its order id:
// the purge's first answer is lost, and before the Client's retry, with
// the same token, the alarm settles the key in the object (settleOpen, as
// token). It fails t unless the purge answers what it found, Open, and
// the receipt committed since is still stored.
func purgeLosingItsAnswer(t *testing.T, m *ledger.MemoryStore, key intake.Key, open intake.Claim, token string) {
	t.Helper()
	ctx := context.Background()
	calls := 0
	m.RoundTrip = func(_ context.Context, method string, apply func()) error {
		apply()
		if method != "purge" {
			return nil
		}
		if calls++; calls == 1 {
			settleOpen(t, m, key, open, token)
			return &workers.Error{Message: "answer lost", Retryable: true}
		}
		return nil
	}
	rec, err := m.Purge(ctx, key, open.OrderID)
	m.RoundTrip = nil
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != intake.Open {
		t.Errorf("the purge answered %v, want what it found: Open (outcome not final)", rec.State)
	}
	if after, err := m.Lookup(ctx, key); err != nil || after.State != intake.Stored {
		t.Fatalf("after the purge and its retry the key is %v, %v: the retry deleted the receipt committed since", after.State, err)
	}
}

// TestAPurgeRetryNeverDeletesAReceiptCommittedSince: an operator's purge
// finds the key's outcome still unknown and deletes nothing (409
// outcome_not_final), but its answer is lost; before the Client's retry,
// with the same token, the settler stores the key's receipt. The retry is
// the same call: it must answer what the purge did, and must not delete
// the receipt committed since (docs/operating.md: "a retry never deletes a
// receipt committed since").
func TestAPurgeRetryNeverDeletesAReceiptCommittedSince(t *testing.T) {
	m, c := newMemory()
	key := intake.Key{Client: "desk-a", ID: "k"}
	open := leaveOpen(t, m, c, key, c.now.Add(time.Second))
	c.Advance(time.Second)
	purgeLosingItsAnswer(t, m, key, open, "settler")
}

// TestASecondPurgesRetryNeverDeletesAReceiptCommittedSince: the same, for
// a second purge of the key within a minute of a first that deleted its
// receipt. The first's tombstone is kept; the second, which finds the key
// open again (the order placed anew under it) and deletes nothing, must
// keep one of its own for its retry to find (found by a review: it kept
// none, and its retry deleted the new receipt).
func TestASecondPurgesRetryNeverDeletesAReceiptCommittedSince(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	key := intake.Key{Client: "desk-a", ID: "k"}
	first := leaveOpen(t, m, c, key, c.now.Add(time.Second))
	c.Advance(time.Second)
	settleOpen(t, m, key, first, "s1")
	if rec, err := m.Purge(ctx, key, ""); err != nil || rec.State != intake.Stored {
		t.Fatalf("first purge = %v, %v", rec.State, err)
	}
	// The same order under the key again, its outcome unknown (the same
	// order id).
	c.Advance(5 * time.Second)
	again := leaveOpen(t, m, c, key, c.now.Add(time.Second))
	c.Advance(time.Second)
	purgeLosingItsAnswer(t, m, key, again, "s2")
}
