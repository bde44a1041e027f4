package intake

import (
	"errors"
	"time"

	"github.com/edge-orders/edge-orders/internal/errs"
)

// The stores' decisions, made once for both: whether a claim takes a key
// and what it inherits (Step), when a claim stops holding its key
// (ClaimState), and when the settler is due for a key (DueAt). KV runs
// them in the isolate before its blind write; the ledger inside its
// Durable Object, in the step that writes. The table (phase.go) is their
// one authority: Step fails on a move it has no row for.

// DueSlack is how early a settler's claim may come and still find its key
// due: the clocks of the isolate that scheduled it and of the one that
// takes it differ a little.
const DueSlack = time.Second

// Move is what a Store's Begin does, as Step decides it.
type Move struct {
	// Event is EventClaim (a free key), EventTakeOver (an open key), or
	// EventNone: Begin writes nothing and returns the record it found.
	Event Event
	// To is the phase the write leaves the key in.
	To Phase
	// Claim is what the Store writes: the claim as it came, or, for a
	// takeover, with what the open key hands on (TakeOver).
	Claim Claim
}

// ErrNoRow is matched by the error Step and StepRelease return for a move
// the table has no row for: a bug, which the simulator fails on.
var ErrNoRow = errors.New("intake: no row of the table allows the move")

// Step decides what claim c, made at now, does to a key that shows rec:
//   - a free key is claimed, except by the settler, which has no order of
//     its own to place;
//   - an open key is taken over with its order id, order and attempts,
//     unless it is another order's, the claim is for a body that is not
//     an order, or the claim is the settler's and the key is not due
//     (DueFor);
//   - a stored outcome and another's live claim are left alone.
//
// It fails on a move the table has no row for: a bug, never a default.
func Step(rec Record, c Claim, now time.Time) (Move, error) {
	ev := EventNone
	switch rec.State {
	case Absent:
		if c.role() == RoleClient || c.role() == RoleAdopter {
			ev = EventClaim
		}
	case Open:
		switch {
		case ForAnotherOrder(rec.Fingerprint, c.Fingerprint):
			// Another order's key: reused by mistake, it keeps its own.
		case c.role() == RoleClient && c.Fingerprint == "":
			// A body that is not an order (over KV's stand-in, which
			// claims before it parses): it has nothing to place, and its
			// release would free the key and its order id.
		case c.role() == RoleSettler && !DueFor(rec, now):
		default:
			ev, c = EventTakeOver, TakeOver(c, rec)
		}
	}
	from := PhaseOf(rec)
	if ev == EventNone {
		return Move{Event: ev, To: from, Claim: c}, nil
	}
	to, ok := Next(from, ev, c.role())
	if !ok {
		return Move{}, noRow(c, ev, from)
	}
	return Move{Event: ev, To: to, Claim: c}, nil
}

// StepRelease decides how claim c's release leaves its key, which the
// Store holds in phase from (KV, which cannot read it first: held, the
// claim's own). A claim released beside the outcome it stored
// (StageStored) goes, and the key stays stored. A claim that no longer
// holds a key the Store shows free (a tentative claim whose lease ended,
// which freed the key) changes nothing: reopening the key would hand the
// settler an order id a purge may have erased since. A claim whose order
// may have reached the gateway under its order id (StageSent, or the
// Store kept the key's as sent: keptSent) leaves it open, awaiting the
// give-up's check or given up on (c.GiveUp); any other goes, and the key
// is free. A claim that keeps nothing past its lease (c.KeepUntil zero,
// the reference's) goes whatever it sent: nothing settles it.
//
// It fails on a move the table has no row for.
func StepRelease(c Claim, from Phase, keptSent bool) (Move, error) {
	ev, to := EventReleaseUnsent, PhaseAbsent
	switch {
	case c.Stage == StageStored:
		// Beside the outcome it stored: the claim goes, the key stays.
		return Move{Event: EventNone, To: PhaseStored, Claim: c}, nil
	case from == PhaseAbsent:
		return Move{Event: EventNone, To: PhaseAbsent, Claim: c}, nil
	case !(c.Stage == StageSent || keptSent) || c.KeepUntil.IsZero():
	case c.GiveUp == GivenUp:
		ev, to = EventGiveUp, PhaseUnresolved
	case c.GiveUp == AwaitingCheck:
		ev, to = EventCheck, PhaseChecking
	default:
		ev, to = EventReleaseOpen, PhaseOpen
	}
	if !Allowed(from, to, c.role()) {
		return Move{}, noRow(c, ev, from)
	}
	return Move{Event: ev, To: to, Claim: c}, nil
}

// noRow is ErrNoRow for c's ev of a key in phase from.
func noRow(c Claim, ev Event, from Phase) error {
	return errs.Detail(ErrNoRow, ev.String()+" by the "+c.role().String()+" of a key "+from.String())
}

// ForAnotherOrder reports whether a key's fingerprint, kept and the
// fingerprint of an order, order, name different orders: both known, and
// not the same. A key reused for another order keeps its own; an unknown
// fingerprint (a receipt the reference stored, a claim for a body that is
// not an order or written by an older version) matches any order.
func ForAnotherOrder(kept, order string) bool {
	return kept != "" && order != "" && kept != order
}

// role is who makes c: c.By, or a client, whose claim leaves it zero.
func (c Claim) role() Role {
	if c.By == 0 {
		return RoleClient
	}
	return c.By
}

// DueFor reports whether the settler may take over the open key rec at
// now: it keeps its order, which the settler calls the gateway with, it
// is due, and, if the settler gave up on it, due for the give-up's check.
// A settle message that comes before its key is due was sent for an
// earlier due time, by a chain another attempt has moved on. A key an
// older version kept without its order is never due (DueAt), whatever
// message names it: only its client's retry, which brings the order, can
// place it.
func DueFor(rec Record, now time.Time) bool {
	if PhaseOf(rec) == PhaseUnresolved || !rec.HasOrder || rec.Fingerprint == "" {
		return false
	}
	return !now.Add(DueSlack).Before(rec.NextAttempt)
}

// TakeOver is claim c once it holds the open key rec: with the key's
// order id and time, which may have reached the gateway, its attempts, its
// give-up and the check that awaits (a key given up on stays so), and its
// order where the key keeps one. Stores write it; the Service carries it
// on from what Begin returned.
func TakeOver(c Claim, rec Record) Claim {
	c.OrderID, c.AcceptedAt, c.Stage = rec.OrderID, rec.AcceptedAt, StageSent
	c.Attempts, c.GiveUp = rec.Attempts, rec.GiveUp
	if rec.GiveUp.Unresolved() {
		c.NextAttempt = rec.NextAttempt
	}
	if rec.Fingerprint != "" {
		c.Fingerprint = rec.Fingerprint
	}
	if rec.HasOrder {
		c.Order = rec.Order
	}
	return c
}

// GiveBack is claim taken, which took over the open key rec, as its
// release hands the key back as it found it: open with the key's order
// id, order, attempts and give-up (TakeOver carried them), due when it
// was due. A driver that wanted the key free, a resolve refused, and a
// takeover whose write failed give a key back through it.
func GiveBack(taken Claim, rec Record) Claim {
	taken.Stage, taken.NextAttempt = StageSent, rec.NextAttempt
	return taken
}

// HasOrder reports whether c carries its order, which the settler needs to
// call the gateway without the client: an older version's open key kept
// only the order's fingerprint, and a claim for a body that is not an
// order has neither.
func (c Claim) HasOrder() bool { return c.Fingerprint != "" && c.Order.Symbol != "" }

// Placeable reports whether c is for an order that may reach a gateway
// (KeepUntil): should its write fail, it may have landed, and the key is
// left open with c's order id rather than freed.
func (c Claim) Placeable() bool { return c.Fingerprint != "" && !c.KeepUntil.IsZero() }

// NewOrder reports whether claim c, which took its key by took
// (Record.Took), places a new order: the one thing the rate limit counts.
// It claimed a free key, and carries no earlier attempt's order id
// (StageSent: taken over from the key, from a migration's Fallback, or
// from this instance's memory of a key a stale read shows free). A
// replay, a takeover and a retry of the same order place none. Both
// stores ask Claim.Admit by it, and so does a migrating request.
func NewOrder(took Event, c Claim) bool { return took == EventClaim && c.Stage != StageSent }

// ClaimState is what a claim its Store wrote is at now: Held until its
// lease ends (a lease the Store cannot tell, zero, until the claim goes),
// or once released; then Open with its order id, or Absent for a
// tentative claim, whose order never reached the gateway under it, and
// for one without an order id.
func ClaimState(released bool, leaseUntil time.Time, tentative bool, orderID string, now time.Time) State {
	switch {
	case !released && (leaseUntil.IsZero() || now.Before(leaseUntil)):
		return Held
	case tentative || orderID == "":
		return Absent
	}
	return Open
}

// DueAt is when the settler is due for a key written at now with claim c,
// held until leaseUntil or released: never for a key without its order
// (HasOrder) or a tentative claim, or one not kept past its lease (c.KeepUntil), whose
// order reaches nothing outside; for a key given up on, only for the
// check it awaits, and not before the lease ends; for a held claim, when
// its lease ends, since its holder may die; for a released one, at
// c.NextAttempt, or at once if no attempt set it.
func DueAt(c Claim, released bool, leaseUntil, now time.Time) time.Time {
	switch {
	case !c.HasOrder() || c.Stage == StageTentative || !c.KeepUntil.After(leaseUntil) && !released:
		return time.Time{}
	case c.GiveUp == GivenUp:
		return time.Time{}
	case c.GiveUp == AwaitingCheck && released:
		return c.NextAttempt
	case c.GiveUp == AwaitingCheck:
		return later(c.NextAttempt, leaseUntil)
	case released && c.NextAttempt.IsZero():
		return now
	case released:
		return c.NextAttempt
	}
	return leaseUntil
}

// DueAfterHolder is when the settler, finding at now the key rec held by
// another's claim, looks again: when the Store says it is due (DueAt: the
// holder's lease's end, after which the key is Open if its holder died),
// or, where the Store cannot say (the reference's claim, a marker kept
// for its lease), a whole lease from now, by when it has ended.
func DueAfterHolder(rec Record, lease time.Duration, now time.Time) time.Time {
	if rec.NextAttempt.After(now) {
		return rec.NextAttempt
	}
	return now.Add(lease)
}

// Unanswered is how a gateway call that ended without an answer stored
// leaves claim c's key, released at now (StepRelease then names the
// move): open, with one more attempt, and
//   - after the settler's last call (last), over a Store whose reads lag
//     (readsLag), given up on but awaiting the check, due once reads have
//     caught up: a read that lags may have missed another's outcome;
//   - after the last call otherwise, or the check's, given up on, never due
//     again and kept another resultTTL: giveUp says the caller reports it;
//   - after a retry of a key given up on, as it was, its check due as
//     before, unless that time has passed: then due after the backoff, as
//     after a settler's call on it that was not its last (SETTLE_MAX_AGE
//     raised since, or KV's copy out of reach), which would otherwise
//     leave it due at once, and call the OMS again and again;
//   - otherwise due after the backoff where a settler runs (settles), and
//     due when the Store says where none does.
//
// A key due again is kept a resultTTL past its due time at least: however
// short RESULT_TTL and SETTLE_MAX_AGE, and however long the reads' lag,
// it never expires before the call or the check it awaits, which would
// drop an order whose outcome is unknown without a report. Where nothing
// settles, the key keeps the order id and time the stand-in answered with
// as long as the receipt would have been kept, for a retry to store them.
func Unanswered(c Claim, last, settles bool, readsLag, resultTTL time.Duration, now time.Time) (next Claim, giveUp bool) {
	c.Attempts++
	if c.GiveUp == NotGivenUp {
		c.NextAttempt = time.Time{}
	}
	if !settles {
		c.KeepUntil = later(c.KeepUntil, c.AcceptedAt.Add(resultTTL))
	}
	switch {
	case last && c.GiveUp == NotGivenUp && readsLag > 0:
		c.GiveUp = AwaitingCheck
		c.NextAttempt = CheckDue(c.Attempts, readsLag, now)
	case last:
		c.GiveUp, giveUp = GivenUp, true
		c.KeepUntil = later(c.KeepUntil, now.Add(resultTTL))
		c.NextAttempt = time.Time{}
	case c.GiveUp == AwaitingCheck && settles && !c.NextAttempt.After(now):
		c.NextAttempt = now.Add(SettleBackoff(c.Attempts))
	case c.GiveUp.Unresolved():
	case settles:
		c.NextAttempt = now.Add(SettleBackoff(c.Attempts))
	}
	if !c.NextAttempt.IsZero() {
		c.KeepUntil = later(c.KeepUntil, c.NextAttempt.Add(resultTTL))
	}
	return c, giveUp
}

// CheckDue is when the give-up's check is due, for a key released at now
// after its attempts-th unanswered gateway call, over reads that lag
// readsLag: after the backoff, and once reads have caught up.
func CheckDue(attempts int, readsLag time.Duration, now time.Time) time.Time {
	return now.Add(max(SettleBackoff(attempts), 2*readsLag))
}

// The settler's backoff: capped and exponential, from the first attempt
// that ended without an answer stored.
const (
	FirstSettleDelay = time.Second
	MaxSettleDelay   = 5 * time.Minute
)

// SettleBackoff is how long after its attempts-th unanswered gateway call
// a key is due for the settler: 1 s, 2 s, 4 s … up to MaxSettleDelay.
func SettleBackoff(attempts int) time.Duration {
	d := FirstSettleDelay
	for i := 1; i < attempts && d < MaxSettleDelay; i++ {
		d *= 2
	}
	return min(d, MaxSettleDelay)
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
