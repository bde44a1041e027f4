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

// row is one key's entry: a claim (no receipt yet) or a receipt.
type row struct {
	key         string
	token       string
	fingerprint string
	receipt     []byte // nil while the row is a claim
	expires     time.Time
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

// Claim claims key for c unless a live receipt or another live claim holds
// it. An expired row is treated as absent and replaced: that is how a key
// whose holder died is taken over. A claim with c's own token is Claimed
// again, its lease renewed, so a call retried after its answer was lost
// does no harm.
func (o *Object) Claim(key string, c intake.Claim) intake.Record {
	now := o.now()
	r, ok := o.rows.get(key)
	switch {
	case ok && now.Before(r.expires) && r.receipt != nil:
		return intake.Record{State: intake.Stored, Receipt: r.receipt, Fingerprint: r.fingerprint, Expires: r.expires}
	case ok && now.Before(r.expires) && r.token != c.Token:
		return intake.Record{State: intake.Held, Fingerprint: r.fingerprint}
	}
	// Absent, expired, or this token's own claim retried: (re)claim, which
	// renews a retried claim's lease.
	o.rows.put(row{key: key, token: c.Token, fingerprint: c.Fingerprint, expires: now.Add(c.Lease)})
	o.scheduleSweep(now)
	return intake.Record{State: intake.Claimed}
}

// Commit stores r under key if c's claim still holds it, even past its
// lease as long as no other request took the key over. Otherwise it
// returns intake.ErrLostClaim and stores nothing: a slow request never
// overwrites another's receipt. A commit repeated with the same token is a
// success that changes nothing.
func (o *Object) Commit(key string, c intake.Claim, r intake.Receipt) error {
	cur, ok := o.rows.get(key)
	switch {
	case !ok || cur.token != c.Token:
		return intake.ErrLostClaim
	case cur.receipt != nil:
		return nil
	}
	o.rows.put(row{key: key, token: c.Token, fingerprint: r.Fingerprint, receipt: r.Body, expires: o.now().Add(r.TTL)})
	return nil
}

// Release deletes c's claim on key; a receipt, or another's claim, stays.
func (o *Object) Release(key string, c intake.Claim) {
	if cur, ok := o.rows.get(key); ok && cur.token == c.Token && cur.receipt == nil {
		o.rows.delete(key)
	}
}

// Lookup returns what is live under key, changing nothing.
func (o *Object) Lookup(key string) intake.Record {
	r, ok := o.rows.get(key)
	switch {
	case !ok || !o.now().Before(r.expires):
		return intake.Record{State: intake.Absent}
	case r.receipt != nil:
		return intake.Record{State: intake.Stored, Receipt: r.receipt, Fingerprint: r.fingerprint, Expires: r.expires}
	}
	return intake.Record{State: intake.Held, Fingerprint: r.fingerprint}
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
