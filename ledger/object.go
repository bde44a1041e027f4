// Package ledger is the Durable Object order ledger: claims and receipts
// kept by SQLite-backed Durable Objects, which run one call at a time over
// strongly consistent storage, so a key places at most one order however
// many isolates and locations its requests reach.
//
// Object holds the decisions and runs inside the Durable Object, each
// method one synchronous step over the object's SQL storage; Client (in the
// Worker) and Memory (in tests) reach it as an intake.Store.
package ledger

import (
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// sweepEvery is how often an object deletes its expired rows. Expired rows
// are never served, so the sweep only bounds storage, and a long interval
// batches deletes: one alarm, many rows.
const sweepEvery = 10 * time.Minute

// row is one key's entry: a claim, an open key (a claim released with its
// order id kept), or an outcome.
type row struct {
	key         string
	token       string // the claim's; empty once the key is open
	fingerprint string
	orderID     string
	acceptedAt  time.Time
	receipt     []byte // the outcome; nil while the row is a claim or open
	rejected    bool
	// leaseUntil is when a claim stops holding the key; zero in rows
	// written before claims had leases of their own, whose claims hold
	// until the row expires.
	leaseUntil time.Time
	expires    time.Time
}

// holds reports whether r is a claim that holds its key at now.
func (r row) holds(now time.Time) bool {
	if r.token == "" || r.receipt != nil {
		return false
	}
	if r.leaseUntil.IsZero() {
		return now.Before(r.expires)
	}
	return now.Before(r.leaseUntil)
}

// record is r as intake sees it at now.
func (r row) record(now time.Time) intake.Record {
	rec := intake.Record{Fingerprint: r.fingerprint, OrderID: r.orderID, AcceptedAt: r.acceptedAt}
	switch {
	case !now.Before(r.expires):
		return intake.Record{State: intake.Absent}
	case r.receipt != nil:
		rec.State, rec.Body, rec.Rejected, rec.Expires = intake.Stored, r.receipt, r.rejected, r.expires
	case r.holds(now):
		rec.State = intake.Held
	case r.orderID != "":
		rec.State = intake.Open
	default:
		return intake.Record{State: intake.Absent}
	}
	return rec
}

// table is an object's storage: SQLite in a Durable Object, a map in
// Memory. Each method is one step; an Object method's steps run with
// nothing in between.
type table interface {
	get(key string) (row, bool)
	put(r row)
	delete(key string)
	// deleteExpired deletes the rows expired at now and reports whether
	// any row remains.
	deleteExpired(now time.Time) (remaining bool)
	// nextSweep is when the sweep alarm is set for; zero when none is.
	nextSweep() time.Time
	setNextSweep(at time.Time)
	// count is how many rows there are, expired ones included.
	count() int
}

// Object is one ledger object's logic. Its methods do no I/O but their
// table's, and never wait, so inside a Durable Object each one runs whole
// before the next call starts: that makes a claim and a commit atomic.
type Object struct {
	rows table
	now  func() time.Time
	// setAlarm asks the runtime to call Sweep at the given time.
	setAlarm func(at time.Time)
}

// Claim claims key for c unless a live outcome or another live claim
// holds it. An expired row is treated as absent and replaced. An open key,
// or one whose claim's lease ran out, is taken over with the order id it
// keeps (returned with Claimed), unless it is another order's: then it is
// returned as it is. A claim with c's own token is Claimed again, its lease
// renewed, so a call retried after its answer was lost does no harm.
func (o *Object) Claim(key string, c intake.Claim) intake.Record {
	now := o.now()
	r, ok := o.rows.get(key)
	rec := intake.Record{State: intake.Absent}
	if ok {
		rec = r.record(now)
	}
	switch {
	case rec.State == intake.Stored:
		return rec
	case rec.State == intake.Held && r.token != c.Token:
		return rec
	case rec.State == intake.Absent:
		r = row{key: key, fingerprint: c.Fingerprint, orderID: c.OrderID, acceptedAt: c.AcceptedAt,
			expires: now.Add(max(c.Lease, c.Keep))}
	case c.Fingerprint != "" && r.fingerprint != "" && c.Fingerprint != r.fingerprint:
		return rec // open, and another order's
	}
	// Absent, open, or this token's own claim retried: (re)claim, keeping
	// the order id the row has.
	r.token, r.leaseUntil = c.Token, now.Add(c.Lease)
	if r.fingerprint == "" {
		r.fingerprint = c.Fingerprint
	}
	o.rows.put(r)
	o.scheduleSweep(now)
	claimed := intake.Record{State: intake.Claimed, Fingerprint: r.fingerprint}
	if r.orderID != c.OrderID {
		claimed.OrderID, claimed.AcceptedAt = r.orderID, r.acceptedAt
	}
	return claimed
}

// Commit stores r under key if c's claim still holds it, even past its
// lease as long as no other request took the key over. Otherwise it
// returns intake.ErrLostClaim and stores nothing: a slow request never
// overwrites another's outcome. A commit repeated with the same token is a
// success that changes nothing.
func (o *Object) Commit(key string, c intake.Claim, r intake.Result) error {
	cur, ok := o.rows.get(key)
	switch {
	case !ok || cur.token != c.Token:
		return intake.ErrLostClaim
	case cur.receipt != nil:
		return nil
	}
	cur.fingerprint, cur.receipt, cur.rejected = r.Fingerprint, r.Body, r.Rejected
	cur.leaseUntil, cur.expires = time.Time{}, o.now().Add(r.TTL)
	o.rows.put(cur)
	return nil
}

// Release ends c's claim on key; an outcome, or another's claim, stays.
// The key is left open with c's order id if the order may have reached the
// gateway: c says so, or the row kept its order id from an earlier claim
// (this claim's answer may have been lost before the Worker learnt it).
// Otherwise the row goes.
func (o *Object) Release(key string, c intake.Claim) {
	cur, ok := o.rows.get(key)
	switch {
	case !ok || cur.token != c.Token || cur.receipt != nil:
		return
	case c.Sent:
		cur.orderID, cur.acceptedAt = c.OrderID, c.AcceptedAt
		fallthrough
	case cur.orderID != c.OrderID:
		cur.token, cur.leaseUntil = "", time.Time{}
		o.rows.put(cur)
	default:
		o.rows.delete(key)
	}
}

// Lookup returns what is live under key, changing nothing.
func (o *Object) Lookup(key string) intake.Record {
	r, ok := o.rows.get(key)
	if !ok {
		return intake.Record{State: intake.Absent}
	}
	return r.record(o.now())
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
// and when its next sweep is due (zero for none): what an operator, or a
// test, needs to see that expiry runs.
func (o *Object) Stats() (rows int, nextSweep time.Time) {
	return o.rows.count(), o.rows.nextSweep()
}

// scheduleSweep sets the sweep alarm unless one is already set.
func (o *Object) scheduleSweep(now time.Time) {
	if at := o.rows.nextSweep(); !at.IsZero() && now.Before(at) {
		return
	}
	at := now.Add(sweepEvery)
	o.rows.setNextSweep(at)
	o.setAlarm(at)
}
