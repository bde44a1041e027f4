// Package ledger is the Durable Object order ledger: claims and receipts
// kept by SQLite-backed Durable Objects, which run one call at a time over
// strongly consistent storage, so a key places at most one order however
// many isolates and locations its requests reach.
//
// Object holds the decisions and runs inside the Durable Object, each
// method one synchronous step over the object's SQL storage; Client (in the
// Worker) and MemoryStore (in tests) reach it as an intake.Store.
package ledger

import (
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/panichook"
	"github.com/edge-orders/edge-orders/order"
)

// sweepEvery is how often an object deletes its expired rows. Expired rows
// are never served, so the sweep only bounds storage, and a long interval
// batches deletes: one alarm, many rows.
const sweepEvery = 10 * time.Minute

// row is one key's entry: a claim, an open key (a claim released with its
// order id kept), or an outcome.
type row struct {
	key         string
	client      string // the key's client, so a due row can be named
	token       string // the claim's; empty once the key is open
	fingerprint string
	orderID     string
	acceptedAt  time.Time
	// order is the claim's order (hasOrder), kept for the settler.
	order    order.Order
	hasOrder bool
	receipt  []byte // the outcome; nil while the row is a claim or open
	rejected bool
	// leaseUntil is when a claim stops holding the key; zero in rows
	// written before claims had leases of their own, whose claims hold
	// until the row expires.
	leaseUntil time.Time
	// attempts counts the gateway calls without an answer stored; due is when
	// the settler is due for the key (zero: never): the lease's end for a
	// claim, whose holder may die, and the backoff's end for an open key.
	// The row is the settler's outbox: written in the claim's own step,
	// it cannot be lost however the request ends.
	attempts int
	due      time.Time
	giveUp   intake.GiveUp
	// tentative marks a claim that is not yet the key's (intake.Claim's
	// StageTentative): once its lease ends the key is absent, not open.
	tentative bool
	// sent marks a row whose order id may have reached the gateway: it
	// was released open, so a release that does not say so (a claim
	// whose answer was lost, released after it took the row over) leaves
	// it open instead of deleting it.
	sent    bool
	expires time.Time
	// phase is the key's phase as the row's last write left it, beside
	// the flags it follows from (put); zero in rows written before
	// phases were.
	phase intake.Phase
}

// record is r as intake sees it at now.
func (r row) record(now time.Time) intake.Record {
	rec := intake.Record{Fingerprint: r.fingerprint, OrderID: r.orderID, AcceptedAt: r.acceptedAt,
		Order: r.order, HasOrder: r.hasOrder, Attempts: r.attempts, NextAttempt: r.due, GiveUp: r.giveUp,
		WrittenPhase: r.phase}
	switch {
	case !now.Before(r.expires):
		return intake.Record{State: intake.Absent}
	case r.receipt != nil:
		return intake.Record{State: intake.Stored, Body: r.receipt, Rejected: r.rejected, Fingerprint: r.fingerprint, Expires: r.expires,
			WrittenPhase: r.phase}
	}
	if rec.State = intake.ClaimState(r.token == "", r.leaseUntil, r.tentative, r.orderID, now); rec.State == intake.Absent {
		return intake.Record{State: intake.Absent}
	}
	return rec
}

// table is an object's storage: SQLite in a Durable Object, a map in
// MemoryStore. Each method is one step; an Object method's steps run with
// nothing in between.
type table interface {
	get(key string) (row, bool)
	put(r row)
	delete(key string)
	// deleteExpired deletes the rows expired at now and reports whether
	// any row remains.
	deleteExpired(now time.Time) (remaining bool)
	// dueRows returns up to limit rows due for the settler at now, the
	// longest due first; nextDue is the earliest due time of any row,
	// zero for none. Neither counts a row expired at now, which the
	// settler finds absent and leaves due until the sweep deletes it:
	// enough of them would fill every batch.
	dueRows(now time.Time, limit int) []row
	nextDue(now time.Time) time.Time
	// nextSweep is when the next sweep is due; zero when none is.
	nextSweep() time.Time
	setNextSweep(at time.Time)
	// alarm is when the object's alarm is set for, as last set; zero when
	// none is.
	alarm() time.Time
	setAlarm(at time.Time)
	// count is how many rows there are, expired ones included.
	count() int
	// scan returns up to limit rows without an outcome after the key
	// after, in key order: an operator's listing (admin.go); read is how
	// many rows the store read to find them.
	scan(after string, limit int) (rows []row, read int)
	// purged is the tombstone kept under name, one purge call's (its
	// token and key, Object.Purge), if one is kept; putPurged keeps p
	// under p.key until p.until, and deleteExpired deletes it then.
	purged(name string) (purged, bool)
	putPurged(p purged)
}

// Object is one ledger object's logic. Its methods do no I/O but their
// table's, and never wait, so inside a Durable Object each one runs whole
// before the next call starts: that makes a claim and a commit atomic.
type Object struct {
	rows table
	now  func() time.Time
	// setAlarm asks the runtime to call the alarm handler at the given
	// time.
	setAlarm func(at time.Time)
	// listRowsRead is how many rows the last List read.
	listRowsRead int
}

// Claim claims key for c unless a live outcome or another live claim
// holds it. An expired row is treated as absent and replaced. An open key,
// or one whose claim's lease ran out, is taken over with the order id,
// order and attempts it keeps (returned with them, Took EventTakeOver), unless it is
// another order's: then it is returned as it is. A claim with c's own
// token is claimed again, its lease renewed, so a call retried after its
// answer was lost does no harm. The settler's claim (c.By) takes over
// an open key once it is due, not one given up on; an operator's, any
// open key; neither claims a free key. intake.Step decides which; it fails,
// and Claim with it, on a move the table has no row for.
//
// A row is kept at least until the claim's lease ends and c.KeepUntil,
// and never less long than before: a takeover never outlives its row.
func (o *Object) Claim(key intake.Key, c intake.Claim) (intake.Record, error) {
	panichook.At(panichook.InObject, key.String())
	now := o.now()
	r, ok := o.rows.get(key.String())
	rec := intake.Record{State: intake.Absent}
	if ok {
		rec = r.record(now)
	}
	switch {
	case rec.State == intake.Held && r.token == c.Token:
		// This claim's own, retried after its answer was lost: renewed,
		// as it is. No move of the table's.
	default:
		move, err := intake.Step(rec, c, now)
		switch {
		case err != nil:
			return intake.Record{}, err
		case move.Event == intake.EventNone:
			return rec, nil
		case move.Event == intake.EventClaim:
			r = row{key: key.String()}
		}
		// The row is what Step made of the claim: with the key's order, or
		// the claim's where the key kept none (TakeOver).
		c = move.Claim
		r.fingerprint, r.order, r.hasOrder = c.Fingerprint, c.Order, c.HasOrder()
		r.orderID, r.acceptedAt, r.attempts, r.giveUp = c.OrderID, c.AcceptedAt, c.Attempts, c.GiveUp
		// An open row's order id may have reached the gateway (its last
		// holder may have died mid-call): the row remembers it, so that
		// this claim's release never deletes it.
		r.sent, r.tentative = move.Event == intake.EventTakeOver, c.Stage == intake.StageTentative
	}
	r.token, r.leaseUntil = c.Token, now.Add(c.Lease)
	// A tentative claim is kept for its lease only: its order id reaches
	// the gateway only once the claim is made firm.
	r.tentative = r.tentative && c.Stage == intake.StageTentative
	r.expires = latest(r.expires, r.leaseUntil)
	if !r.tentative {
		r.expires = latest(r.expires, c.KeepUntil)
	}
	r.due = intake.DueAt(r.claim(), false, r.leaseUntil, now)
	o.put(key, r, now)
	o.scheduleSweep(now)
	o.scheduleAlarm(r.due)
	// A takeover says so, with what the key kept, every time it is asked
	// (r.sent: it took the row over, and Step's takeover set it): a
	// takeover retried with its own token (its answer was lost, and the
	// RPC sent again) too, whose order id, derived from the key and the
	// order, may be its own.
	claimed := intake.Record{State: intake.Held, Took: intake.EventClaim, Fingerprint: r.fingerprint}
	if r.sent || r.orderID != c.OrderID {
		claimed.Took = intake.EventTakeOver
		claimed.OrderID, claimed.AcceptedAt, claimed.Attempts, claimed.GiveUp = r.orderID, r.acceptedAt, r.attempts, r.giveUp
		// When the key was due, as KV's takeover says too: a claim
		// released unsent (a refused resolve) leaves it due then.
		claimed.NextAttempt = rec.NextAttempt
		claimed.Order, claimed.HasOrder = r.order, r.hasOrder
	}
	return claimed, nil
}

// claim is what r keeps of its claim, as intake.DueAt reads it: its
// order, its give-up and the check it awaits, and how long the row is
// kept.
func (r row) claim() intake.Claim {
	c := intake.Claim{Fingerprint: r.fingerprint, Order: r.order, GiveUp: r.giveUp, NextAttempt: r.due, KeepUntil: r.expires}
	if r.tentative {
		c.Stage = intake.StageTentative
	}
	return c
}

// Commit stores r under key if c's claim still holds it, even past its
// lease as long as no other request took the key over. Otherwise it
// returns intake.ErrLostClaim and stores nothing: a slow request never
// overwrites another's outcome. A commit repeated with the same token is a
// success that changes nothing. A tentative claim whose lease ended freed
// the key, and holds nothing to commit. Only a final outcome starts the
// receipt's TTL.
func (o *Object) Commit(key intake.Key, c intake.Claim, r intake.Result) error {
	cur, ok := o.rows.get(key.String())
	now := o.now()
	switch {
	case !ok || c.Token == "" || cur.token != c.Token:
		// An open row's token is empty: a claim without one holds
		// nothing.
		return intake.ErrLostClaim
	case cur.receipt != nil:
		return nil
	case cur.tentative && cur.record(now).State == intake.Absent:
		return intake.ErrLostClaim
	}
	cur.fingerprint, cur.receipt, cur.rejected, cur.tentative = r.Fingerprint, r.Body, r.Rejected, false
	// The outcome is kept its TTL, and at least as long as the claim
	// kept the key: a Fallback's record of the key, which this row's
	// adoption kept the claim for, must not outlive it.
	cur.leaseUntil, cur.due, cur.expires = time.Time{}, time.Time{}, latest(now.Add(r.TTL), c.KeepUntil)
	o.put(key, cur, now)
	return nil
}

// Release ends c's claim on key; an outcome, or another's claim, stays.
// The key is left open with c's order id if the order may have reached the
// gateway: c says so, or the row was open before c took it over (this
// claim's answer may have been lost before the Worker learnt it), or it
// kept another order id from an earlier claim. A row's order id and time,
// once sent, never change, and what the row knows joins what c says: a
// key given up on stays so, its attempts never fall, and it is kept no
// less long. Otherwise the row goes. intake.StepRelease decides which.
func (o *Object) Release(key intake.Key, c intake.Claim) error {
	cur, ok := o.rows.get(key.String())
	if !ok || c.Token == "" || cur.token != c.Token || cur.receipt != nil {
		return nil
	}
	now := o.now()
	joined := c
	joined.Attempts = max(cur.attempts, c.Attempts)
	joined.KeepUntil = latest(cur.expires, c.KeepUntil)
	if c.GiveUp == intake.NotGivenUp && cur.giveUp.Unresolved() {
		// A claim that took the key over without learning its give-up
		// (the answer to its Claim was lost) leaves the key as it found
		// it: given up on, or awaiting the give-up's check, due when the
		// row says (what TakeOver would have carried).
		joined.GiveUp, joined.NextAttempt = cur.giveUp, cur.due
	}
	move, err := intake.StepRelease(joined, intake.PhaseOf(cur.record(now)), cur.sent || cur.orderID != c.OrderID)
	switch {
	case err != nil:
		return err
	case move.Event == intake.EventNone:
		// A commit replaces the claim in its row: a claim whose row holds
		// no outcome has none stored to stand beside. And a tentative
		// claim whose lease ended freed the key: it holds nothing.
		return nil
	case move.Event == intake.EventReleaseUnsent:
		o.rows.delete(key.String())
		return nil
	}
	if c.Stage == intake.StageSent && !cur.sent {
		// Until they are sent, the row's order id and time are this
		// claim's own, and an adopted order id replaces them. Once
		// sent, a client may have been answered with them: a claim
		// that took the row over without learning them (its answer
		// was lost) must not replace them with its own.
		cur.orderID, cur.acceptedAt = c.OrderID, c.AcceptedAt
	}
	cur.sent = true
	cur.token, cur.leaseUntil, cur.tentative = "", time.Time{}, false
	cur.attempts, cur.giveUp, cur.expires = joined.Attempts, joined.GiveUp, joined.KeepUntil
	due := cur.claim()
	due.NextAttempt = joined.NextAttempt
	cur.due = intake.DueAt(due, true, time.Time{}, now)
	o.put(key, cur, now)
	o.scheduleAlarm(cur.due)
	return nil
}

// put writes r, key's row, at now, with the phase it leaves the key in
// and the key's client, which names a due row (Alarm) and a listed one:
// a row written before the client column reads none, and would be named
// as another key, an open Worker's, until a write names it again.
func (o *Object) put(key intake.Key, r row, now time.Time) {
	r.client, r.phase = key.Client, intake.PhaseOf(r.record(now))
	o.rows.put(r)
}

// Lookup returns what is live under key, changing nothing.
func (o *Object) Lookup(key intake.Key) intake.Record {
	r, ok := o.rows.get(key.String())
	if !ok {
		return intake.Record{State: intake.Absent}
	}
	return r.record(o.now())
}

// Alarm begins the object's alarm: it sweeps the expired rows if the sweep
// is due, and returns the keys due for the settler, at most limit. The
// caller settles each, then calls AlarmDone. Alarms run at least once, so
// it may run twice: a key settled meanwhile is no longer due.
func (o *Object) Alarm(limit int) []intake.Key {
	now := o.now()
	o.rows.setAlarm(time.Time{}) // this alarm fired
	if next := o.rows.nextSweep(); !next.IsZero() && !now.Before(next) {
		o.Sweep()
	}
	var keys []intake.Key
	for _, r := range o.rows.dueRows(now, limit) {
		id := r.key
		if r.client != "" {
			id = r.key[len(r.client)+1:]
		}
		keys = append(keys, intake.Key{Client: r.client, ID: id})
	}
	return keys
}

// SettleBatch bounds the keys one alarm settles; more are left due, and
// the next alarm comes a second later.
const SettleBatch = 32

// MisconfiguredRetry is how soon the next alarm comes after one that
// could settle nothing, the Worker being misconfigured (its requests say
// which setting in their 500s): every alarm would find the same keys due
// until a fix is deployed, and one each second would cost an invocation
// each second for nothing. A fix resumes the settling within it.
const MisconfiguredRetry = time.Minute

// RunAlarm runs the object's alarm (Alarm, then AlarmDone) with settle,
// which settles the keys due, at most SettleBatch; nil when the Worker is
// misconfigured, which leaves them due for MisconfiguredRetry. It returns
// settle's error.
func (o *Object) RunAlarm(settle func([]intake.Key) error) error {
	return runAlarm(o.Alarm, o.AlarmDone, settle)
}

// runAlarm is RunAlarm over an object's Alarm and AlarmDone, which
// MemoryStore calls under its lock.
func runAlarm(begin func(limit int) []intake.Key, done func(retryDue time.Duration), settle func([]intake.Key) error) error {
	keys := begin(SettleBatch)
	retry := intake.FirstSettleDelay
	var err error
	switch {
	case settle == nil:
		retry = MisconfiguredRetry
	case len(keys) > 0:
		err = settle(keys)
	}
	done(retry)
	return err
}

// AlarmDone sets the next alarm: for the earliest due key, but no sooner
// than retryDue from now (a key still due was just tried), or for the next
// sweep.
func (o *Object) AlarmDone(retryDue time.Duration) {
	now := o.now()
	if due := o.rows.nextDue(now); !due.IsZero() {
		o.scheduleAlarm(latest(due, now.Add(retryDue)))
	}
	if sweep := o.rows.nextSweep(); !sweep.IsZero() {
		o.scheduleAlarm(sweep)
	}
}

// Sweep deletes the expired rows and sets the next sweep while rows
// remain. Alarms run at least once, so it may run twice; the second run
// finds nothing to do.
func (o *Object) Sweep() {
	now := o.now()
	o.rows.setNextSweep(time.Time{})
	if o.rows.deleteExpired(now) {
		o.scheduleSweep(now)
	}
}

// Stats reports how many rows the object stores, expired ones included,
// when its next sweep is due, and when its alarm is set for (zero for
// none): what an operator, or a test, needs to see that expiry and the
// settler run.
func (o *Object) Stats() (rows int, nextSweep, alarm time.Time) {
	return o.rows.count(), o.rows.nextSweep(), o.rows.alarm()
}

// scheduleSweep sets the next sweep unless one is already set.
// A sweep that is due and has not run yet stays due: moved on, by every
// claim that lands before its alarm runs, it would never run.
func (o *Object) scheduleSweep(now time.Time) {
	at := o.rows.nextSweep()
	switch {
	case at.IsZero():
		at = now.Add(sweepEvery)
		o.rows.setNextSweep(at)
	case now.Before(at):
		return
	}
	o.scheduleAlarm(at)
}

// scheduleAlarm sets the object's one alarm for at, unless it is already
// set for sooner and has not fired yet; zero asks for nothing. The sweep
// and the settler share the alarm, which is set for whichever is due first.
func (o *Object) scheduleAlarm(at time.Time) {
	if at.IsZero() {
		return
	}
	if cur := o.rows.alarm(); !cur.IsZero() && !at.Before(cur) {
		if cur.After(o.now()) {
			return
		}
		// Due and not run yet (Alarm clears it as it runs): never moved
		// later, which would have the due keys wait for at, but set
		// again, in case the runtime lost it.
		at = cur
	}
	o.rows.setAlarm(at)
	o.setAlarm(at)
}

// latest is the latest of times.
func latest(times ...time.Time) time.Time {
	var l time.Time
	for _, t := range times {
		if t.After(l) {
			l = t
		}
	}
	return l
}
