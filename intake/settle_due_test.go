package intake_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
)

// kvSettleEnv is a settleEnv over KV, whose reads lag readsLag, with opts
// (the gateway, clock and OnUnresolved are the env's).
func kvSettleEnv(readsLag time.Duration, opts intake.Options) *settleEnv {
	clock := &fakeClock{now: acceptedAt}
	mem := kv.NewMemoryNamespace()
	mem.Now = clock.Now
	store := kv.NewStore(mem, clock.Now)
	store.ReleaseClaims, store.ReadsLag = true, readsLag
	e := &settleEnv{clock: clock, store: store, g: &scriptedGateway{clock: clock}}
	opts.Gateway, opts.Now, opts.OnUnresolved = e.g, clock.Now, e.onUnresolved
	e.opts = opts
	return e
}

// TestASettlersCallOnAKeyWhoseCheckIsOverdueBacksOff: a key awaits the
// give-up's check, and the settler's call when it is due is not its last
// (SETTLE_MAX_AGE was raised by a deploy meanwhile; during a migration,
// KV's copy was out of reach). The call fails: the key is due again after
// the backoff, not at the check's time, which has passed, and which had
// the chain call the OMS again and again at once (found by a review).
func TestASettlersCallOnAKeyWhoseCheckIsOverdueBacksOff(t *testing.T) {
	ctx := context.Background()
	e := kvSettleEnv(kv.ReadsLag, intake.Options{SettleMaxAge: time.Hour, ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL})
	leaveUnknown(t, e)
	e.clock.Advance(time.Hour)
	e.g.answer(errLost)
	st, err := e.service().Settle(ctx, deskKey)
	if err != nil || !st.Unresolved || st.Final {
		t.Fatalf("the last call = %+v, %v; want the key awaiting the check", st, err)
	}
	e.opts.SettleMaxAge = 2 * time.Hour // a deploy
	e.clock.Advance(st.NextAttempt.Sub(e.clock.Now()))
	calls := len(e.g.placements())
	e.g.answer(errLost)
	st, err = e.service().Settle(ctx, deskKey)
	if want := e.clock.Now().Add(intake.SettleBackoff(st.Attempts)); err != nil || st.Final || st.NextAttempt.Before(want) {
		t.Fatalf("the check's call = %+v, %v; want the key due again after the backoff, at %v", st, err, want)
	}
	// Messages sent again before then (within the clocks' slack) find the
	// key not due, and call nothing.
	for e.clock.Advance(time.Second); e.clock.Now().Add(intake.DueSlack).Before(st.NextAttempt); e.clock.Advance(time.Second) {
		e.g.answer(errLost)
		if _, err := e.service().Settle(ctx, deskKey); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.g.placements()) - calls; n != 1 {
		t.Errorf("the OMS was called %d times before the key was due again, want once", n)
	}
}

// TestAKeyOutlivesTheCheckItAwaits: over KV the settler's last call that
// fails leaves its key awaiting the give-up's check, 2 × the reads' lag
// later at least. The key is kept past that check, which then reports it
// unresolved: with the reads' lag at a day (KV_READ_LAG_SECONDS takes up
// to one), and with RESULT_TTL and SETTLE_MAX_AGE at their shortest, it
// expired before the check, which found nothing, and an order whose
// outcome was unknown was dropped without a report (found by a review).
func TestAKeyOutlivesTheCheckItAwaits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readsLag time.Duration
		opts     intake.Options
	}{
		{"reads that lag a day", 24 * time.Hour,
			intake.Options{SettleMaxAge: intake.DefaultSettleMaxAge, ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL}},
		{"the shortest RESULT_TTL and SETTLE_MAX_AGE", kv.ReadsLag,
			intake.Options{SettleMaxAge: config.MinTTL, ResultTTL: config.MinTTL, PendingTTL: config.MinTTL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := kvSettleEnv(tc.readsLag, tc.opts)
			leaveUnknown(t, e)
			e.clock.Advance(tc.opts.SettleMaxAge)                       // the next call is the last
			e.g.during = func(int) { e.clock.Advance(5 * time.Second) } // each call takes OMS_TIMEOUT_MS
			var st intake.Settlement
			for i := 0; i < 20 && !st.Final; i++ {
				e.clock.Advance(max(st.NextAttempt.Sub(e.clock.Now()), intake.FirstSettleDelay))
				e.g.answer(errLost)
				var err error
				if st, err = e.service().Settle(context.Background(), deskKey); err != nil {
					t.Fatalf("settle %d: %v", i, err)
				}
			}
			if n := len(e.unresolvedCalls()); !st.Final || !st.Unresolved || n != 1 {
				t.Errorf("the settling ended %+v with %d reports, want the key reported unresolved once", st, n)
			}
		})
	}
}

// TestAKeyTheLedgerGaveUpOnIsNotAdoptedAgain: KV mode's settler made its
// last call, and the key awaits the give-up's check, which KV keeps it
// past; ledger mode adopted the key at once after the switch, settled it
// and gave up, reporting it. The ledger's row outlives KV's claim: one
// that expired first would leave the claim for the next adoption sweep,
// and the same order would be reported unresolved a second time (found by
// a review).
func TestAKeyTheLedgerGaveUpOnIsNotAdoptedAgain(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Minute // SETTLE_MAX_AGE at its least
	clock, oldMem, g, opts, before := unknownInKVMode(t, maxAge)
	g.answer(errLost)
	if st, err := before.Settle(ctx, deskKey); err != nil || st.Final || !st.Unresolved {
		t.Fatalf("KV mode's last call = %+v, %v; want the key awaiting the give-up's check", st, err)
	}

	clock.Advance(10 * time.Second)
	reports := 0
	store := ledger.NewMemoryStore()
	store.Now = clock.Now
	migrating := opts
	migrating.ReportUnresolved = func(context.Context, intake.Key, intake.Placement, int) error { reports++; return nil }
	migrating.Fallback, migrating.FallbackUntil = kv.NewStore(oldMem, clock.Now), clock.Now().Add(48*time.Hour)
	after := intake.New(store, migrating)
	if ok, err := after.Adopt(ctx, deskKey); err != nil || !ok {
		t.Fatalf("Adopt = %v, %v; want the key adopted", ok, err)
	}
	g.answer(errLost)
	if st, err := after.Settle(ctx, deskKey); err != nil || !st.Final || !st.Unresolved || reports != 1 {
		t.Fatalf("the ledger's settler = %+v, %v, with %d reports; want it to give up and report once", st, err, reports)
	}
	// Past the ledger's RESULT_TTL after its give-up, and KV's check.
	clock.Advance(maxAge + config.DefaultResultTTL + 20*time.Second)
	if ok, err := after.Adopt(ctx, deskKey); err != nil || ok {
		g.answer(errLost)
		clock.Advance(time.Second)
		st, serr := after.Settle(ctx, deskKey)
		t.Errorf("Adopt = %v, %v: the key was adopted again from KV's claim, which outlived the ledger's row; the settler then gave %+v, %v, with %d reports", ok, err, st, serr, reports)
	}
}
