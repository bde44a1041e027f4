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

// TestAnAdoptionOfKVsOrderIDThatFindsAnotherLeftOpenGivesItBack: a
// retry during the migration reads KV, which keeps the key open with
// order-x, and the read outlasts the retry's tentative claim, which frees
// the key. Another request (its read of KV lagged) claims the free key
// and leaves it open with its own order id. The retry's release of
// order-x changes nothing, and its claim of the key takes over the other's
// order id: it gives the key back as it was, is told in progress, and
// calls nothing, least of all with order-x; its next retry places the
// key's order id.
func TestAnAdoptionOfKVsOrderIDThatFindsAnotherLeftOpenGivesItBack(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	o := parsedValid(t)
	g := &idRecorder{answer: func(int, intake.Placement) error { return nil }}
	hooked := &hookedFallback{Store: kv.NewStore(old, clock.Now)}
	var left intake.Record
	hooked.afterLookup = func() {
		clock.Advance(config.DefaultPendingTTL + time.Second)
		other := intake.Claim{Token: "other", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-y", AcceptedAt: clock.Now(),
			Lease: config.DefaultPendingTTL, KeepUntil: clock.Now().Add(keepWindow)}
		if rec, err := mem.Begin(ctx, key("k"), other); err != nil || rec.Took != intake.EventClaim {
			t.Fatalf("the other's Begin = %+v, %v; want a claim: the retry's tentative lease ended", rec, err)
		}
		other.Stage, other.Attempts, other.NextAttempt = intake.StageSent, 1, clock.Now().Add(intake.SettleBackoff(1))
		if err := mem.Release(ctx, key("k"), other); err != nil {
			t.Fatal(err)
		}
		var err error
		if left, err = mem.Lookup(ctx, key("k")); err != nil || left.State != intake.Open || left.OrderID != "order-y" {
			t.Fatalf("the other left %+v, %v; want the key open with order-y", left, err)
		}
	}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: g, Now: clock.Now, Fallback: hooked, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	if _, err := svc.Submit(ctx, key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("Submit = %v, want ErrInProgress", err)
	}
	if ids := g.orderIDs(); len(ids) != 0 {
		t.Fatalf("the gateway saw %v, want no call", ids)
	}
	after, err := mem.Lookup(ctx, key("k"))
	if err != nil || after.State != intake.Open || after.OrderID != left.OrderID || !after.AcceptedAt.Equal(left.AcceptedAt) ||
		after.Attempts != left.Attempts || after.GiveUp != left.GiveUp || !after.NextAttempt.Equal(left.NextAttempt) {
		t.Errorf("after the retry the key is %+v, %v; want it as the other left it: %+v", after, err, left)
	}
	out, err := svc.Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil || out.OrderID != "order-y" {
		t.Fatalf("the next retry = %s, %v; want the key's order-y", out.OrderID, err)
	}
	if ids := g.orderIDs(); len(ids) != 1 || ids[0] != "order-y" {
		t.Errorf("the gateway saw %v, want order-y alone", ids)
	}
}

// TestALookupWhoseCopyFromKVFailsAnswersKVsReceiptAndHoldsNothing: during
// the migration a lookup finds a receipt only in KV and copies it into
// the ledger. If the copy's commit fails, or finds its claim lost (the
// second read of KV outlasted its lease), the lookup still answers KV's
// receipt, which is stored there, without an expiry the ledger cannot
// tell, and leaves nothing held: a retry replays the receipt at once.
func TestALookupWhoseCopyFromKVFailsAnswersKVsReceiptAndHoldsNothing(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		failCommit bool
		slowRead   bool
	}{
		{"the commit fails", true, false},
		{"the claim is lost", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, old, mem, opts := receiptOnlyInKV(t)
			commits := 0
			mem.RoundTrip = func(ctx context.Context, method string, apply func()) error {
				if method == "commit" {
					commits++
					if tc.failCommit {
						return errStorage
					}
				}
				apply()
				return nil
			}
			fb := &scriptedFallback{Fallback: kv.NewStore(old, clock.Now), step: map[int]func() error{}}
			if tc.slowRead {
				fb.step[2] = func() error { clock.Advance(config.DefaultPendingTTL + time.Second); return nil }
			}
			opts.Fallback = fb
			svc := intake.New(mem, opts)
			out, err := svc.Lookup(ctx, key("kept"))
			if err != nil || string(out.Receipt) != keptReceipt || !out.Expires.IsZero() {
				t.Fatalf("Lookup = %s expires %v, %v; want KV's receipt, no expiry", out.Receipt, out.Expires, err)
			}
			if commits != 1 || fb.n != 2 {
				t.Fatalf("the copy made %d commits and %d reads of KV, want 1 and 2", commits, fb.n)
			}
			if rec, err := mem.Lookup(ctx, key("kept")); err != nil || rec.State != intake.Absent {
				t.Errorf("the ledger holds %v, %v; want nothing held", rec.State, err)
			}
			mem.RoundTrip = nil
			again, err := intake.New(mem, opts).Submit(ctx, key("kept"), []byte(validBody), "")
			if err != nil || !again.Replayed || string(again.Receipt) != keptReceipt {
				t.Errorf("a retry = %s replayed %v, %v; want KV's receipt replayed", again.Receipt, again.Replayed, err)
			}
		})
	}
}
