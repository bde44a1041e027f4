package intake_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
)

var (
	stepNow   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	stepOrder = order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
)

// openKey is a key left open by an earlier claim of stepOrder, changed
// by mod.
func openKey(mod func(*intake.Record)) intake.Record {
	return modified(intake.Record{State: intake.Open, Fingerprint: "fp", Order: stepOrder, HasOrder: true,
		OrderID: "the key's order id", AcceptedAt: stepNow.Add(-time.Hour), Attempts: 3, NextAttempt: stepNow.Add(-time.Second)}, mod)
}

// modified is v changed by mod, if any.
func modified[T any](v T, mod func(*T)) T {
	if mod != nil {
		mod(&v)
	}
	return v
}

// TestStepDecidesWhatAClaimDoesToTheKeyItFound: Step is both stores'
// one decision in Begin; each row here is a case a Store once decided
// on its own.
func TestStepDecidesWhatAClaimDoesToTheKeyItFound(t *testing.T) {
	client := intake.Claim{Token: "t", Fingerprint: "fp", Order: stepOrder, OrderID: "a new order id", AcceptedAt: stepNow}
	settler := intake.Claim{Token: "s", By: intake.RoleSettler}
	resolver := intake.Claim{Token: "r", By: intake.RoleResolver}
	adopter := intake.Claim{Token: "a", Fingerprint: "fp", Order: stepOrder, OrderID: "KV's order id", AcceptedAt: stepNow, Stage: intake.StageTentative, By: intake.RoleAdopter}
	unresolved := openKey(func(r *intake.Record) { r.GiveUp, r.NextAttempt = intake.GivenUp, time.Time{} })
	checking := openKey(func(r *intake.Record) { r.GiveUp = intake.AwaitingCheck })
	for _, tc := range []struct {
		name string
		rec  intake.Record
		c    intake.Claim
		want intake.Event
		to   intake.Phase
	}{
		{"a client claims a free key", intake.Record{State: intake.Absent}, client, intake.EventClaim, intake.PhaseHeld},
		{"the settler has nothing to place for a free key", intake.Record{State: intake.Absent}, settler, intake.EventNone, intake.PhaseAbsent},
		{"nor has an operator's resolve", intake.Record{State: intake.Absent}, resolver, intake.EventNone, intake.PhaseAbsent},
		{"an adoption claims the key KV left open", intake.Record{State: intake.Absent}, adopter, intake.EventClaim, intake.PhaseHeld},
		{"a live claim holds the key", intake.Record{State: intake.Held, OrderID: "x"}, client, intake.EventNone, intake.PhaseHeld},
		{"nor does the settler take it", intake.Record{State: intake.Held, OrderID: "x"}, settler, intake.EventNone, intake.PhaseHeld},
		{"a stored outcome stays", intake.Record{State: intake.Stored}, client, intake.EventNone, intake.PhaseStored},
		{"a client takes over an open key", openKey(nil), client, intake.EventTakeOver, intake.PhaseHeld},
		{"but not another order's", openKey(func(r *intake.Record) { r.Fingerprint = "another" }), client, intake.EventNone, intake.PhaseOpen},
		{"the settler takes over a due key", openKey(nil), settler, intake.EventTakeOver, intake.PhaseHeld},
		{"or one due within the clocks' slack", openKey(func(r *intake.Record) { r.NextAttempt = stepNow.Add(intake.DueSlack) }), settler, intake.EventTakeOver, intake.PhaseHeld},
		{"but not one due later", openKey(func(r *intake.Record) { r.NextAttempt = stepNow.Add(intake.DueSlack + time.Millisecond) }), settler, intake.EventNone, intake.PhaseOpen},
		{"a resolve takes it all the same", openKey(func(r *intake.Record) { r.NextAttempt = stepNow.Add(time.Hour) }), resolver, intake.EventTakeOver, intake.PhaseHeld},
		{"the settler leaves a key it gave up on", unresolved, settler, intake.EventNone, intake.PhaseUnresolved},
		{"a resolve takes it", unresolved, resolver, intake.EventTakeOver, intake.PhaseHeld},
		{"and so does a client's retry", unresolved, client, intake.EventTakeOver, intake.PhaseHeld},
		{"the give-up's check takes its key once due", checking, settler, intake.EventTakeOver, intake.PhaseHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			move, err := intake.Step(tc.rec, tc.c, stepNow)
			if err != nil {
				t.Fatal(err)
			}
			if move.Event != tc.want || move.To != tc.to {
				t.Fatalf("Step = %s to %s, want %s to %s", move.Event, move.To, tc.want, tc.to)
			}
			want := tc.c
			if tc.want == intake.EventTakeOver {
				want = intake.TakeOver(tc.c, tc.rec)
			}
			if !claimsEqual(move.Claim, want) {
				t.Fatalf("Step's claim = %+v, want %+v", move.Claim, want)
			}
		})
	}
}

func claimsEqual(a, b intake.Claim) bool {
	a.Admit, b.Admit = nil, nil
	return reflect.DeepEqual(a, b)
}

// TestATakeoverInheritsTheKeysOrderAndGiveUp: what a takeover inherits
// is decided once, for both stores and the Service.
func TestATakeoverInheritsTheKeysOrderAndGiveUp(t *testing.T) {
	c := intake.Claim{Token: "t", Fingerprint: "fp", Order: stepOrder, OrderID: "mine", AcceptedAt: stepNow, Stage: intake.StageTentative,
		NextAttempt: stepNow.Add(time.Hour)}
	got := intake.TakeOver(c, openKey(nil))
	if got.OrderID != "the key's order id" || !got.AcceptedAt.Equal(stepNow.Add(-time.Hour)) || got.Attempts != 3 {
		t.Errorf("the takeover's order id, time and attempts are %q, %v, %d: not the key's", got.OrderID, got.AcceptedAt, got.Attempts)
	}
	if got.Stage != intake.StageSent {
		t.Errorf("a takeover is at stage %v, want sent (so not tentative): the key's order id may be at the OMS", got.Stage)
	}
	if got.GiveUp != intake.NotGivenUp || !got.NextAttempt.Equal(c.NextAttempt) {
		t.Errorf("a takeover of a key not given up on keeps its own due time: %d, %v", got.GiveUp, got.NextAttempt)
	}
	checkAt := stepNow.Add(2 * time.Minute)
	got = intake.TakeOver(intake.Claim{Token: "s", By: intake.RoleSettler}, openKey(func(r *intake.Record) { r.GiveUp, r.NextAttempt = intake.AwaitingCheck, checkAt }))
	if got.GiveUp != intake.AwaitingCheck || !got.NextAttempt.Equal(checkAt) {
		t.Errorf("a takeover of a key awaiting the give-up's check keeps both: %d, %v", got.GiveUp, got.NextAttempt)
	}
	if got.Fingerprint != "fp" || got.Order != stepOrder {
		t.Errorf("the settler's takeover carries the key's order: %q, %+v", got.Fingerprint, got.Order)
	}
	got = intake.TakeOver(c, openKey(func(r *intake.Record) { r.Fingerprint, r.Order, r.HasOrder = "", order.Order{}, false }))
	if got.Fingerprint != "fp" || got.Order != stepOrder {
		t.Errorf("a key kept without its order keeps the claim's: %q, %+v", got.Fingerprint, got.Order)
	}
}

// TestStepFailsOnAMoveTheTableHasNoRowFor: Step reads the table, and a
// move without a row is an error, never a silent default.
func TestStepFailsOnAMoveTheTableHasNoRowFor(t *testing.T) {
	saved := intake.Transitions
	t.Cleanup(func() { intake.Transitions = saved })
	intake.Transitions = slices.DeleteFunc(slices.Clone(saved), func(tr intake.Transition) bool {
		return tr.From == intake.PhaseAbsent && tr.Event == intake.EventClaim
	})
	_, err := intake.Step(intake.Record{State: intake.Absent}, intake.Claim{Token: "t", Fingerprint: "fp"}, stepNow)
	if !errors.Is(err, intake.ErrNoRow) {
		t.Fatalf("Step over a table without the claim of a free key = %v, want an error", err)
	}
}

// TestAClaimHoldsItsKeyUntilItsLeaseEnds: ClaimState is when a claim
// stops holding its key, in both stores.
func TestAClaimHoldsItsKeyUntilItsLeaseEnds(t *testing.T) {
	lease := stepNow.Add(time.Minute)
	for _, tc := range []struct {
		name      string
		released  bool
		lease     time.Time
		tentative bool
		orderID   string
		now       time.Time
		want      intake.State
	}{
		{"during its lease", false, lease, false, "id", stepNow, intake.Held},
		{"once it ends, open with its order id", false, lease, false, "id", lease, intake.Open},
		{"released, at once", true, lease, false, "id", stepNow, intake.Open},
		{"a tentative claim's key is free", false, lease, true, "id", lease, intake.Absent},
		{"so is one without an order id", false, lease, false, "", lease, intake.Absent},
		{"a lease its store cannot tell holds until the claim goes", false, time.Time{}, false, "", stepNow.Add(time.Hour), intake.Held},
	} {
		if got := intake.ClaimState(tc.released, tc.lease, tc.tentative, tc.orderID, tc.now); got != tc.want {
			t.Errorf("%s: ClaimState = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTheSettlerIsDueWhenDueAtSays: DueAt is when the settler is due, in
// both stores.
func TestTheSettlerIsDueWhenDueAtSays(t *testing.T) {
	lease, next := stepNow.Add(time.Minute), stepNow.Add(10*time.Second)
	kept := stepNow.Add(24 * time.Hour)
	c := intake.Claim{Fingerprint: "fp", Order: stepOrder, KeepUntil: kept}
	with := func(mod func(*intake.Claim)) intake.Claim { return modified(c, mod) }
	for _, tc := range []struct {
		name     string
		c        intake.Claim
		released bool
		want     time.Time
	}{
		{"a held claim, when its lease ends", c, false, lease},
		{"a released one, at once", c, true, stepNow},
		{"or when its attempt said", with(func(d *intake.Claim) { d.NextAttempt = next }), true, next},
		{"never without its order", with(func(d *intake.Claim) { d.Fingerprint, d.Order = "", order.Order{} }), true, time.Time{}},
		{"nor with only its fingerprint (an older version's key)", with(func(d *intake.Claim) { d.Order = order.Order{} }), true, time.Time{}},
		{"nor for a tentative claim", with(func(d *intake.Claim) { d.Stage = intake.StageTentative }), false, time.Time{}},
		{"nor for a claim kept no longer than its lease", with(func(d *intake.Claim) { d.KeepUntil = lease }), false, time.Time{}},
		{"a key given up on, never", with(func(d *intake.Claim) { d.GiveUp = intake.GivenUp }), true, time.Time{}},
		{"awaiting its check, when the check is due", with(func(d *intake.Claim) { d.GiveUp, d.NextAttempt = intake.AwaitingCheck, next }), true, next},
		{"held awaiting it, no sooner than the lease ends", with(func(d *intake.Claim) { d.GiveUp, d.NextAttempt = intake.AwaitingCheck, next }), false, lease},
		{"held on a key given up on, never", with(func(d *intake.Claim) { d.GiveUp = intake.GivenUp }), false, time.Time{}},
	} {
		if got := intake.DueAt(tc.c, tc.released, lease, stepNow); !got.Equal(tc.want) {
			t.Errorf("%s: DueAt = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStepReleaseDecidesHowAReleaseLeavesItsKey: how a release leaves its
// key is decided once, for both stores, and checked against the table.
func TestStepReleaseDecidesHowAReleaseLeavesItsKey(t *testing.T) {
	sent := intake.Claim{Token: "t", Fingerprint: "fp", Stage: intake.StageSent, KeepUntil: stepNow.Add(time.Hour)}
	with := func(mod func(*intake.Claim)) intake.Claim { return modified(sent, mod) }
	for _, tc := range []struct {
		name     string
		c        intake.Claim
		from     intake.Phase
		keptSent bool
		want     intake.Event
		to       intake.Phase
	}{
		{"a sent claim leaves its key open", sent, intake.PhaseHeld, false, intake.EventReleaseOpen, intake.PhaseOpen},
		{"and so it does once its lease ended", sent, intake.PhaseOpen, false, intake.EventReleaseOpen, intake.PhaseOpen},
		{"an unsent one goes", with(func(c *intake.Claim) { c.Stage = intake.StageFirm }), intake.PhaseHeld, false, intake.EventReleaseUnsent, intake.PhaseAbsent},
		{"unless the store kept the key as sent", with(func(c *intake.Claim) { c.Stage = intake.StageFirm }), intake.PhaseHeld, true, intake.EventReleaseOpen, intake.PhaseOpen},
		{"the reference's claim goes, whatever it sent", with(func(c *intake.Claim) { c.KeepUntil = time.Time{} }), intake.PhaseHeld, false, intake.EventReleaseUnsent, intake.PhaseAbsent},
		{"a key given up on stays so", with(func(c *intake.Claim) { c.GiveUp = intake.GivenUp }), intake.PhaseHeld, false, intake.EventGiveUp, intake.PhaseUnresolved},
		{"a claim beside the outcome it stored goes, the key stays stored", with(func(c *intake.Claim) { c.Stage, c.By = intake.StageStored, intake.RoleSettler }), intake.PhaseStored, false, intake.EventNone, intake.PhaseStored},
		{"one awaiting the check stays due for it", with(func(c *intake.Claim) { c.GiveUp, c.NextAttempt = intake.AwaitingCheck, stepNow }), intake.PhaseHeld, false, intake.EventCheck, intake.PhaseChecking},
	} {
		move, err := intake.StepRelease(tc.c, tc.from, tc.keptSent)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if move.Event != tc.want || move.To != tc.to {
			t.Errorf("%s: StepRelease = %s to %s, want %s to %s", tc.name, move.Event, move.To, tc.want, tc.to)
		}
	}
	// A claim that no longer holds a key the Store shows free (its
	// tentative lease ended) changes nothing.
	if move, err := intake.StepRelease(sent, intake.PhaseAbsent, true); err != nil || move.Event != intake.EventNone {
		t.Errorf("a release of a key shown free = %s, %v; want no move", move.Event, err)
	}
	// Nor does a release ever open a stored outcome: a bug the table has
	// no row for.
	settler := with(func(c *intake.Claim) { c.By = intake.RoleSettler })
	if _, err := intake.StepRelease(settler, intake.PhaseStored, false); !errors.Is(err, intake.ErrNoRow) {
		t.Error("the settler's release of a stored key left open: want an error")
	}
}

// TestUnansweredDecidesWhereACallWithoutAnAnswerLeavesItsKey: the
// backoff, the give-up's check over reads that lag, and the give-up
// itself are decided once.
func TestUnansweredDecidesWhereACallWithoutAnAnswerLeavesItsKey(t *testing.T) {
	const lag, ttl = time.Minute, 24 * time.Hour
	c := intake.Claim{Fingerprint: "fp", Stage: intake.StageSent, Attempts: 2, AcceptedAt: stepNow.Add(-time.Hour), KeepUntil: stepNow.Add(time.Hour)}
	with := func(mod func(*intake.Claim)) intake.Claim { return modified(c, mod) }
	type want struct {
		giveUp intake.GiveUp
		next   time.Time
		report bool
	}
	for _, tc := range []struct {
		name    string
		c       intake.Claim
		last    bool
		settles bool
		lag     time.Duration
		want    want
	}{
		{"a client's call is due again after the backoff", c, false, true, lag, want{intake.NotGivenUp, stepNow.Add(intake.SettleBackoff(3)), false}},
		{"where nothing settles, when the Store says", c, false, false, lag, want{intake.NotGivenUp, time.Time{}, false}},
		{"the last call over reads that lag awaits the check", c, true, true, lag, want{intake.AwaitingCheck, stepNow.Add(2 * lag), false}},
		{"the last call over exact reads gives up", c, true, true, 0, want{intake.GivenUp, time.Time{}, true}},
		{"and so does the check's", with(func(d *intake.Claim) { d.GiveUp, d.NextAttempt = intake.AwaitingCheck, stepNow }), true, true, lag, want{intake.GivenUp, time.Time{}, true}},
		{"a retry of a key given up on leaves it so", with(func(d *intake.Claim) { d.GiveUp = intake.GivenUp }), false, true, lag, want{intake.GivenUp, time.Time{}, false}},
		{"and its check due as it was", with(func(d *intake.Claim) { d.GiveUp, d.NextAttempt = intake.AwaitingCheck, stepNow.Add(time.Minute) }), false, true, lag, want{intake.AwaitingCheck, stepNow.Add(time.Minute), false}},
	} {
		got, report := intake.Unanswered(tc.c, tc.last, tc.settles, tc.lag, ttl, stepNow)
		if g := (want{got.GiveUp, got.NextAttempt, report}); g != tc.want {
			t.Errorf("%s: Unanswered = %+v, want %+v", tc.name, g, tc.want)
		}
		if got.Attempts != tc.c.Attempts+1 {
			t.Errorf("%s: %d attempts, want one more than %d", tc.name, got.Attempts, tc.c.Attempts)
		}
		if tc.last && got.KeepUntil.Before(stepNow.Add(ttl)) {
			t.Errorf("%s: a key given up on is kept until %v, not another RESULT_TTL", tc.name, got.KeepUntil)
		}
	}
	if got, _ := intake.Unanswered(c, false, false, lag, ttl, stepNow); !got.KeepUntil.Equal(c.AcceptedAt.Add(ttl)) {
		t.Errorf("where nothing settles the key is kept until %v, want as long as its receipt would be (%v)", got.KeepUntil, c.AcceptedAt.Add(ttl))
	}
}

// TestAGiveUpReadsBackAsItWasWritten: the stores write a give-up as the
// reference's layout has it, a flag and a due time, and read it back
// through GiveUpOf, whatever due time a key given up on carried.
func TestAGiveUpReadsBackAsItWasWritten(t *testing.T) {
	next := stepNow.Add(time.Minute)
	for _, tc := range []struct {
		g    intake.GiveUp
		next time.Time
		due  time.Time
	}{
		{intake.NotGivenUp, next, next},
		{intake.NotGivenUp, time.Time{}, time.Time{}},
		{intake.AwaitingCheck, next, next},
		{intake.GivenUp, time.Time{}, time.Time{}},
		{intake.GivenUp, next, time.Time{}},
	} {
		unresolved, due := intake.WrittenGiveUp(tc.g, tc.next)
		if got := intake.GiveUpOf(unresolved, due); got != tc.g || !due.Equal(tc.due) || unresolved != tc.g.Unresolved() {
			t.Errorf("give-up %d due %v written as %v, %v reads back %d; want %d due %v", tc.g, tc.next, unresolved, due, got, tc.g, tc.due)
		}
	}
}

// TestOnlyTwoKnownFingerprintsNameAnotherOrder: a key is reused for
// another order only when both fingerprints are known and differ; a
// receipt the reference stored, and a claim for no order, match any.
func TestOnlyTwoKnownFingerprintsNameAnotherOrder(t *testing.T) {
	for _, tc := range []struct {
		kept, order string
		want        bool
	}{{"fp-a", "fp-b", true}, {"fp-a", "fp-a", false}, {"", "fp-a", false}, {"fp-a", "", false}, {"", "", false}} {
		if got := intake.ForAnotherOrder(tc.kept, tc.order); got != tc.want {
			t.Errorf("ForAnotherOrder(%q, %q) = %v, want %v", tc.kept, tc.order, got, tc.want)
		}
	}
}

// TestTheSettlerLooksAgainAtAHeldKeyWhenItsStoreSays: a held key is due
// when its Store says, and a lease from now where the Store cannot tell.
func TestTheSettlerLooksAgainAtAHeldKeyWhenItsStoreSays(t *testing.T) {
	const lease = time.Minute
	for _, tc := range []struct {
		name string
		due  time.Time
		want time.Time
	}{
		{"when the Store says", stepNow.Add(10 * time.Second), stepNow.Add(10 * time.Second)},
		{"a lease from now, where it cannot tell", time.Time{}, stepNow.Add(lease)},
		{"a lease from now, where the time it said has passed", stepNow.Add(-time.Second), stepNow.Add(lease)},
	} {
		held := intake.Record{State: intake.Held, NextAttempt: tc.due}
		if got := intake.DueAfterHolder(held, lease, stepNow); !got.Equal(tc.want) {
			t.Errorf("%s: DueAfterHolder = %v, want %v", tc.name, got, tc.want)
		}
	}
}
