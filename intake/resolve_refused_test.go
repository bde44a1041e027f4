package intake_test

import (
	"context"
	"errors"
	"testing"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
)

// TestARefusedResolveLeavesTheKeysNextAttempt: a resolve refused with 409
// order_mismatch ("Nothing was done") or no_order must leave the key as it
// was, its settler's next attempt included: over the ledger it made the
// key due at once, so the settler calls the OMS before its backoff ends.
func TestARefusedResolveLeavesTheKeysNextAttempt(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		leaveUnknown(t, e)
		admin, _ := e.admin(t)
		before, err := admin.Inspect(ctx, deskKey)
		if err != nil || before.NextAttempt.IsZero() {
			t.Fatalf("Inspect = %+v, %v; want an unknown key with its next attempt", before, err)
		}
		if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted, OrderID: "another"}); !errors.Is(err, intake.ErrPrecondition) {
			t.Fatalf("Resolve of another order id = %v, want ErrPrecondition", err)
		}
		after, err := admin.Inspect(ctx, deskKey)
		if err != nil || after.State != before.State || after.Attempts != before.Attempts || after.GiveUp != before.GiveUp ||
			!after.NextAttempt.Equal(before.NextAttempt) {
			t.Errorf("after the refused resolve the key is %v attempts %d due %v; want as before: %v attempts %d due %v",
				after.State, after.Attempts, after.NextAttempt, before.State, before.Attempts, before.NextAttempt)
		}
	})
}

// TestARefusedResolveClaimsNothing: a resolve refused for what a read
// of the key shows (another order id, or its outcome final) claims
// nothing: bad input changes nothing, and an operator's claim, even
// given back at once, holds the key from its client's retry meanwhile,
// and for its whole lease should the give-back fail.
func TestARefusedResolveClaimsNothing(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		leaveUnknown(t, e)
		counted := &countingBegins{Store: e.store}
		admin := intake.NewAdmin(intake.New(counted, e.opts), e.adminStore(t))
		if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted, OrderID: "another"}); !errors.Is(err, intake.ErrPrecondition) {
			t.Fatalf("Resolve of another order id = %v, want ErrPrecondition", err)
		}
		if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted}); err != nil {
			t.Fatalf("Resolve = %v", err)
		}
		begins := counted.begins
		if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted}); !errors.Is(err, intake.ErrOutcomeFinal) {
			t.Fatalf("Resolve of a final outcome = %v, want ErrOutcomeFinal", err)
		}
		if counted.begins != begins || begins != 1 {
			t.Errorf("the resolves claimed %d times, then %d; want once, for the one that stored the answer", begins, counted.begins)
		}
	})
}

// countingBegins is a Store that counts its Begin calls: each may write
// a claim.
type countingBegins struct {
	intake.Store
	begins int
}

func (c *countingBegins) Begin(ctx context.Context, key intake.Key, claim intake.Claim) (intake.Record, error) {
	c.begins++
	return c.Store.Begin(ctx, key, claim)
}

// TestAResolveOfAFinalKeyBesideARequestOfTheInstanceSaysFinal: a resolve
// of a key whose outcome is stored says so even while a request of the
// same instance is on the key (a client's retry, to be replayed): the
// read that refuses it comes before the instance's in-flight set, which
// said in progress (found by the simulator, -rapid.seed=1070579, ledger).
func TestAResolveOfAFinalKeyBesideARequestOfTheInstanceSaysFinal(t *testing.T) {
	ctx := context.Background()
	mem := ledger.NewMemoryStore()
	clock := &fakeClock{now: acceptedAt}
	mem.Now = clock.Now
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: &scriptedGateway{clock: clock}, Now: clock.Now, CachedReceipts: -1})
	if _, err := svc.Submit(ctx, deskKey, []byte(validBody), ""); err != nil {
		t.Fatal(err)
	}
	admin := intake.NewAdmin(svc, mem)
	var resolved error
	asked := false
	mem.RoundTrip = func(ctx context.Context, method string, apply func()) error {
		if method == "claim" && !asked {
			// The retry holds the key in the instance's in-flight set.
			asked = true
			_, resolved = admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted})
		}
		apply()
		return nil
	}
	if out, err := svc.Submit(ctx, deskKey, []byte(validBody), ""); err != nil || !out.Replayed {
		t.Fatalf("the retry = %+v, %v; want its receipt replayed", out, err)
	}
	if !asked || !errors.Is(resolved, intake.ErrOutcomeFinal) {
		t.Errorf("Resolve beside the retry (asked: %v) = %v; want ErrOutcomeFinal", asked, resolved)
	}
}

// TestAResolveWhoseReadFailsSaysStorageUnavailable: a resolve whose read
// before its claim fails knows nothing of the key: it says storage is
// unavailable, and claims nothing (the simulator found it told a key
// shown final in progress, from its instance's in-flight set,
// -rapid.seed=1948483101, ledger).
func TestAResolveWhoseReadFailsSaysStorageUnavailable(t *testing.T) {
	ctx := context.Background()
	mem := ledger.NewMemoryStore()
	clock := &fakeClock{now: acceptedAt}
	mem.Now = clock.Now
	counted := &countingBegins{Store: mem}
	svc := intake.New(counted, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: &scriptedGateway{clock: clock}, Now: clock.Now})
	if _, err := svc.Submit(ctx, deskKey, []byte(validBody), ""); err != nil {
		t.Fatal(err)
	}
	begins := counted.begins
	mem.RoundTrip = func(_ context.Context, method string, apply func()) error {
		if method == "lookup" {
			return errors.New("the object is unreachable")
		}
		apply()
		return nil
	}
	if _, err := intake.NewAdmin(svc, mem).Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted}); !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Errorf("Resolve whose read failed = %v, want ErrStorageUnavailable", err)
	}
	if counted.begins != begins {
		t.Errorf("the resolve whose read failed began %d claims, want none", counted.begins-begins)
	}
}
