package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// suite is one run of the checks over one Store: each file of this package
// holds the checks of one concern as a method of it.
type suite struct {
	store  intake.Store
	prefix string
	opts   Options
	// now is the Store's clock: Options.Now, or the wall clock.
	now func() time.Time
	// keys counts the keys newKey has made.
	keys int
}

func newSuite(s intake.Store, prefix string, opts Options) *suite {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &suite{store: s, prefix: prefix, opts: opts, now: now}
}

// accepted is when the orders of sent claims were accepted.
var accepted = time.UnixMilli(1_767_323_045_678)

// fenced skips t unless the Store fences claims; the caller returns on
// false (see skip).
func (s *suite) fenced(t *testing.T) bool {
	t.Helper()
	if !s.opts.Fenced {
		skip(t, "the Store does not fence claims")
	}
	return s.opts.Fenced
}

// pastShort is a little more than Options.Short: long enough for a lease
// or TTL of Short to have ended.
func (s *suite) pastShort() time.Duration {
	return s.opts.Short + s.opts.Short/5
}

// newKey returns a key no check has used.
func (s *suite) newKey() intake.Key {
	s.keys++
	return intake.Key{Client: "suite", ID: fmt.Sprintf("%s%d-%d", s.prefix, time.Now().UnixNano(), s.keys)}
}

// claim is a claim with a lease of a minute, for an order that never
// reaches a gateway.
func claim(token, fp string) intake.Claim {
	return intake.Claim{Token: token, Fingerprint: fp, Lease: time.Minute}
}

// receipt is a receipt kept for an hour.
func receipt(body, fp string) intake.Result {
	return intake.Result{Body: []byte(body), Fingerprint: fp, TTL: time.Hour}
}

// sent is a claim for an order that may reach a gateway: it keeps its
// order id (KeepUntil) an hour past the Store's clock.
func (s *suite) sent(token, fp, orderID string) intake.Claim {
	return intake.Claim{Token: token, Fingerprint: fp, OrderID: orderID, AcceptedAt: accepted, Lease: time.Minute, KeepUntil: s.now().Add(time.Hour)}
}

// wantOrderID fails t unless rec keeps orderID, accepted at accepted, or
// keeps none when orderID is "".
func wantOrderID(t *testing.T, rec intake.Record, orderID string) {
	t.Helper()
	if rec.OrderID != orderID || (orderID != "" && !rec.AcceptedAt.Equal(accepted)) {
		t.Fatalf("order id %q at %v, want %q at %v", rec.OrderID, rec.AcceptedAt, orderID, accepted)
	}
}

// mustBegin has c's Begin leave key alone, showing want.
func (s *suite) mustBegin(t *testing.T, key intake.Key, c intake.Claim, want intake.State) intake.Record {
	t.Helper()
	rec := s.begin(t, key, c)
	if rec.State != want || rec.Holds() {
		t.Fatalf("Begin(%s) = state %v, took %v; want %v, untaken", c.Token, rec.State, rec.Took, want)
	}
	return rec
}

// mustTake has c's Begin take key, by event want: a claim, or a takeover.
func (s *suite) mustTake(t *testing.T, key intake.Key, c intake.Claim, want intake.Event) intake.Record {
	t.Helper()
	rec := s.begin(t, key, c)
	if rec.Took != want || rec.State != intake.Held {
		t.Fatalf("Begin(%s) = state %v, took %v; want held, took %v", c.Token, rec.State, rec.Took, want)
	}
	return rec
}

func (s *suite) begin(t *testing.T, key intake.Key, c intake.Claim) intake.Record {
	t.Helper()
	rec, err := s.store.Begin(context.Background(), key, c)
	if err != nil {
		t.Fatalf("Begin(%s): %v", c.Token, err)
	}
	checkPhase(t, rec)
	return rec
}

func (s *suite) mustLookup(t *testing.T, key intake.Key, want intake.State) intake.Record {
	t.Helper()
	rec, err := s.store.Lookup(context.Background(), key)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	if rec.State != want {
		t.Fatalf("Lookup state = %v, want %v", rec.State, want)
	}
	checkPhase(t, rec)
	return rec
}

func (s *suite) mustCommit(t *testing.T, key intake.Key, c intake.Claim, r intake.Result) {
	t.Helper()
	if err := s.store.Commit(context.Background(), key, c, r); err != nil {
		t.Fatalf("Commit(%s): %v", c.Token, err)
	}
}
