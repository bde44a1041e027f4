package storetest

import (
	"context"
	"testing"

	"github.com/edge-orders/edge-orders/intake"
)

// phases checks that a claim for an order that may reach a gateway writes
// its key's phase beside the flags: held while the claim holds the key,
// open once it is released sent, unresolved once released given up on,
// and still held, as written, once its lease has ended with its holder
// gone. Every record the suite reads is checked against its flags too
// (checkPhase).
func (s *suite) phases(t *testing.T) {
	ctx := context.Background()
	release := func(t *testing.T, key intake.Key, c intake.Claim) {
		t.Helper()
		if err := s.store.Release(ctx, key, c); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}

	t.Run("a sent claim writes its key's phase", func(t *testing.T) {
		key := s.newKey()
		c := s.sent("a", "fp", "order-1")
		s.mustTake(t, key, c, intake.EventClaim)
		wantWritten(t, s.mustLookup(t, key, intake.Held), intake.PhaseHeld)
		c.Stage = intake.StageSent
		release(t, key, c)
		wantWritten(t, s.mustLookup(t, key, intake.Open), intake.PhaseOpen)

		retry := s.sent("b", "fp", "order-2")
		s.mustTake(t, key, retry, intake.EventTakeOver)
		wantWritten(t, s.mustLookup(t, key, intake.Held), intake.PhaseHeld)
		retry.Stage, retry.GiveUp = intake.StageSent, intake.GivenUp
		release(t, key, retry)
		wantWritten(t, s.mustLookup(t, key, intake.Open), intake.PhaseUnresolved)
	})

	t.Run("a claim whose lease ended reads as written held", func(t *testing.T) {
		if s.opts.Advance == nil {
			skip(t, "the Store's time cannot be moved on")
			return
		}
		// A takeover of a key given up on, which no settler touches once
		// its lease ends (where a real object's alarm would settle an
		// ordinary claim, and write).
		key := s.newKey()
		s.leaveUnresolved(t, key)
		c := s.sent("a", "fp", "order-2")
		c.Lease = s.opts.Short
		s.mustTake(t, key, c, intake.EventTakeOver)
		s.opts.Advance(s.pastShort())
		// Held to unresolved is the table's row for the end of a lease on
		// a key given up on: checkPhase in mustLookup holds it to that.
		rec := s.mustLookup(t, key, intake.Open)
		wantWritten(t, rec, intake.PhaseHeld)
		if intake.PhaseOf(rec) != intake.PhaseUnresolved {
			t.Fatalf("phase %v once the lease ended, want unresolved", intake.PhaseOf(rec))
		}
	})
}

// wantWritten fails t unless rec says its Store wrote it in phase p.
func wantWritten(t *testing.T, rec intake.Record, p intake.Phase) {
	t.Helper()
	if rec.WrittenPhase != p {
		t.Fatalf("written phase %v, want %v", rec.WrittenPhase, p)
	}
}

// checkPhase fails t if rec's written phase disagrees with its flags.
func checkPhase(t *testing.T, rec intake.Record) {
	t.Helper()
	if err := intake.CheckWrittenPhase(rec); err != nil {
		t.Fatalf("%v: %+v", err, rec)
	}
}
