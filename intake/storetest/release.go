package storetest

import (
	"context"
	"testing"

	"github.com/edge-orders/edge-orders/intake"
)

// releases checks Release of a claim for an order that never reached a
// gateway: it frees the key, only for its holder where the Store fences
// claims, and never drops a receipt.
func (s *suite) releases(t *testing.T) {
	ctx := context.Background()

	t.Run("release frees the key only for its holder", func(t *testing.T) {
		if !s.fenced(t) {
			return
		}
		key := s.newKey()
		s.mustTake(t, key, claim("a", "fp"), intake.EventClaim)
		if err := s.store.Release(ctx, key, claim("b", "fp")); err != nil {
			t.Fatalf("Release by another: %v", err)
		}
		s.mustLookup(t, key, intake.Held)
		if err := s.store.Release(ctx, key, claim("a", "fp")); err != nil {
			t.Fatalf("Release: %v", err)
		}
		s.mustLookup(t, key, intake.Absent)
		s.mustTake(t, key, claim("b", "fp"), intake.EventClaim)
	})

	t.Run("release leaves a receipt alone", func(t *testing.T) {
		key := s.newKey()
		c := claim("a", "fp")
		s.mustTake(t, key, c, intake.EventClaim)
		s.mustCommit(t, key, c, receipt("r", "fp"))
		if err := s.store.Release(ctx, key, c); err != nil {
			t.Fatalf("Release: %v", err)
		}
		s.mustLookup(t, key, intake.Stored)
	})
}
