package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/edge-orders/edge-orders/intake"
)

// claims checks Begin: which claim holds a key, alone or concurrently, and
// that a key belongs to its client.
func (s *suite) claims(t *testing.T) {
	ctx := context.Background()

	t.Run("the first claim wins and later ones see it held", func(t *testing.T) {
		key := s.newKey()
		s.mustTake(t, key, claim("a", "fp-a"), intake.EventClaim)
		rec := s.mustBegin(t, key, claim("b", "fp-b"), intake.Held)
		if rec.Fingerprint != "fp-a" {
			t.Errorf("held fingerprint = %q, want fp-a", rec.Fingerprint)
		}
		s.mustLookup(t, key, intake.Held)
	})

	t.Run("a claim retried with its own token is still claimed", func(t *testing.T) {
		if !s.fenced(t) {
			return
		}
		key := s.newKey()
		s.mustTake(t, key, claim("a", "fp"), intake.EventClaim)
		s.mustTake(t, key, claim("a", "fp"), intake.EventClaim)
	})

	t.Run("clients never share a key", func(t *testing.T) {
		key := s.newKey()
		other := intake.Key{Client: "other", ID: key.ID}
		s.mustTake(t, key, claim("a", "fp"), intake.EventClaim)
		s.mustTake(t, other, claim("b", "fp"), intake.EventClaim)
	})

	t.Run("concurrent claims on one key: exactly one is claimed", func(t *testing.T) {
		if !s.opts.Atomic {
			skip(t, "the Store does not claim atomically")
			return
		}
		key := s.newKey()
		const n = 16
		states := make([]intake.Record, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var rec intake.Record
				rec, errs[i] = s.store.Begin(ctx, key, claim(fmt.Sprint("t", i), "fp"))
				states[i] = rec
			}()
		}
		wg.Wait()
		claimed := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("Begin %d: %v", i, errs[i])
			}
			if states[i].Took == intake.EventClaim {
				claimed++
			} else if states[i].State != intake.Held || states[i].Holds() {
				t.Fatalf("Begin %d = state %v, took %v; want a claim, or held by another", i, states[i].State, states[i].Took)
			}
		}
		if claimed != 1 {
			t.Fatalf("%d of %d concurrent claims were granted, want 1", claimed, n)
		}
	})
}
