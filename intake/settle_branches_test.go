package intake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
)

// TestASettlerWhoseLeaseRanOutMidCallLeavesTheKeyToTheClientThatTookItOver:
// over the ledger, the settler's gateway call outlasts its claim's lease,
// and a client's retry takes the key over meanwhile, calls the OMS with
// the same order id and stores its receipt. The settler's answer then
// finds its claim gone: it says busy and stores nothing, and the key's
// outcome is the client's, one order id at the OMS and one receipt.
func TestASettlerWhoseLeaseRanOutMidCallLeavesTheKeyToTheClientThatTookItOver(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	g := &scriptedGateway{clock: clock}
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g, Now: clock.Now}
	g.answer(errLost)
	_, err := intake.New(mem, opts).Submit(ctx, deskKey, []byte(validBody), "")
	var u *intake.Unsettled
	if !errors.As(err, &u) {
		t.Fatalf("Submit = %v, want the outcome unknown", err)
	}
	clock.Advance(time.Minute) // due for the settler
	var clientOut intake.Outcome
	var clientErr error
	g.during = func(n int) {
		if n != 2 { // the settler's call
			return
		}
		clock.Advance(config.DefaultPendingTTL + time.Second)
		clientOut, clientErr = intake.New(mem, opts).Submit(ctx, deskKey, []byte(validBody), "")
	}
	st, err := intake.New(mem, opts).Settle(ctx, deskKey)
	if clientErr != nil || clientOut.OrderID != u.OrderID {
		t.Fatalf("the client's retry = %s, %v; want the receipt of %s", clientOut.OrderID, clientErr, u.OrderID)
	}
	if err != nil || st.Result != intake.SettleBusy || st.Final {
		t.Errorf("the settler = %+v, %v; want it busy: the key is the client's", st, err)
	}
	rec, err := mem.Lookup(ctx, deskKey)
	if err != nil || rec.State != intake.Stored || string(rec.Body) != string(clientOut.Receipt) {
		t.Errorf("the ledger holds %v %s, %v; want the client's receipt %s", rec.State, rec.Body, err, clientOut.Receipt)
	}
	if id := wantOneOrderIDOf(t, g.placements(), 3); id != u.OrderID {
		t.Errorf("the gateway saw %s, want %s", id, u.OrderID)
	}
	clock.Advance(time.Hour)
	if keys := mem.DueKeys(10); len(keys) != 0 {
		t.Errorf("keys due after the client stored the outcome: %v, want none", keys)
	}
}

// wantOneOrderIDOf is wantOneOrderID over placements.
func wantOneOrderIDOf(t *testing.T, calls []intake.Placement, want int) string {
	t.Helper()
	ids := make([]string, len(calls))
	for i, p := range calls {
		ids[i] = p.OrderID
	}
	return wantOneOrderID(t, ids, want)
}

// TestTheSettlerLeavesAnOpenKeyWithoutItsOrder: a key an older version
// left open with its order id and fingerprint but not its order is never
// due, but a settle message for it (a queue message, a sweep that listed
// it) still reaches the settler. Step leaves the key to it no more than
// any other key that is not due (DueFor): the settler calls nothing, says
// there is nothing to settle, and the key stays as it was: open with its
// order id, its attempts and no due time, for the client's retry, which
// brings the order and places it under that order id.
func TestTheSettlerLeavesAnOpenKeyWithoutItsOrder(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		o := parsedValid(t)
		old := intake.Claim{Token: "old", Fingerprint: o.Fingerprint(), OrderID: "old-order", AcceptedAt: acceptedAt,
			Lease: config.DefaultPendingTTL, KeepUntil: acceptedAt.Add(keepWindow)}
		if rec, err := e.store.Begin(ctx, deskKey, old); err != nil || rec.Took != intake.EventClaim {
			t.Fatalf("the older version's Begin = %+v, %v; want a claim", rec, err)
		}
		old.Stage, old.Attempts = intake.StageSent, 2
		if err := e.store.Release(ctx, deskKey, old); err != nil {
			t.Fatal(err)
		}
		before, err := e.store.Lookup(ctx, deskKey)
		if err != nil || before.State != intake.Open || before.HasOrder || before.OrderID != "old-order" {
			t.Fatalf("the older version's key = %+v, %v; want it open without its order", before, err)
		}
		e.clock.Advance(time.Hour)
		st, err := e.service().Settle(ctx, deskKey)
		if err != nil || !st.Final || st.Result != intake.SettleIdle || st.Attempts != before.Attempts {
			t.Errorf("the settler = %+v, %v; want it final with nothing settled, %d attempts", st, err, before.Attempts)
		}
		if n := len(e.g.placements()); n != 0 {
			t.Errorf("gateway calls = %d, want none: the key holds no order", n)
		}
		after, err := e.store.Lookup(ctx, deskKey)
		if err != nil || after.State != intake.Open || after.OrderID != before.OrderID || after.HasOrder ||
			after.Attempts != before.Attempts || after.GiveUp != before.GiveUp || !after.NextAttempt.Equal(before.NextAttempt) {
			t.Errorf("after the settler the key is %+v, %v; want it as before: %+v", after, err, before)
		}
		if keys := e.due(t); len(keys) != 0 {
			t.Errorf("keys due after the settler: %v, want none", keys)
		}
		out, err := e.service().Submit(ctx, deskKey, []byte(validBody), "")
		if err != nil || out.OrderID != "old-order" {
			t.Fatalf("the client's retry = %s, %v; want the order placed under old-order", out.OrderID, err)
		}
		if id := wantOneOrderIDOf(t, e.g.placements(), 1); id != "old-order" {
			t.Errorf("the gateway saw %s, want old-order", id)
		}
	})
}

// lastCallInMigration is a ledger whose deskKey is open with the order
// id the Worker derives, its settler's next call its last (SettleMaxAge
// passed), during a migration whose KV (oldMem, through fallback, or the
// store over oldMem when fallback is nil) is the Fallback.
type lastCallInMigration struct {
	clock  *fakeClock
	oldMem *kv.MemoryNamespace
	mem    *ledger.MemoryStore
	g      *scriptedGateway
	opts   intake.Options
	id     string // the key's order id
	pages  int
}

// kvAnswered has KV mode store answer (nil: accepted; a *Rejection) for
// validBody under deskKey, as KV mode did before the migration.
func kvAnswered(t *testing.T, oldMem *kv.MemoryNamespace, clock *fakeClock, answer error) {
	t.Helper()
	g := gatewayFunc(func(context.Context, intake.Placement) error { return answer })
	svc := intake.New(kv.NewStore(oldMem, clock.Now), intake.Options{ResultTTL: config.DefaultResultTTL,
		PendingTTL: config.DefaultPendingTTL, Gateway: g, Now: clock.Now})
	if _, err := svc.Submit(context.Background(), deskKey, []byte(validBody), ""); err != nil && !errors.Is(err, intake.ErrRejected) {
		t.Fatalf("KV mode's Submit = %v", err)
	}
}

func newLastCallInMigration(t *testing.T, fallback func(*kv.Store) intake.Fallback, before func(*kv.MemoryNamespace, *fakeClock)) *lastCallInMigration {
	t.Helper()
	const maxAge = time.Hour
	clock, oldMem, g, opts := settling(maxAge)
	w := &lastCallInMigration{clock: clock, oldMem: oldMem, g: g}
	if before != nil {
		before(oldMem, clock)
	}
	w.mem = ledger.NewMemoryStore()
	w.mem.Now = clock.Now
	// A request whose read of KV missed KV mode's receipt (KV's reads lag)
	// placed the order again here, under the same order id: as a request
	// that did not read KV at all does.
	g.answer(errLost)
	_, err := intake.New(w.mem, opts).Submit(context.Background(), deskKey, []byte(validBody), "")
	var u *intake.Unsettled
	if !errors.As(err, &u) {
		t.Fatalf("the ledger's Submit = %v, want the outcome unknown", err)
	}
	w.id = u.OrderID
	clock.Advance(maxAge + time.Minute)
	opts.Fallback = kv.NewStore(oldMem, clock.Now)
	if fallback != nil {
		opts.Fallback = fallback(kv.NewStore(oldMem, clock.Now))
	}
	opts.FallbackUntil = clock.Now().Add(48 * time.Hour)
	opts.ReportUnresolved = func(context.Context, intake.Key, intake.Placement, int) error { w.pages++; return nil }
	w.opts = opts
	return w
}

// wantOpenAndDue fails unless the ledger holds deskKey open with w.id,
// attempts, not given up on, due for its settler within a minute, and
// nothing was paged.
func (w *lastCallInMigration) wantOpenAndDue(t *testing.T, attempts int) {
	t.Helper()
	rec, err := w.mem.Lookup(context.Background(), deskKey)
	if err != nil || rec.State != intake.Open || rec.OrderID != w.id || rec.Attempts != attempts || rec.GiveUp != intake.NotGivenUp {
		t.Errorf("the ledger holds %+v, %v; want the key open with %s, %d attempts, not given up on", rec, err, w.id, attempts)
	}
	if rec.NextAttempt.IsZero() || rec.NextAttempt.After(w.clock.Now().Add(time.Minute)) {
		t.Errorf("the key is due at %v, want it due again soon (now %v)", rec.NextAttempt, w.clock.Now())
	}
	if w.pages != 0 {
		t.Errorf("%d pages, want none: nothing was given up on", w.pages)
	}
}

// TestTheSettlersLastCallStoresKVsOutcome: during a migration, before its
// last call, the settler finds the key's outcome in KV, stored by KV mode
// under the same order id, and stores it as the key's, accepted or
// rejected, without a call: the client's retry replays what KV mode told
// its client.
func TestTheSettlersLastCallStoresKVsOutcome(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		answer error
		want   intake.SettleResult
	}{
		{"accepted", nil, intake.SettleAccepted},
		{"rejected", &intake.Rejection{Reason: "insufficient buying power"}, intake.SettleRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var kvBody string
			w := newLastCallInMigration(t, nil, func(oldMem *kv.MemoryNamespace, clock *fakeClock) {
				kvAnswered(t, oldMem, clock, tc.answer)
				rec, err := kv.NewStore(oldMem, clock.Now).Lookup(ctx, deskKey)
				if err != nil || rec.State != intake.Stored {
					t.Fatalf("KV holds %v, %v; want the outcome stored", rec.State, err)
				}
				kvBody = string(rec.Body)
			})
			calls := len(w.g.placements())
			st, err := intake.New(w.mem, w.opts).Settle(ctx, deskKey)
			if err != nil || !st.Final || st.Result != tc.want {
				t.Errorf("the settler = %+v, %v; want %v, final", st, err, tc.want)
			}
			if n := len(w.g.placements()) - calls; n != 0 {
				t.Errorf("the settler called the OMS %d times, want none: KV holds the outcome", n)
			}
			rec, err := w.mem.Lookup(ctx, deskKey)
			if err != nil || rec.State != intake.Stored || string(rec.Body) != kvBody {
				t.Errorf("the ledger holds %v %s, %v; want KV's outcome %s", rec.State, rec.Body, err, kvBody)
			}
			if w.pages != 0 {
				t.Errorf("%d pages, want none", w.pages)
			}
		})
	}
}

// TestTheSettlersLastCallWhoseStoreFailsGivesUpOnNothing: during a
// migration, before its last call, the settler reads KV and then renews
// its claim, or stores KV's outcome; when that write fails, it calls
// nothing, pages nothing, says storage failed, and leaves the key open
// with its order id, due again: the next settle finishes the job.
func TestTheSettlersLastCallWhoseStoreFailsGivesUpOnNothing(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		kvDone bool   // KV holds the outcome, which the settler commits
		method string // the ledger call that fails
		nth    int    // which call of method, from the settler's first
	}{
		{"the renewal after reading KV", false, "claim", 2},
		{"the commit of KV's outcome", true, "commit", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before func(*kv.MemoryNamespace, *fakeClock)
			if tc.kvDone {
				before = func(oldMem *kv.MemoryNamespace, clock *fakeClock) { kvAnswered(t, oldMem, clock, nil) }
			}
			w := newLastCallInMigration(t, nil, before)
			calls := len(w.g.placements())
			n := 0
			w.mem.RoundTrip = func(ctx context.Context, method string, apply func()) error {
				if method == tc.method {
					if n++; n == tc.nth {
						return errStorage
					}
				}
				apply()
				return nil
			}
			st, err := intake.New(w.mem, w.opts).Settle(ctx, deskKey)
			if n < tc.nth || !errors.Is(err, intake.ErrStorageUnavailable) || st.Final {
				t.Fatalf("the settler whose %s failed (%d calls) = %+v, %v; want storage unavailable", tc.method, n, st, err)
			}
			if c := len(w.g.placements()) - calls; c != 0 {
				t.Errorf("the settler called the OMS %d times, want none", c)
			}
			w.wantOpenAndDue(t, 1)
			w.mem.RoundTrip = nil
			w.clock.Advance(time.Minute)
			if st, err := intake.New(w.mem, w.opts).Settle(ctx, deskKey); err != nil || st.Result != intake.SettleAccepted {
				t.Errorf("the next settle = %+v, %v; want the outcome stored", st, err)
			}
		})
	}
}

// TestTheSettlersLastCallLeavesTheKeyToARequestThatTookItWhileItReadKV:
// during a migration, the settler's read of KV, which holds the key's
// outcome, outlasts its claim's lease, and a client's retry takes the key
// over meanwhile. The settler stores nothing and calls nothing: it says
// busy, and the key is the client's.
func TestTheSettlersLastCallLeavesTheKeyToARequestThatTookItWhileItReadKV(t *testing.T) {
	ctx := context.Background()
	var hooked *hookedFallback
	w := newLastCallInMigration(t, func(s *kv.Store) intake.Fallback {
		hooked = &hookedFallback{Store: s}
		return hooked
	}, func(oldMem *kv.MemoryNamespace, clock *fakeClock) { kvAnswered(t, oldMem, clock, nil) })
	o := parsedValid(t)
	hooked.afterLookup = func() {
		w.clock.Advance(config.DefaultPendingTTL + time.Second)
		other := intake.Claim{Token: "other", Fingerprint: o.Fingerprint(), Order: o, OrderID: w.id, AcceptedAt: w.clock.Now(),
			Lease: config.DefaultPendingTTL, KeepUntil: w.clock.Now().Add(keepWindow)}
		if rec, err := w.mem.Begin(ctx, deskKey, other); err != nil || rec.Took != intake.EventTakeOver {
			t.Errorf("the client's Begin = %+v, %v; want it to take over the key the settler's lease let go", rec, err)
		}
	}
	calls := len(w.g.placements())
	st, err := intake.New(w.mem, w.opts).Settle(ctx, deskKey)
	if err != nil || st.Result != intake.SettleBusy || st.Final {
		t.Errorf("the settler = %+v, %v; want it busy, the key the client's", st, err)
	}
	if n := len(w.g.placements()) - calls; n != 0 {
		t.Errorf("the settler called the OMS %d times, want none", n)
	}
	if rec, err := w.mem.Lookup(ctx, deskKey); err != nil || rec.State != intake.Held {
		t.Errorf("the ledger holds %v, %v; want the client's claim, nothing stored by the settler", rec.State, err)
	}
	if w.pages != 0 {
		t.Errorf("%d pages, want none", w.pages)
	}
}
