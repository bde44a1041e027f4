package intake_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

// beginHook runs before, once, ahead of the first Begin whose claim is at
// stage: what happened meanwhile, as a gate rather than a sleep.
type beginHook struct {
	intake.Store
	stage  intake.Stage
	before func()
	ran    bool
}

func (s *beginHook) Begin(ctx context.Context, k intake.Key, c intake.Claim) (intake.Record, error) {
	if !s.ran && c.Stage == s.stage {
		s.ran = true
		s.before()
	}
	return s.Store.Begin(ctx, k, c)
}

// TestAnAttemptThatBeganMigratingAsksTheFallbackAfterFallbackUntil: an
// attempt decides once whether it migrates. One whose tentative claim
// FallbackUntil overtook still asks KV before its gateway call, and
// takes over the order id KV keeps open: placed under the ledger's own
// order id, it would be a second order; and the limit is not asked for
// the same order again.
func TestAnAttemptThatBeganMigratingAsksTheFallbackAfterFallbackUntil(t *testing.T) {
	clock, old, mem := migrating(t)
	g := &idRecorder{answer: func(int, intake.Placement) error { return nil }}
	limits := 0
	// FallbackUntil passes while the tentative claim is on its way.
	svc := intake.New(&afterBegin{Store: mem, after: func() { clock.Advance(2 * time.Second) }}, intake.Options{
		ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g, Now: clock.Now,
		Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(time.Second),
		Limit: func(context.Context, string) (bool, error) { limits++; return true, nil }})
	out, err := svc.Submit(context.Background(), key("k"), []byte(validBody), "")
	if ids := g.orderIDs(); err != nil || out.OrderID != "order-x" || len(ids) != 1 || ids[0] != "order-x" || limits != 0 {
		t.Fatalf("Submit = %s, %v; the gateway saw %v, the limit was asked %d times; want order-x alone, and no limit", out.OrderID, err, ids, limits)
	}
}

// afterBegin runs after, once, after the first Begin returns.
type afterBegin struct {
	intake.Store
	after func()
	ran   bool
}

func (s *afterBegin) Begin(ctx context.Context, k intake.Key, c intake.Claim) (intake.Record, error) {
	rec, err := s.Store.Begin(ctx, k, c)
	if !s.ran {
		s.ran = true
		s.after()
	}
	return rec, err
}

// TestAClaimMadeFirmAfterAnotherLeftTheKeyOpenTakesItsOrderID: a
// tentative claim whose lease ran out frees the key; if another request
// then left it open with its order id (one adopted from KV, not the one
// derived here), making the first claim firm takes that key over, and its
// gateway call carries the key's order id, never a second one.
func TestAClaimMadeFirmAfterAnotherLeftTheKeyOpenTakesItsOrderID(t *testing.T) {
	clock, old, mem := migrating(t)
	ctx := context.Background()
	o, err := order.Parse([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	fresh := key("fresh") // KV holds nothing for it
	g := &idRecorder{answer: func(int, intake.Placement) error { return nil }}
	store := &beginHook{Store: mem, stage: intake.StageFirm, before: func() {
		clock.Advance(config.DefaultPendingTTL + time.Second)
		other := intake.Claim{Token: "other", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-y", AcceptedAt: clock.Now(),
			Lease: config.DefaultPendingTTL, KeepUntil: clock.Now().Add(keepWindow)}
		if rec, err := mem.Begin(ctx, fresh, other); err != nil || rec.State != intake.Claimed {
			t.Fatalf("the other's Begin = %+v, %v; want Claimed: the first claim's lease ended", rec, err)
		}
		other.Stage = intake.StageSent
		if err := mem.Release(ctx, fresh, other); err != nil {
			t.Fatal(err)
		}
	}}
	svc := intake.New(store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: g, Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(time.Hour)})
	out, err := svc.Submit(ctx, fresh, []byte(validBody), "")
	if ids := g.orderIDs(); err != nil || out.OrderID != "order-y" || len(ids) != 1 || ids[0] != "order-y" {
		t.Fatalf("Submit = %s, %v; the gateway saw %v; want order-y alone, the key's", out.OrderID, err, ids)
	}
}
