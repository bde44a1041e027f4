package intake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
)

// beforeResolverBegin runs before, once, ahead of the first Begin an
// operator's resolve makes: what another request did between the
// resolve's read of the key and its claim.
type beforeResolverBegin struct {
	intake.Store
	before func()
}

func (s *beforeResolverBegin) Begin(ctx context.Context, k intake.Key, c intake.Claim) (intake.Record, error) {
	if f := s.before; f != nil && c.By == intake.RoleResolver {
		s.before = nil
		f()
	}
	return s.Store.Begin(ctx, k, c)
}

// TestAResolveRefusedOnceItsClaimHoldsTheKeyGivesItBackAsItWas: the
// resolve's read found the key held by a request in flight, which then
// left it open, and the resolve's claim took it over: only then can it
// see that the key holds another order id than the operator named, or no
// order at all. It stores nothing, calls nothing, and gives the key back
// exactly as the request left it: its order id, attempts and due time.
func TestAResolveRefusedOnceItsClaimHoldsTheKeyGivesItBackAsItWas(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		withOrder bool
		res       intake.Resolution
		want      error
	}{
		{"another order id", true, intake.Resolution{Status: order.StatusAccepted, OrderID: "order-seen"}, intake.ErrPrecondition},
		{"no order", false, intake.Resolution{Status: order.StatusAccepted}, intake.ErrNoOrder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
				o := parsedValid(t)
				inFlight := intake.Claim{Token: "in-flight", Fingerprint: o.Fingerprint(), OrderID: "order-now", AcceptedAt: acceptedAt,
					Lease: config.DefaultPendingTTL, KeepUntil: acceptedAt.Add(keepWindow)}
				if tc.withOrder {
					inFlight.Order = o
				}
				if rec, err := e.store.Begin(ctx, deskKey, inFlight); err != nil || rec.Took != intake.EventClaim {
					t.Fatalf("the request's Begin = %+v, %v; want a claim", rec, err)
				}
				var left intake.Record
				hooked := &beforeResolverBegin{Store: e.store, before: func() {
					// The request's call ended without an answer: the key is
					// open, due after the backoff.
					c := inFlight
					c.Stage, c.Attempts, c.NextAttempt = intake.StageSent, 1, e.clock.Now().Add(intake.SettleBackoff(1))
					if err := e.store.Release(ctx, deskKey, c); err != nil {
						t.Fatal(err)
					}
					var err error
					if left, err = e.store.Lookup(ctx, deskKey); err != nil || left.State != intake.Open {
						t.Fatalf("the request left the key %+v, %v; want it open", left, err)
					}
				}}
				admin := intake.NewAdmin(intake.New(hooked, e.opts), e.adminStore(t))
				if _, err := admin.Resolve(ctx, deskKey, tc.res); !errors.Is(err, tc.want) {
					t.Fatalf("Resolve = %v, want %v", err, tc.want)
				}
				if hooked.before != nil {
					t.Fatal("the resolve made no claim: the refusal came from its read")
				}
				after, err := e.store.Lookup(ctx, deskKey)
				if err != nil || after.State != intake.Open || after.OrderID != left.OrderID || after.HasOrder != left.HasOrder ||
					after.Attempts != left.Attempts || after.GiveUp != left.GiveUp || !after.NextAttempt.Equal(left.NextAttempt) {
					t.Errorf("after the refused resolve the key is %+v, %v; want it as the request left it: %+v", after, err, left)
				}
				if n := len(e.g.placements()); n != 0 {
					t.Errorf("gateway calls = %d, want none", n)
				}
			})
		})
	}
}

// TestAResolveOfAKeyKVHoldsOpenWithoutItsOrderWritesNothing: during the
// migration, the resolve's read of KV found a request of an older
// version in flight there, which then left the key open with its order
// id but not its order, so the adoption takes nothing. The resolve tells
// the operator the key holds no order (no receipt can be built for it)
// and writes nothing, in the ledger or in KV; one that names another
// order id is told so, as the read before its claim would tell it.
func TestAResolveOfAKeyKVHoldsOpenWithoutItsOrderWritesNothing(t *testing.T) {
	t.Run("no order", func(t *testing.T) {
		resolveKVOpenWithoutOrder(t, intake.Resolution{Status: order.StatusAccepted}, intake.ErrNoOrder)
	})
	t.Run("another order id", func(t *testing.T) {
		resolveKVOpenWithoutOrder(t, intake.Resolution{Status: order.StatusAccepted, OrderID: "order-other"}, intake.ErrPrecondition)
	})
}

func resolveKVOpenWithoutOrder(t *testing.T, res intake.Resolution, want error) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	ns := kv.NewMemoryNamespace()
	ns.Now = clock.Now
	recording := &kvtest.Recording{Namespace: ns}
	oldStore := kv.NewStore(recording, clock.Now)
	o := parsedValid(t)
	older := intake.Claim{Token: "older", Fingerprint: o.Fingerprint(), OrderID: "order-old", AcceptedAt: acceptedAt,
		Lease: config.DefaultPendingTTL, KeepUntil: acceptedAt.Add(keepWindow)}
	if rec, err := oldStore.Begin(ctx, key("k"), older); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("the older version's Begin = %+v, %v; want a claim", rec, err)
	}
	var writes int
	fb := &scriptedFallback{Fallback: oldStore, step: map[int]func() error{
		1: func() error { // after the resolve's read, which found the claim
			older.Stage = intake.StageSent
			if err := oldStore.Release(ctx, key("k"), older); err != nil {
				t.Fatal(err)
			}
			writes = len(recording.Writes())
			return nil
		},
	}}
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	g := &scriptedGateway{clock: clock}
	admin := intake.NewAdmin(intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: g, Now: clock.Now, Fallback: fb, FallbackUntil: acceptedAt.Add(48 * time.Hour)}), mem)
	if _, err := admin.Resolve(ctx, key("k"), res); !errors.Is(err, want) {
		t.Fatalf("Resolve = %v, want %v", err, want)
	}
	if fb.n < 3 {
		t.Fatalf("the resolve read KV %d times; want its read, the adoption's and its own again", fb.n)
	}
	if n := mem.Rows(); n != 0 {
		t.Errorf("the ledger holds %d rows after the resolve, want none", n)
	}
	if w := recording.Writes()[writes:]; len(w) != 0 {
		t.Errorf("the resolve wrote %v to KV, want nothing", w)
	}
	if rec, err := oldStore.Lookup(ctx, key("k")); err != nil || rec.State != intake.Open || rec.OrderID != "order-old" {
		t.Errorf("KV holds %+v, %v; want the key open with order-old, as it was", rec, err)
	}
	if n := len(g.placements()); n != 0 {
		t.Errorf("gateway calls = %d, want none", n)
	}
}

// TestAPurgeDuringTheMigrationNamingAnotherOrderIDPurgesNothing: during
// the migration, a purge naming another order id than the ledger's
// stored outcome is refused before it touches either store: the ledger
// keeps its receipt, and KV its claim.
func TestAPurgeDuringTheMigrationNamingAnotherOrderIDPurgesNothing(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	recording := &kvtest.Recording{Namespace: old}
	oldStore := kv.NewStore(recording, clock.Now)
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: &scriptedGateway{clock: clock}, Now: clock.Now, Fallback: oldStore, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	out, err := svc.Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil || out.OrderID != "order-x" {
		t.Fatalf("the retry that settles KV's order in the ledger = %s, %v; want order-x", out.OrderID, err)
	}
	kvBefore, err := oldStore.Lookup(ctx, key("k"))
	if err != nil || kvBefore.State != intake.Open {
		t.Fatalf("KV holds %v, %v; want KV mode's claim", kvBefore.State, err)
	}
	writes := len(recording.Writes())
	rec, err := intake.NewAdmin(svc, mem).Purge(ctx, key("k"), "order-y")
	if !errors.Is(err, intake.ErrPrecondition) || intake.OrderIDOf(rec) != "order-x" {
		t.Fatalf("Purge naming order-y = %s, %v; want ErrPrecondition, the key holding order-x", intake.OrderIDOf(rec), err)
	}
	if got, err := mem.Lookup(ctx, key("k")); err != nil || got.State != intake.Stored || string(got.Body) != string(out.Receipt) {
		t.Errorf("the ledger holds %v %s, %v; want its receipt %s", got.State, got.Body, err, out.Receipt)
	}
	if w := recording.Writes()[writes:]; len(w) != 0 {
		t.Errorf("the refused purge wrote %v to KV, want nothing", w)
	}
	if after, err := oldStore.Lookup(ctx, key("k")); err != nil || after.State != kvBefore.State || after.OrderID != kvBefore.OrderID {
		t.Errorf("KV holds %v %s, %v; want it as it was", after.State, after.OrderID, err)
	}
}
