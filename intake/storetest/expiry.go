package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/edge-orders/edge-orders/intake"
)

// expiry checks what a Store does once time passes: a lease ends, and may
// be taken over; a receipt expires and is never served again; a sent
// order's id outlives its holder's lease.
func (s *suite) expiry(t *testing.T) {
	ctx := context.Background()

	t.Run("leases and expiry", func(t *testing.T) {
		if s.opts.Advance == nil {
			skip(t, "time cannot pass here")
			return
		}
		// One wait serves every key here, so a real clock waits once.
		taken, slow, expiring, kept := s.newKey(), s.newKey(), s.newKey(), s.newKey()
		short := intake.Claim{Token: "a", Fingerprint: "fp", Lease: s.opts.Short}
		s.mustTake(t, taken, short, intake.EventClaim)
		s.mustTake(t, slow, short, intake.EventClaim)
		s.mustTake(t, expiring, claim("a", "fp"), intake.EventClaim)
		s.mustCommit(t, expiring, claim("a", "fp"), intake.Result{Body: []byte("old"), Fingerprint: "fp", TTL: s.opts.Short})
		dead := s.sent("a", "fp", "order-1")
		dead.Lease = s.opts.Short
		s.mustTake(t, kept, dead, intake.EventClaim)
		givenUp := s.newKey()
		s.leaveUnresolved(t, givenUp)
		lapsed := s.sent("c", "fp", "order-2")
		lapsed.Lease = s.opts.Short
		if rec := s.mustTake(t, givenUp, lapsed, intake.EventTakeOver); rec.GiveUp != intake.GivenUp {
			t.Fatalf("a client's takeover of an unresolved key came back %+v, want it unresolved", rec)
		}
		s.opts.Advance(s.pastShort())

		t.Run("a lapsed takeover of an unresolved key leaves it unresolved, due never", func(t *testing.T) {
			rec := s.mustLookup(t, givenUp, intake.Open)
			wantOrderID(t, rec, "order-1")
			if rec.GiveUp != intake.GivenUp || !rec.NextAttempt.IsZero() {
				t.Fatalf("after its taker's lease ended the key's give-up is %d, due %v; want given up, due never (not reported again)", rec.GiveUp, rec.NextAttempt)
			}
		})

		t.Run("a dead holder's sent order keeps its id past the lease", func(t *testing.T) {
			wantOrderID(t, s.mustLookup(t, kept, intake.Open), "order-1")
			wantOrderID(t, s.mustTake(t, kept, s.sent("b", "fp", "order-2"), intake.EventTakeOver), "order-1")
		})

		t.Run("an expired claim is taken over and its holder's commit refused", func(t *testing.T) {
			s.mustLookup(t, taken, intake.Absent)
			s.mustTake(t, taken, claim("b", "fp"), intake.EventClaim)
			if err := s.store.Commit(ctx, taken, short, receipt("late", "fp")); s.opts.Fenced && !errors.Is(err, intake.ErrLostClaim) {
				t.Fatalf("commit after the takeover = %v, want ErrLostClaim", err)
			}
			s.mustCommit(t, taken, claim("b", "fp"), receipt("new", "fp"))
			if rec := s.mustLookup(t, taken, intake.Stored); string(rec.Body) != "new" {
				t.Fatalf("receipt = %q, want the new holder's", rec.Body)
			}
		})

		t.Run("a slow holder whose key nobody took over still commits", func(t *testing.T) {
			s.mustCommit(t, slow, short, receipt("slow", "fp"))
			s.mustLookup(t, slow, intake.Stored)
		})

		t.Run("an expired receipt is never served and its key is new again", func(t *testing.T) {
			s.mustLookup(t, expiring, intake.Absent)
			rec := s.mustTake(t, expiring, claim("b", "fp"), intake.EventClaim)
			if rec.Body != nil {
				t.Fatalf("Begin after expiry returned receipt %q", rec.Body)
			}
		})
	})
}

// leaveUnresolved leaves key open with order-1, given up on and reported:
// unresolved, due never.
func (s *suite) leaveUnresolved(t *testing.T, key intake.Key) {
	t.Helper()
	c := s.sent("given-up", "fp", "order-1")
	s.mustTake(t, key, c, intake.EventClaim)
	c.Stage, c.Attempts, c.GiveUp = intake.StageSent, 5, intake.GivenUp
	if err := s.store.Release(context.Background(), key, c); err != nil {
		t.Fatalf("Release: %v", err)
	}
}
