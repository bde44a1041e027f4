package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/workers"
)

// TestARefusalIsAnsweredOnlyOnceItsClaimIsGone: the ledger claims before
// it asks the rate limit (Claim.Admit), so a refused order's claim must go
// before its client is told it was refused. If the claim cannot be
// released, it stays, due for the settler once its lease ends, and Begin
// says the storage failed: never a refusal for an order the settler may
// yet place.
func TestARefusalIsAnsweredOnlyOnceItsClaimIsGone(t *testing.T) {
	ctx := context.Background()
	store, c := newMemory()
	now := c.now
	errRelease := errors.New("ledger: release failed")
	store.RoundTrip = func(_ context.Context, method string, apply func()) error {
		if method == "release" {
			return errRelease
		}
		apply()
		return nil
	}
	key := intake.Key{Client: "desk-a", ID: "k"}
	claim := intake.Claim{Token: "t", Fingerprint: "fp", OrderID: "o", AcceptedAt: now, Lease: time.Minute,
		KeepUntil: now.Add(time.Hour), Admit: func(context.Context) error { return intake.ErrRateLimited }}
	_, err := store.Begin(ctx, key, claim)
	if err == nil || errors.Is(err, intake.ErrRateLimited) {
		t.Fatalf("Begin with the refused claim left behind = %v, want a storage failure, not the refusal", err)
	}
	store.RoundTrip = nil
	if _, err := store.Begin(ctx, intake.Key{Client: "desk-a", ID: "other"}, claim); !errors.Is(err, intake.ErrRateLimited) {
		t.Errorf("Begin whose refused claim was released = %v, want ErrRateLimited", err)
	}
}

// TestAClaimWhoseResendWasOverloadedIsReleased: a claim's first call took
// effect and its answer was lost (retryable); the resend is answered
// overloaded, which says nothing of the first try. Begin must release
// what it may have claimed: left, the claim would hold the key for its
// lease and then be due for the settler, which would place an order the
// rate limit never admitted (found by a review).
func TestAClaimWhoseResendWasOverloadedIsReleased(t *testing.T) {
	ctx := context.Background()
	store, c := newMemory()
	now := c.now
	claims := 0
	store.RoundTrip = func(_ context.Context, method string, apply func()) error {
		if method == "claim" {
			if claims++; claims > 1 {
				return &workers.Error{Message: "overloaded", Retryable: true, Overloaded: true}
			}
			apply()
			return &workers.Error{Message: "answer lost", Retryable: true}
		}
		apply()
		return nil
	}
	key := intake.Key{Client: "desk-a", ID: "k"}
	claim := intake.Claim{Token: "t", Fingerprint: "fp", OrderID: "o", AcceptedAt: now, Lease: time.Minute,
		KeepUntil: now.Add(time.Hour), Admit: func(context.Context) error { return nil }}
	if _, err := store.Begin(ctx, key, claim); err == nil {
		t.Fatal("Begin whose answer was lost and whose resend was overloaded succeeded")
	}
	store.RoundTrip = nil
	if rec, err := store.Lookup(ctx, key); err != nil || rec.State != intake.Absent {
		t.Fatalf("after the failed Begin the key is %v, %v; want it released", rec.State, err)
	}
	c.Advance(time.Minute + time.Second)
	if keys := store.DueKeys(10); len(keys) != 0 {
		t.Fatalf("due for the settler: %v, want nothing", keys)
	}
}

// TestClientSendsNoReleaseAgainThatTheObjectAnsweredOverloaded: a release
// the object answered overloaded, at once or on retryOnce's resend, is
// not sent again by ReleaseTwice: another call only loads it more
// (docs/operating.md). A review found it sent twice, and three times. It
// runs in workerd too, built by the Worker's compiler (TestClient...):
// TinyGo's errors.As panics where the standard library's does not.
func TestClientSendsNoReleaseAgainThatTheObjectAnsweredOverloaded(t *testing.T) {
	overloaded := &workers.Error{Message: "overloaded", Retryable: true, Overloaded: true}
	lost := &workers.Error{Message: "network", Retryable: true}
	for _, tc := range []struct {
		name    string
		answers []error // the release calls' answers, in turn; nil after
		want    int
	}{
		{"overloaded at once", []error{overloaded}, 1},
		{"overloaded on the resend", []error{lost, overloaded}, 2},
		{"lost, then lost again", []error{lost, lost}, 3}, // retryOnce's resend, then ReleaseTwice's
		{"failed, with no mark", []error{errors.New("refused")}, 2},
		{"overloaded, joined to another error", []error{errors.Join(errors.New("and"), overloaded)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store, c := newMemory()
			now := c.now
			releases := 0
			store.RoundTrip = func(_ context.Context, method string, apply func()) error {
				switch method {
				case "claim":
					apply()
					return &workers.Error{Message: "claim's answer lost"} // not retryable: Begin releases
				case "release":
					releases++
					if releases <= len(tc.answers) {
						return tc.answers[releases-1]
					}
				}
				apply()
				return nil
			}
			key := intake.Key{Client: "desk-a", ID: "k"}
			claim := intake.Claim{Token: "t", Fingerprint: "fp", OrderID: "o", AcceptedAt: now, Lease: time.Minute, KeepUntil: now.Add(time.Hour)}
			if _, err := store.Begin(ctx, key, claim); err == nil {
				t.Fatal("Begin whose answer was lost succeeded")
			}
			if releases != tc.want {
				t.Fatalf("%d release calls, want %d", releases, tc.want)
			}
		})
	}
}

// TestACallWithoutATokenHoldsNoOpenKey: an open row's token is empty, and
// a commit or release that carries none (a malformed call, across
// versions) must not match it: it holds nothing.
func TestACallWithoutATokenHoldsNoOpenKey(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	key := intake.Key{Client: "desk-a", ID: "k"}
	leaveOpen(t, m, c, key, c.now.Add(time.Minute))
	if err := m.Commit(ctx, key, intake.Claim{}, intake.Result{Body: []byte(`{"x":1}`), TTL: time.Hour}); !errors.Is(err, intake.ErrLostClaim) {
		t.Errorf("a commit without a token = %v, want ErrLostClaim", err)
	}
	if err := m.Release(ctx, key, intake.Claim{}); err != nil {
		t.Errorf("a release without a token = %v, want nil, changing nothing", err)
	}
	if rec, err := m.Lookup(ctx, key); err != nil || rec.State != intake.Open {
		t.Fatalf("the key = %+v, %v; want it still open", rec, err)
	}
}
