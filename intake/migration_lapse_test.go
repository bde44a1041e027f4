package intake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
)

// TestAnAdoptionWhoseReleaseOutlastedItsLeaseIsNotReportedAdopted:
// the adoption's second read of KV comes back just inside the lease, but
// its release reaches the object after the tentative lease ended: the
// object has freed the key, and the release changes nothing. Adopt said
// it adopted the key, and the Cron logged kv_adopted (found by a review).
func TestAnAdoptionWhoseReleaseOutlastedItsLeaseIsNotReportedAdopted(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	hooked := &hookedFallback{Store: kv.NewStore(old, clock.Now)}
	hooked.afterLookup = func() {
		hooked.afterLookup = func() { clock.Advance(config.DefaultPendingTTL - 2*time.Second) }
	}
	mem.RoundTrip = func(_ context.Context, method string, apply func()) error {
		if method == "release" {
			clock.Advance(3 * time.Second) // a slow RPC
		}
		apply()
		return nil
	}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: &idRecorder{answer: func(int, intake.Placement) error { return nil }}, Now: clock.Now,
		Fallback: hooked, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	adopted, err := svc.Adopt(ctx, key("k"))
	rec, lerr := mem.Lookup(ctx, key("k"))
	if lerr != nil {
		t.Fatal(lerr)
	}
	if adopted && rec.State != intake.Open {
		t.Fatalf("Adopt = %v, %v but the ledger holds %v: reported adopted, nothing adopted", adopted, err, rec.State)
	}
}

// TestAResolveWhoseAdoptionLapsedIsInProgress: the same slow release
// under an operator's Resolve of a key only KV holds open: its claim then
// finds the ledger empty, and the operator was told there is nothing to
// resolve, though KV still holds the key open. It is in progress: resolve
// again a moment later (found by a review).
func TestAResolveWhoseAdoptionLapsedIsInProgress(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	hooked := &hookedFallback{Store: kv.NewStore(old, clock.Now)}
	hooked.afterLookup = func() {
		hooked.afterLookup = func() { clock.Advance(config.DefaultPendingTTL - 2*time.Second) }
	}
	slow := true
	mem.RoundTrip = func(_ context.Context, method string, apply func()) error {
		if method == "release" && slow {
			slow = false
			clock.Advance(3 * time.Second)
		}
		apply()
		return nil
	}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: &idRecorder{answer: func(int, intake.Placement) error { return nil }}, Now: clock.Now,
		Fallback: hooked, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	_, err := intake.NewAdmin(svc, mem).Resolve(ctx, key("k"), intake.Resolution{Status: "accepted"})
	if rec, _ := kv.NewStore(old, clock.Now).Lookup(ctx, key("k")); rec.State != intake.Open || !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("Resolve = %v, KV holding the key %v; want in progress while KV holds it open", err, rec.State)
	}
}

// TestAnAdoptionWhoseReadMayHaveOutlastedItsLeaseLeavesTheKeyFree: the
// adoption's second read of KV comes back inside the claim's lease by the
// object's clock, but within DueSlack of its end by the isolate's: the
// claim may have lost the key before that read, which then proves nothing
// (a purge may have come between). The adoption leaves the key free, not
// open and due for the settler on that read's word; the next sweep adopts
// it if KV still holds it open.
func TestAnAdoptionWhoseReadMayHaveOutlastedItsLeaseLeavesTheKeyFree(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	hooked := &hookedFallback{Store: kv.NewStore(old, clock.Now)}
	hooked.afterLookup = func() {
		hooked.afterLookup = func() { clock.Advance(config.DefaultPendingTTL - intake.DueSlack/2) }
	}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: &idRecorder{answer: func(int, intake.Placement) error { return nil }}, Now: clock.Now,
		Fallback: hooked, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	adopted, err := svc.Adopt(ctx, key("k"))
	rec, lerr := mem.Lookup(ctx, key("k"))
	if err != nil || lerr != nil || adopted || rec.State != intake.Absent {
		t.Fatalf("Adopt = %v, %v; the ledger holds %v (%v); want nothing adopted, the key free", adopted, err, rec.State, lerr)
	}
}
