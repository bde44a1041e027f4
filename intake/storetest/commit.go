package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// commits checks Commit: the receipt kept byte for byte, and, where the
// Store fences claims, only its claim's holder committing, once.
func (s *suite) commits(t *testing.T) {
	ctx := context.Background()

	t.Run("a committed receipt is returned byte for byte with its fingerprint", func(t *testing.T) {
		key := s.newKey()
		c := claim("a", "fp-a")
		s.mustTake(t, key, c, intake.EventClaim)
		body := `{"orderId":"1","symbol":"ü 😀 \u2028"}`
		s.mustCommit(t, key, c, receipt(body, "fp-a"))
		for _, rec := range []intake.Record{s.mustLookup(t, key, intake.Stored), s.mustBegin(t, key, claim("b", "fp-b"), intake.Stored)} {
			if string(rec.Body) != body || rec.Fingerprint != "fp-a" {
				t.Fatalf("got %q %q, want %q fp-a", rec.Body, rec.Fingerprint, body)
			}
		}
	})

	t.Run("a stored outcome's expiry is told exactly when the Lifecycle says so", func(t *testing.T) {
		key, kept := s.newKey(), s.newKey()
		c := claim("a", "fp")
		before := s.now()
		s.mustTake(t, key, c, intake.EventClaim)
		s.mustCommit(t, key, c, receipt("r", "fp"))
		after := s.now()
		// A claim kept past its TTL keeps its outcome as long (intake.Claim.KeepUntil).
		long := claim("a", "fp")
		long.KeepUntil = before.Add(2 * time.Hour).Truncate(time.Millisecond)
		s.mustTake(t, kept, long, intake.EventClaim)
		s.mustCommit(t, kept, long, receipt("r", "fp"))
		told := []intake.Record{s.mustLookup(t, key, intake.Stored), s.mustBegin(t, key, claim("b", "fp"), intake.Stored)}
		toldKept := []intake.Record{s.mustLookup(t, kept, intake.Stored), s.mustBegin(t, kept, claim("b", "fp"), intake.Stored)}
		if !s.store.Lifecycle().TellsExpiry {
			for _, rec := range append(told, toldKept...) {
				if !rec.Expires.IsZero() {
					t.Fatalf("Expires = %v, but Lifecycle().TellsExpiry is false", rec.Expires)
				}
			}
			return
		}
		for _, rec := range told {
			if lo, hi := before.Add(time.Hour).Truncate(time.Millisecond), after.Add(time.Hour); rec.Expires.Before(lo) || rec.Expires.After(hi) {
				t.Errorf("Expires = %v, want the commit's time plus the TTL, within [%v, %v]", rec.Expires, lo, hi)
			}
		}
		for _, rec := range toldKept {
			if !rec.Expires.Equal(long.KeepUntil) {
				t.Errorf("Expires = %v, want the claim's KeepUntil %v", rec.Expires, long.KeepUntil)
			}
		}
	})

	t.Run("a commit retried with its token changes nothing", func(t *testing.T) {
		if !s.fenced(t) {
			return
		}
		key := s.newKey()
		c := claim("a", "fp")
		s.mustTake(t, key, c, intake.EventClaim)
		s.mustCommit(t, key, c, receipt("first", "fp"))
		s.mustCommit(t, key, c, receipt("second", "fp"))
		if rec := s.mustLookup(t, key, intake.Stored); string(rec.Body) != "first" {
			t.Fatalf("receipt = %q, want the first commit's", rec.Body)
		}
	})

	t.Run("a commit without the claim is refused", func(t *testing.T) {
		if !s.fenced(t) {
			return
		}
		key := s.newKey()
		if err := s.store.Commit(ctx, key, claim("nobody", "fp"), receipt("x", "fp")); !errors.Is(err, intake.ErrLostClaim) {
			t.Fatalf("Commit on an unclaimed key = %v, want ErrLostClaim", err)
		}
		s.mustTake(t, key, claim("a", "fp"), intake.EventClaim)
		if err := s.store.Commit(ctx, key, claim("b", "fp"), receipt("x", "fp")); !errors.Is(err, intake.ErrLostClaim) {
			t.Fatalf("Commit with another token = %v, want ErrLostClaim", err)
		}
		s.mustLookup(t, key, intake.Held)
	})
}
