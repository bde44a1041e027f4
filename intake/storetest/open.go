package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// open checks claims for orders that may reach a gateway (sent): released
// after the order was sent, the key stays open with its order id, which
// only the same order takes over; released unsent, it is freed, unless an
// earlier claim left an order id the key must keep; once sent, a key's
// order id and time never change.
func (s *suite) open(t *testing.T) {
	ctx := context.Background()

	t.Run("a released sent claim leaves the key open with its order id", func(t *testing.T) {
		key := s.newKey()
		c := s.sent("a", "fp", "order-1")
		if rec := s.mustTake(t, key, c, intake.EventClaim); rec.OrderID != "" {
			t.Fatalf("a new claim came back with order id %q, want its own (none returned)", rec.OrderID)
		}
		wantOrderID(t, s.mustLookup(t, key, intake.Held), "order-1")
		c.Stage = intake.StageSent
		if err := s.store.Release(ctx, key, c); err != nil {
			t.Fatalf("Release: %v", err)
		}
		wantOrderID(t, s.mustLookup(t, key, intake.Open), "order-1")

		t.Run("another order cannot take it", func(t *testing.T) {
			wantOrderID(t, s.mustBegin(t, key, s.sent("b", "fp-other", "order-2"), intake.Open), "order-1")
		})
		t.Run("the same order takes it over with the order id", func(t *testing.T) {
			retry := s.sent("c", "fp", "order-3")
			wantOrderID(t, s.mustTake(t, key, retry, intake.EventTakeOver), "order-1")
			s.mustLookup(t, key, intake.Held)
			s.mustCommit(t, key, retry, intake.Result{Body: []byte("rejected"), Rejected: true, Fingerprint: "fp", TTL: time.Hour})
			if rec := s.mustLookup(t, key, intake.Stored); !rec.Rejected || string(rec.Body) != "rejected" {
				t.Fatalf("stored %q rejected %v, want the rejection", rec.Body, rec.Rejected)
			}
		})
	})

	// A claim's call may be sent again once its answer was lost (an RPC
	// retried), and the first try may have taken the key over. Order ids
	// are derived from the key and the order, so the claim's own is the
	// key's: only the answer can say that the key kept another time and
	// attempts, which every call from then on must carry.
	t.Run("a takeover retried with its own token is still a takeover", func(t *testing.T) {
		if !s.fenced(t) {
			return
		}
		key := s.newKey()
		first := s.sent("a", "fp", "order-1")
		s.mustTake(t, key, first, intake.EventClaim)
		first.Stage, first.Attempts = intake.StageSent, 1
		if err := s.store.Release(ctx, key, first); err != nil {
			t.Fatalf("Release: %v", err)
		}
		retry := s.sent("b", "fp", "order-1")
		retry.AcceptedAt = accepted.Add(time.Minute)
		s.mustTake(t, key, retry, intake.EventTakeOver)
		rec := s.mustTake(t, key, retry, intake.EventTakeOver)
		wantOrderID(t, rec, "order-1")
		if rec.Attempts != 1 {
			t.Fatalf("the retried takeover came back with %d attempts, want the key's 1", rec.Attempts)
		}
	})

	t.Run("a released claim that was never sent frees the key", func(t *testing.T) {
		key := s.newKey()
		c := s.sent("a", "fp", "order-1")
		s.mustTake(t, key, c, intake.EventClaim)
		if err := s.store.Release(ctx, key, c); err != nil {
			t.Fatalf("Release: %v", err)
		}
		s.mustLookup(t, key, intake.Absent)
	})

	// A takeover whose answer was lost never learnt the order id and time
	// the key keeps. Released unsent, it must not forget them; released
	// sent, with an order id and time of its own (an isolate's memory of a
	// claim that never landed), it must not replace them: a client may
	// have been answered with the key's.
	for _, lost := range []struct {
		name string
		sent bool
	}{
		{"a taken-over claim released unsent keeps the earlier order id", false},
		{"a taken-over claim released sent keeps the key's order id and time", true},
	} {
		t.Run(lost.name, func(t *testing.T) {
			if !s.fenced(t) {
				return
			}
			key := s.newKey()
			first := s.sent("a", "fp", "order-1")
			s.mustTake(t, key, first, intake.EventClaim)
			first.Stage = intake.StageSent
			if err := s.store.Release(ctx, key, first); err != nil {
				t.Fatalf("Release: %v", err)
			}
			takeover := s.sent("b", "fp", "order-2")
			if lost.sent {
				takeover.AcceptedAt, takeover.Stage = accepted.Add(30*time.Second), intake.StageSent
			}
			s.mustTake(t, key, takeover, intake.EventTakeOver)
			if err := s.store.Release(ctx, key, takeover); err != nil {
				t.Fatalf("Release: %v", err)
			}
			wantOrderID(t, s.mustLookup(t, key, intake.Open), "order-1")
		})
	}

	// Nor must it forget that the key was given up on: released as a
	// claim of its own, not given up on, it would leave the key due for
	// the settler again, which would call and page a second time.
	t.Run("a taken-over claim released without its give-up keeps the key given up on", func(t *testing.T) {
		if !s.fenced(t) {
			return
		}
		key := s.newKey()
		first := s.sent("a", "fp", "order-1")
		s.mustTake(t, key, first, intake.EventClaim)
		first.Stage, first.GiveUp, first.Attempts = intake.StageSent, intake.GivenUp, 9
		if err := s.store.Release(ctx, key, first); err != nil {
			t.Fatalf("Release: %v", err)
		}
		takeover := s.sent("b", "fp", "order-1")
		s.mustTake(t, key, takeover, intake.EventTakeOver)
		if err := s.store.Release(ctx, key, takeover); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if rec := s.mustLookup(t, key, intake.Open); rec.GiveUp != intake.GivenUp || !rec.NextAttempt.IsZero() {
			t.Fatalf("the key is given up %v, due at %v; want it given up on, due never", rec.GiveUp, rec.NextAttempt)
		}
	})
}
