package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/workers"
)

// TestAPurgeRetryNeverDeletesAReceiptCommittedSince: an operator's purge
// finds the key's outcome still unknown and deletes nothing (409
// outcome_not_final), but its answer is lost; before the Client's retry,
// with the same token, the settler stores the key's receipt. The retry is
// the same call: it must answer what the purge did, and must not delete
// the receipt committed since (docs/operating.md: "a retry never deletes a
// receipt committed since").
func TestAPurgeRetryNeverDeletesAReceiptCommittedSince(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	key := intake.Key{Client: "desk-a", ID: "k"}
	open := leaveOpen(t, m, c, key, c.now.Add(time.Second))
	c.Advance(time.Second)
	settler := intake.Claim{Token: "settler", Lease: time.Minute, By: intake.RoleSettler, KeepUntil: open.KeepUntil}
	receipt := []byte(`{"orderId":"` + open.OrderID + `","status":"accepted"}`)
	calls := 0
	m.RoundTrip = func(_ context.Context, method string, apply func()) error {
		apply()
		if method != "purge" {
			return nil
		}
		if calls++; calls == 1 {
			// Between the lost answer and the retry, the alarm settles
			// the key in the object.
			if rec, err := m.Begin(ctx, key, settler); err != nil || rec.State != intake.TookOver {
				t.Fatalf("the settler's Begin = %+v, %v", rec, err)
			}
			if err := m.Commit(ctx, key, settler, intake.Result{Body: receipt, Fingerprint: open.Fingerprint, TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
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
