// Package storetest checks that an intake.Store keeps the promises the
// lifecycle relies on: outcomes returned byte for byte, claims that hold
// their key for their lease, order ids kept once an order may have reached
// the gateway, and outcomes that expire and are then never served. Every
// Store runs it: the ledger in memory and in workerd, KV's in memory.
// Stores that can do more say so in Options and are checked for it too:
// claims fenced by their token, and claims granted atomically.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// Options says what the Store under test can do beyond what every Store
// must, and how its time passes.
type Options struct {
	// Fenced: the Store tells claims apart by their token. It refuses a
	// Commit whose claim no longer holds the key, lets only a claim's
	// holder release it, and treats a call repeated with a token as done.
	// KV cannot: a claim there is a marker anyone may overwrite.
	Fenced bool
	// Atomic: of concurrent claims on one key exactly one is granted.
	Atomic bool
	// Short is the shortest lease and TTL the Store accepts; the checks
	// that let time pass use it, so a real clock waits as little as it can.
	Short time.Duration
	// Now is the Store's clock; nil is the wall clock.
	Now func() time.Time
	// Advance lets d pass: a fake clock's step, or a real sleep. Nil skips
	// the checks that let time pass.
	Advance func(d time.Duration)
}

// Run checks s. Keys it uses start with prefix, so that runs against a
// persistent store do not collide.
func Run(t *testing.T, s intake.Store, prefix string, opts Options) {
	advance := opts.Advance
	pastShort := opts.Short + opts.Short/5
	// fenced skips t unless the Store fences claims; the caller returns
	// on false (see skip).
	fenced := func(t *testing.T) bool {
		t.Helper()
		if !opts.Fenced {
			skip(t, "the Store does not fence claims")
		}
		return opts.Fenced
	}
	ctx := context.Background()
	n := 0
	newKey := func() intake.Key {
		n++
		return intake.Key{Client: "suite", ID: fmt.Sprintf("%s%d-%d", prefix, time.Now().UnixNano(), n)}
	}
	claim := func(token, fp string) intake.Claim {
		return intake.Claim{Token: token, Fingerprint: fp, Lease: time.Minute}
	}
	receipt := func(body, fp string) intake.Result {
		return intake.Result{Body: []byte(body), Fingerprint: fp, TTL: time.Hour}
	}
	mustBegin := func(t *testing.T, key intake.Key, c intake.Claim, want intake.State) intake.Record {
		t.Helper()
		rec, err := s.Begin(ctx, key, c)
		if err != nil {
			t.Fatalf("Begin(%s): %v", c.Token, err)
		}
		if rec.State != want {
			t.Fatalf("Begin(%s) state = %v, want %v", c.Token, rec.State, want)
		}
		return rec
	}
	mustLookup := func(t *testing.T, key intake.Key, want intake.State) intake.Record {
		t.Helper()
		rec, err := s.Lookup(ctx, key)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		if rec.State != want {
			t.Fatalf("Lookup state = %v, want %v", rec.State, want)
		}
		return rec
	}
	mustCommit := func(t *testing.T, key intake.Key, c intake.Claim, r intake.Result) {
		t.Helper()
		if err := s.Commit(ctx, key, c, r); err != nil {
			t.Fatalf("Commit(%s): %v", c.Token, err)
		}
	}

	t.Run("an unknown key is absent", func(t *testing.T) {
		mustLookup(t, newKey(), intake.Absent)
	})

	t.Run("the first claim wins and later ones see it held", func(t *testing.T) {
		key := newKey()
		mustBegin(t, key, claim("a", "fp-a"), intake.Claimed)
		rec := mustBegin(t, key, claim("b", "fp-b"), intake.Held)
		if rec.Fingerprint != "fp-a" {
			t.Errorf("held fingerprint = %q, want fp-a", rec.Fingerprint)
		}
		mustLookup(t, key, intake.Held)
	})

	t.Run("a claim retried with its own token is still claimed", func(t *testing.T) {
		if !fenced(t) {
			return
		}
		key := newKey()
		mustBegin(t, key, claim("a", "fp"), intake.Claimed)
		mustBegin(t, key, claim("a", "fp"), intake.Claimed)
	})

	t.Run("a committed receipt is returned byte for byte with its fingerprint", func(t *testing.T) {
		key := newKey()
		c := claim("a", "fp-a")
		mustBegin(t, key, c, intake.Claimed)
		body := `{"orderId":"1","symbol":"ü 😀 \u2028"}`
		mustCommit(t, key, c, receipt(body, "fp-a"))
		for _, rec := range []intake.Record{mustLookup(t, key, intake.Stored), mustBegin(t, key, claim("b", "fp-b"), intake.Stored)} {
			if string(rec.Body) != body || rec.Fingerprint != "fp-a" {
				t.Fatalf("got %q %q, want %q fp-a", rec.Body, rec.Fingerprint, body)
			}
		}
	})

	t.Run("a stored outcome's expiry is told exactly when the Lifecycle says so", func(t *testing.T) {
		now := time.Now
		if opts.Now != nil {
			now = opts.Now
		}
		key, kept := newKey(), newKey()
		c := claim("a", "fp")
		before := now()
		mustBegin(t, key, c, intake.Claimed)
		mustCommit(t, key, c, receipt("r", "fp"))
		after := now()
		// A claim kept past its TTL keeps its outcome as long (intake.Claim.KeepUntil).
		long := claim("a", "fp")
		long.KeepUntil = before.Add(2 * time.Hour).Truncate(time.Millisecond)
		mustBegin(t, kept, long, intake.Claimed)
		mustCommit(t, kept, long, receipt("r", "fp"))
		told := []intake.Record{mustLookup(t, key, intake.Stored), mustBegin(t, key, claim("b", "fp"), intake.Stored)}
		toldKept := []intake.Record{mustLookup(t, kept, intake.Stored), mustBegin(t, kept, claim("b", "fp"), intake.Stored)}
		if !s.Lifecycle().TellsExpiry {
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
		if !fenced(t) {
			return
		}
		key := newKey()
		c := claim("a", "fp")
		mustBegin(t, key, c, intake.Claimed)
		mustCommit(t, key, c, receipt("first", "fp"))
		mustCommit(t, key, c, receipt("second", "fp"))
		if rec := mustLookup(t, key, intake.Stored); string(rec.Body) != "first" {
			t.Fatalf("receipt = %q, want the first commit's", rec.Body)
		}
	})

	t.Run("a commit without the claim is refused", func(t *testing.T) {
		if !fenced(t) {
			return
		}
		key := newKey()
		if err := s.Commit(ctx, key, claim("nobody", "fp"), receipt("x", "fp")); !errors.Is(err, intake.ErrLostClaim) {
			t.Fatalf("Commit on an unclaimed key = %v, want ErrLostClaim", err)
		}
		mustBegin(t, key, claim("a", "fp"), intake.Claimed)
		if err := s.Commit(ctx, key, claim("b", "fp"), receipt("x", "fp")); !errors.Is(err, intake.ErrLostClaim) {
			t.Fatalf("Commit with another token = %v, want ErrLostClaim", err)
		}
		mustLookup(t, key, intake.Held)
	})

	t.Run("release frees the key only for its holder", func(t *testing.T) {
		if !fenced(t) {
			return
		}
		key := newKey()
		mustBegin(t, key, claim("a", "fp"), intake.Claimed)
		if err := s.Release(ctx, key, claim("b", "fp")); err != nil {
			t.Fatalf("Release by another: %v", err)
		}
		mustLookup(t, key, intake.Held)
		if err := s.Release(ctx, key, claim("a", "fp")); err != nil {
			t.Fatalf("Release: %v", err)
		}
		mustLookup(t, key, intake.Absent)
		mustBegin(t, key, claim("b", "fp"), intake.Claimed)
	})

	t.Run("release leaves a receipt alone", func(t *testing.T) {
		key := newKey()
		c := claim("a", "fp")
		mustBegin(t, key, c, intake.Claimed)
		mustCommit(t, key, c, receipt("r", "fp"))
		if err := s.Release(ctx, key, c); err != nil {
			t.Fatalf("Release: %v", err)
		}
		mustLookup(t, key, intake.Stored)
	})

	t.Run("clients never share a key", func(t *testing.T) {
		key := newKey()
		other := intake.Key{Client: "other", ID: key.ID}
		mustBegin(t, key, claim("a", "fp"), intake.Claimed)
		mustBegin(t, other, claim("b", "fp"), intake.Claimed)
	})

	t.Run("concurrent claims on one key: exactly one is claimed", func(t *testing.T) {
		if !opts.Atomic {
			skip(t, "the Store does not claim atomically")
			return
		}
		key := newKey()
		const n = 16
		states := make([]intake.State, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var rec intake.Record
				rec, errs[i] = s.Begin(ctx, key, claim(fmt.Sprint("t", i), "fp"))
				states[i] = rec.State
			}()
		}
		wg.Wait()
		claimed := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("Begin %d: %v", i, errs[i])
			}
			if states[i] == intake.Claimed {
				claimed++
			} else if states[i] != intake.Held {
				t.Fatalf("Begin %d state = %v, want Claimed or Held", i, states[i])
			}
		}
		if claimed != 1 {
			t.Fatalf("%d of %d concurrent claims were granted, want 1", claimed, n)
		}
	})

	// Claims for orders that reach a gateway keep their order id
	// (KeepUntil), an hour past the Store's clock.
	accepted := time.UnixMilli(1_767_323_045_678)
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	sent := func(token, fp, orderID string) intake.Claim {
		return intake.Claim{Token: token, Fingerprint: fp, OrderID: orderID, AcceptedAt: accepted, Lease: time.Minute, KeepUntil: now().Add(time.Hour)}
	}
	wantOrderID := func(t *testing.T, rec intake.Record, orderID string) {
		t.Helper()
		if rec.OrderID != orderID || (orderID != "" && !rec.AcceptedAt.Equal(accepted)) {
			t.Fatalf("order id %q at %v, want %q at %v", rec.OrderID, rec.AcceptedAt, orderID, accepted)
		}
	}

	t.Run("a released sent claim leaves the key open with its order id", func(t *testing.T) {
		key := newKey()
		c := sent("a", "fp", "order-1")
		if rec := mustBegin(t, key, c, intake.Claimed); rec.OrderID != "" {
			t.Fatalf("a new claim came back with order id %q, want its own (none returned)", rec.OrderID)
		}
		wantOrderID(t, mustLookup(t, key, intake.Held), "order-1")
		c.Sent = true
		if err := s.Release(ctx, key, c); err != nil {
			t.Fatalf("Release: %v", err)
		}
		wantOrderID(t, mustLookup(t, key, intake.Open), "order-1")

		t.Run("another order cannot take it", func(t *testing.T) {
			wantOrderID(t, mustBegin(t, key, sent("b", "fp-other", "order-2"), intake.Open), "order-1")
		})
		t.Run("the same order takes it over with the order id", func(t *testing.T) {
			retry := sent("c", "fp", "order-3")
			wantOrderID(t, mustBegin(t, key, retry, intake.Claimed), "order-1")
			mustLookup(t, key, intake.Held)
			mustCommit(t, key, retry, intake.Result{Body: []byte("rejected"), Rejected: true, Fingerprint: "fp", TTL: time.Hour})
			if rec := mustLookup(t, key, intake.Stored); !rec.Rejected || string(rec.Body) != "rejected" {
				t.Fatalf("stored %q rejected %v, want the rejection", rec.Body, rec.Rejected)
			}
		})
	})

	t.Run("a released claim that was never sent frees the key", func(t *testing.T) {
		key := newKey()
		c := sent("a", "fp", "order-1")
		mustBegin(t, key, c, intake.Claimed)
		if err := s.Release(ctx, key, c); err != nil {
			t.Fatalf("Release: %v", err)
		}
		mustLookup(t, key, intake.Absent)
	})

	t.Run("a taken-over claim released unsent keeps the earlier order id", func(t *testing.T) {
		if !fenced(t) {
			return
		}
		// The takeover's answer was lost, so its holder never learnt the
		// order id it must use; its release must not forget it.
		key := newKey()
		first := sent("a", "fp", "order-1")
		mustBegin(t, key, first, intake.Claimed)
		first.Sent = true
		if err := s.Release(ctx, key, first); err != nil {
			t.Fatalf("Release: %v", err)
		}
		lost := sent("b", "fp", "order-2")
		mustBegin(t, key, lost, intake.Claimed)
		if err := s.Release(ctx, key, lost); err != nil {
			t.Fatalf("Release: %v", err)
		}
		wantOrderID(t, mustLookup(t, key, intake.Open), "order-1")
	})

	t.Run("leases and expiry", func(t *testing.T) {
		if advance == nil {
			skip(t, "time cannot pass here")
			return
		}
		// One wait serves every key here, so a real clock waits once.
		taken, slow, expiring, kept := newKey(), newKey(), newKey(), newKey()
		short := intake.Claim{Token: "a", Fingerprint: "fp", Lease: opts.Short}
		mustBegin(t, taken, short, intake.Claimed)
		mustBegin(t, slow, short, intake.Claimed)
		mustBegin(t, expiring, claim("a", "fp"), intake.Claimed)
		mustCommit(t, expiring, claim("a", "fp"), intake.Result{Body: []byte("old"), Fingerprint: "fp", TTL: opts.Short})
		dead := sent("a", "fp", "order-1")
		dead.Lease = opts.Short
		mustBegin(t, kept, dead, intake.Claimed)
		advance(pastShort)

		t.Run("a dead holder's sent order keeps its id past the lease", func(t *testing.T) {
			wantOrderID(t, mustLookup(t, kept, intake.Open), "order-1")
			wantOrderID(t, mustBegin(t, kept, sent("b", "fp", "order-2"), intake.Claimed), "order-1")
		})

		t.Run("an expired claim is taken over and its holder's commit refused", func(t *testing.T) {
			mustLookup(t, taken, intake.Absent)
			mustBegin(t, taken, claim("b", "fp"), intake.Claimed)
			if err := s.Commit(ctx, taken, short, receipt("late", "fp")); opts.Fenced && !errors.Is(err, intake.ErrLostClaim) {
				t.Fatalf("commit after the takeover = %v, want ErrLostClaim", err)
			}
			mustCommit(t, taken, claim("b", "fp"), receipt("new", "fp"))
			if rec := mustLookup(t, taken, intake.Stored); string(rec.Body) != "new" {
				t.Fatalf("receipt = %q, want the new holder's", rec.Body)
			}
		})

		t.Run("a slow holder whose key nobody took over still commits", func(t *testing.T) {
			mustCommit(t, slow, short, receipt("slow", "fp"))
			mustLookup(t, slow, intake.Stored)
		})

		t.Run("an expired receipt is never served and its key is new again", func(t *testing.T) {
			mustLookup(t, expiring, intake.Absent)
			rec := mustBegin(t, expiring, claim("b", "fp"), intake.Claimed)
			if rec.Body != nil {
				t.Fatalf("Begin after expiry returned receipt %q", rec.Body)
			}
		})
	})
}
