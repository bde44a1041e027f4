package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

// A migration mid-run: the history starts in KV mode, with its settle
// queue and Cron sweep, and at a step the driver draws the Worker is
// deployed in ledger mode with the KV namespace as its fallback
// (KV_FALLBACK_UNTIL) and the route moved: every isolate starts over in
// ledger mode (the old ones die with what they were doing), the KV-mode
// Worker's sweep and settle queue stop, and the ledger's alarm and the
// adoption sweep start. From then on an operator purges and resolves keys
// through the admin API, as the runbook has them do (docs/operating.md).
//
// What it checks, beside every other invariant:
//   - every key KV left open at the switch is in the ledger, final in KV,
//     purged or expired within adoptionBound of the history's quiet time,
//     and settled or reported unresolved by its end (checkSettled);
//   - a purged receipt is never stored again, nor replayed past the
//     receipt cache's minute, unless a KV read that missed the purge's
//     delete (a named stale read) brought it back;
//   - no order is placed twice across the switch (checkOrderIDs).

// migration is a history's switch from KV mode to ledger mode.
type migration struct {
	step int       // the driver's step at which the route moves
	at   time.Time // when it moved; zero before
	// leftOpen are the keys KV held open or claimed, with an order id,
	// at the switch; pending is how many pending:<key> names KV held
	// then: the adoption's walk covers them all within pending/sweepLimit
	// runs plus one.
	leftOpen []keyName
	pending  int
	bounded  bool // adoptionBound checked
	purges   map[keyName][]*purge
	// resolvers are the operators' resolves, each its actor's.
	resolvers map[*actor]bool
	// outageUntil ends an OMS outage that began just before the switch,
	// with a burst of new keys: KV mode leaves them all open, more than
	// one adoption run takes.
	outageUntil time.Time
}

// purge is an operator's purge that erased body.
type purge struct {
	start, end time.Time
	body       []byte
	by         *actor
	// seen is the receipt the operator's detail showed, which the purge
	// names; touched is true once the purge deleted a copy of it in
	// either store, and erased once the key no longer serves it,
	// whatever the purge answered.
	seen            []byte
	touched, erased bool
	// touchedAt is when the purge last deleted a stored outcome in either
	// store, and touchedBody that outcome.
	touchedAt   time.Time
	touchedBody []byte
	// deleted is when the purge last deleted the key's stored outcome in
	// the store its absence is judged in (markErased), as it wrote it,
	// and deletedBody that outcome; zero and nil if it never did.
	deleted     time.Time
	deletedBody []byte
}

// receiptCacheTTL is how long another isolate may replay a purged
// receipt from memory (intake.Admin.Purge): the receipt cache's minute,
// rounded up to KV's seconds.
const receiptCacheTTL = 61 * time.Second

// drawMigration draws, for a history that migrates from KV, whether it
// runs in KV mode first and moves mid-run.
func (w *world) drawMigration() {
	if !w.migrating || w.choose(2, "migration mid-run") == 0 {
		return
	}
	w.mig = &migration{step: -1, purges: make(map[keyName][]*purge), resolvers: make(map[*actor]bool)}
	w.mode = KVMode
	w.count("history migrating mid-run")
}

// planSwitch draws the step of steps at which the route moves.
func (w *world) planSwitch(steps int) {
	if w.mig != nil {
		w.mig.step = w.choose(steps, "switch step")
	}
}

// migrationStep runs the migration's part of the driver's step i: the
// switch at its step, and after it, now and then, an operator's action
// on k's key instead of the step's own. It reports whether it took the
// step.
func (w *world) migrationStep(i int, k *clientKey) bool {
	m := w.mig
	switch {
	case m == nil:
		return false
	case i == m.step:
		w.switchToLedger()
		return false
	case w.choose(4, "operator acts") != 0:
		return false
	}
	inst := w.instances[w.choose(len(w.instances), "operator isolate")]
	switch {
	case m.at.IsZero():
		// KV mode: the runbook's resolve, on a key a client may retry.
		w.operatorResolve(inst, k)
	case w.choose(2, "operator action") == 0:
		w.operatorPurge(inst, k)
	default:
		w.operatorResolve(inst, k)
	}
	return true
}

// adminStore is the store an operator's admin API lists and purges: KV's
// before the switch, the ledger's after.
func (w *world) adminStore() intake.AdminStore {
	if w.mode == KVMode {
		return w.kvStore
	}
	return w.ledger
}

// switchToLedger moves the route to the ledger-mode Worker, in half the
// histories in the middle of an OMS outage.
func (w *world) switchToLedger() {
	m := w.mig
	if w.choose(2, "OMS outage across the switch") == 1 {
		w.count("OMS outage across the switch")
		m.outageUntil = w.now().Add([]time.Duration{time.Minute, 10 * time.Minute, time.Hour}[w.choose(3, "OMS outage")])
		w.logf("the OMS is down until %s", m.outageUntil.Format("15:04:05.000"))
		w.burst(w.instances[0], 3*sweepLimit/2)
		w.sched.sleep(10 * time.Second) // the burst's requests end
	}
	w.count("route moved to the ledger")
	w.logf("the route moves to the ledger-mode Worker")
	was := w.direct
	w.direct = true
	for _, k := range w.keys {
		rec, _ := w.kvStore.Lookup(context.Background(), k.key)
		if (rec.State == intake.Open || rec.State == intake.Held) && rec.OrderID != "" {
			m.leftOpen = append(m.leftOpen, k.key.String())
		}
	}
	for name := range w.ns.keys {
		if strings.HasPrefix(name, "pending:") && w.ns.latest(name) != nil {
			m.pending++
		}
	}
	w.direct = was
	w.mode, m.at = LedgerMode, w.now()
	for _, inst := range w.instances {
		w.kill(inst) // a new isolate, in ledger mode
	}
	w.sched.spawn(&actor{name: "alarms", kind: daemonActor}, w.alarms)
	w.sched.spawn(&actor{name: "cron", kind: daemonActor}, w.cron("adoption sweep", w.adopt))
}

// operator is an admin API request's actor on inst, about k's key.
func (w *world) operator(inst *instance, k *clientKey, what string) *actor {
	return &actor{name: fmt.Sprintf("operator %s %s #%d @%d", what, k.key, len(w.answers), inst.id), inst: inst, gen: inst.gen,
		inv: &invocation{kind: "request"}, key: k.key.String(), kind: requestActor}
}

// operatorPurge purges k's key, as an operator does on a client's erasure
// request, and records what it erased. A purge is recorded as it starts:
// one that fails may have taken effect.
func (w *world) operatorPurge(inst *instance, k *clientKey) {
	w.count("operator purge")
	a := w.operator(inst, k, "purge")
	name := k.key.String()
	p := &purge{start: w.now(), by: a}
	w.mig.purges[name] = append(w.mig.purges[name], p)
	w.sched.spawn(a, func() {
		// It ends however its actor does: a purge never done is not one
		// still running. It erased the receipt if it deleted a copy and
		// the key no longer serves it, whatever it answered.
		defer func() {
			p.end = w.now()
			if rec := w.peek(name); p.touched && (rec.State != intake.Stored || !bytes.Equal(rec.Body, p.seen)) {
				p.erased = true
			}
		}()
		// As the ops page does: the detail first, then the purge of the
		// order it showed.
		admin := intake.NewAdmin(inst.svc, w.adminStore())
		seen, err := admin.Inspect(context.Background(), k.key)
		if err != nil {
			return
		}
		if seen.State == intake.Stored {
			p.seen = seen.Body
		}
		rec, err := admin.Purge(context.Background(), k.key, intake.OrderIDOf(seen))
		w.logf("%s: %v %v", a.name, rec.State, err)
		if err != nil {
			return // it may have taken effect all the same (checkRefines marks it)
		}
		w.count("key purged")
		p.body, p.erased, p.touched = rec.Body, true, true
		delete(w.receipts, name) // no longer stored
	})
}

// operatorResolve resolves k's key if it is open, with what the OMS did
// with its order id, as the runbook has an operator look it up there.
func (w *world) operatorResolve(inst *instance, k *clientKey) {
	w.count("operator resolve")
	a := w.operator(inst, k, "resolve")
	w.mig.resolvers[a] = true
	w.sched.spawn(a, func() {
		ctx := context.Background()
		admin := intake.NewAdmin(inst.svc, w.adminStore())
		// As the runbook has it: a key from the attention list, if any.
		page, _ := admin.List(ctx, intake.ListQuery{Clients: []string{"desk-a", "desk-b", ""}, States: intake.Unknown | intake.Unresolved, Limit: 10})
		if n := len(page.Keys); n > 0 {
			k = &clientKey{key: page.Keys[w.choose(n, "operator picks")].Key}
			a.key = k.key.String()
		}
		shown := w.now()
		rec, err := admin.Inspect(ctx, k.key)
		if err == nil && rec.State == intake.Stored && w.choose(2, "operator resolves a final key") == 1 {
			w.resolveFinal(ctx, admin, a, k.key, rec, shown)
			return
		}
		if err != nil || rec.State != intake.Open {
			return
		}
		got, ok := w.oms.orders[rec.OrderID]
		if !ok {
			return // the OMS never saw it: the operator waits for the settler
		}
		res := intake.Resolution{Status: order.StatusAccepted, OrderID: rec.OrderID}
		if !got.accepted {
			res = intake.Resolution{Status: order.StatusRejected, Reason: "rejected by the simulated OMS", OrderID: rec.OrderID}
		}
		rec, err = admin.Resolve(ctx, k.key, res)
		w.logf("%s: %s %v %v", a.name, res.Status, rec.State, err)
		w.checkNoRow(a.name, err)
		event, stale := w.ownKVEvent(k.key.String(), a, nil)
		switch {
		case err == nil:
			w.count("key resolved")
		case errors.Is(err, intake.ErrNotFound) && stale:
			// Its detail and its claim read the key apart, one of them
			// stale.
			w.allowBy("a resolve of a key a stale read showed open", event)
		case errors.Is(err, intake.ErrNotFound) && w.kvExpiredBetween("pending:"+k.key.String(), shown, w.now()):
			// KV's claim reached its KeepUntil while the resolve ran (its
			// reads of KV stalled), before the ledger adopted the key.
			w.count("a resolve told not found of a key KV's claim expired from while it ran")
		case !errors.Is(err, intake.ErrInProgress) && !errors.Is(err, intake.ErrOutcomeFinal) && !errors.Is(err, intake.ErrStorageUnavailable) &&
			!errors.Is(err, intake.ErrPrecondition):
			w.violate("%s: resolving an open key failed: %v", a.name, err)
		}
	})
}

// resolveFinal resolves key, whose detail showed its outcome stored at
// shownAt, as an operator acting on a page gone stale may, with what the
// OMS did with the order id shown (or, for one it never saw, what the
// outcome shown says), as operatorResolve does. Invariant: an
// operator is told what the key holds: that its outcome is final, or, if
// a claim has taken the key since the detail (a request copying KV's
// receipt, say), that a request holds it; or storage failed. Any answer
// is allowed once a purge's own delete of the outcome shown (in either
// store), or that outcome's expiry, came since the detail.
func (w *world) resolveFinal(ctx context.Context, admin *intake.Admin, a *actor, key intake.Key, shown intake.Record, shownAt time.Time) {
	w.count("operator resolve of a final key")
	res := intake.Resolution{Status: order.StatusAccepted, OrderID: intake.OrderIDOf(shown)}
	if got, ok := w.oms.orders[res.OrderID]; ok && !got.accepted || !ok && shown.Rejected {
		res.Status, res.Reason = order.StatusRejected, "rejected by the simulated OMS"
	}
	_, err := admin.Resolve(ctx, key, res)
	w.logf("%s: a final key: %v", a.name, err)
	w.checkNoRow(a.name, err)
	name := key.String()
	switch {
	case errors.Is(err, intake.ErrOutcomeFinal) || errors.Is(err, intake.ErrStorageUnavailable):
	case errors.Is(err, intake.ErrInProgress) && !w.heldAt[name].Before(shownAt):
		w.count("a resolve of a final key a claim took since its detail")
	case w.anyPurge(name, func(p *purge) bool {
		id, _, _ := order.ReceiptFields(p.touchedBody)
		return p.touched && !p.touchedAt.Before(shownAt) && id == intake.OrderIDOf(shown)
	}):
		w.count("a resolve of a final key whose outcome a purge erased since its detail")
	case !shown.Expires.IsZero() && !shown.Expires.After(w.now()) || w.kvExpiredBetween("result:"+name, shownAt, w.now()):
		w.count("a resolve of a final key whose outcome expired since its detail")
	default:
		w.violate("%s: resolving a key whose detail showed its outcome stored answered %v, not that it is final", a.name, err)
	}
}

// purgedOutcomeSince reports whether a purge of key deleted, in the store
// its absence is judged in, an outcome of orderID from since on, as its
// own write shows: the order's receipt, stored at since, is gone by the
// purge's hand, not by a bug's.
func (w *world) purgedOutcomeSince(key keyName, orderID string, since time.Time) bool {
	return w.anyPurge(key, func(p *purge) bool {
		return p.deletedNamed(since, w.now(), func(b []byte) bool {
			id, _, _ := order.ReceiptFields(b)
			return id == orderID
		})
	})
}

// anyPurge reports whether ok holds for a purge of key; none runs outside
// a migrating history.
func (w *world) anyPurge(key keyName, ok func(*purge) bool) bool {
	if w.mig == nil {
		return false
	}
	for _, p := range w.mig.purges[key] {
		if ok(p) {
			return true
		}
	}
	return false
}

// kvExpiredBetween reports whether kvKey's latest version, unchanged
// since, reached the end of its TTL after from and by to: the key left KV
// by expiring, as its own write said it would.
func (w *world) kvExpiredBetween(kvKey string, from, to time.Time) bool {
	vs := w.ns.keys[kvKey]
	if len(vs) == 0 {
		return false
	}
	v := vs[len(vs)-1]
	return v.entry != nil && !v.expires.IsZero() && v.expires.After(from) && !v.expires.After(to)
}

// markErased records that a, an operator's purge, deleted key's stored
// outcome in one store (it runs inside the store's call: it reads
// nothing).
func (w *world) markErased(key keyName, a *actor, judged bool, body []byte) {
	if w.mig == nil {
		return
	}
	for _, p := range w.mig.purges[key] {
		if p.by != a {
			continue
		}
		p.touched, p.touchedAt, p.touchedBody = true, w.now(), body
		if judged {
			p.deleted, p.deletedBody = w.now(), body
		}
	}
}

// deletedNamed reports whether p deleted, in the store a key's absence
// is judged in, from from on and at to at the latest, an outcome that
// satisfies is, of the order id it named (any, when its detail showed no
// outcome).
func (p *purge) deletedNamed(from, to time.Time, is func(body []byte) bool) bool {
	named, _, _ := order.ReceiptFields(p.seen)
	deleted, _, _ := order.ReceiptFields(p.deletedBody)
	return !p.deleted.IsZero() && !p.deleted.Before(from) && !p.deleted.After(to) &&
		(p.seen == nil || named == deleted) && is(p.deletedBody)
}

// purgedBetween reports whether a purge of key started from from on, at
// to at the latest, and erased the receipt the key served, or is still
// running.
func (w *world) purgedBetween(key keyName, from, to time.Time) bool {
	return w.purgeBetween(key, from, to, func(p *purge) bool { return p.erased })
}

// purgedAnswer reports whether a purge, whenever it began (its reads may
// have stalled), deleted the receipt a client was given, body, after the
// answer at from and by to, as its own write shows; it counts the excuse.
func (w *world) purgedAnswer(key keyName, body []byte, from, to time.Time) bool {
	if !w.anyPurge(key, func(p *purge) bool {
		return p.deletedNamed(from, to, func(b []byte) bool { return bytes.Equal(b, body) })
	}) {
		return false
	}
	w.count("a final retry's new order after a purge deleted the receipt its client was given")
	return true
}

// purgeDeletedOneOf reports whether a purge of key, whenever it began,
// deleted one of bodies, in the store the key's absence is judged in,
// from from on, at to at the latest, as its own write shows: the key was
// free again since they were created. It counts the excuse.
func (w *world) purgeDeletedOneOf(key keyName, bodies [][]byte, from, to time.Time) bool {
	if !w.anyPurge(key, func(p *purge) bool {
		return p.deletedNamed(from, to, func(b []byte) bool {
			return slices.ContainsFunc(bodies, func(x []byte) bool { return bytes.Equal(x, b) })
		})
	}) {
		return false
	}
	w.count("a receipt created again after a purge that began before the first deleted it")
	return true
}

// purgeTouchedBetween reports whether a purge of key started from from
// on, at to at the latest, and has deleted a copy of the receipt in
// either store: the key may then be gone before the other copy's time. A
// purge still running that has deleted nothing excuses no absence.
func (w *world) purgeTouchedBetween(key keyName, from, to time.Time) bool {
	return w.anyPurge(key, func(p *purge) bool { return p.touched && !p.start.Before(from) && !p.start.After(to) })
}

// purgedOutcomeOf reports whether a purge of key, whenever it began,
// deleted an outcome of orderID (the call's) from from on, at to at the
// latest, in the store the key's absence is judged in, and no move of
// the key there has left orderID on it since (another order's claim that
// lapsed, say, leaves it absent again, and orderID's outcome still gone
// by the purge's delete): a purge that began while the key was not final
// erases an outcome stored while it ran (intake.Admin.Purge), as its own
// write shows. It counts the excuse.
func (w *world) purgedOutcomeOf(key keyName, orderID string, from, to time.Time) bool {
	if !w.anyPurge(key, func(p *purge) bool {
		carried, ok := w.carried[key][orderID]
		return (w.lastMover[key] == p.by || !ok || carried.Before(p.deleted)) && p.deletedNamed(from, to, func(b []byte) bool {
			id, _, _ := order.ReceiptFields(b)
			return id == orderID
		})
	}) {
		return false
	}
	w.count("a key absent after a purge deleted its outcome")
	return true
}

func (w *world) purgeBetween(key keyName, from, to time.Time, took func(*purge) bool) bool {
	return w.anyPurge(key, func(p *purge) bool {
		return (took(p) || p.end.IsZero()) && !p.start.Before(from) && !p.start.After(to)
	})
}

// checkNotPurged: a receipt a purge erased is never stored again, nor
// told to a client past the receipt cache's minute, unless a KV read made
// after the purge missed its delete (KV's documented staleness): allowed,
// naming that read.
func (w *world) checkNotPurged(key keyName, body []byte, what string) {
	if w.mig == nil || body == nil {
		return
	}
	for _, p := range w.mig.purges[key] {
		w.checkPurged(key, body, what, p)
	}
}

// checkPurged is checkNotPurged of one purge, p.
func (w *world) checkPurged(key keyName, body []byte, what string, p *purge) {
	if p.body == nil || !bytes.Equal(p.body, body) || !w.now().After(p.end) {
		return
	}
	if event, ok := w.missedPurge(key, p); ok {
		w.allowBy("a purged receipt brought back by a read that missed the purge", event)
		return
	}
	w.violate("%s: the receipt purged at %s was %s %s later: %s", key, p.end.Format("15:04:05.000"), what, w.now().Sub(p.end), body)
}

// checkAnswerNotPurged is checkNotPurged for what a client was told: a
// replay from another isolate's memory is allowed for the receipt
// cache's minute after the purge.
func (w *world) checkAnswerNotPurged(ans *answer) {
	if w.mig == nil || ans.body == nil {
		return
	}
	for _, p := range w.mig.purges[ans.key] {
		// Each purge whose minute is over: another isolate may tell a
		// receipt a later one purged from memory meanwhile.
		if p.body != nil && bytes.Equal(p.body, ans.body) && ans.start.After(p.end) && !ans.start.Before(p.end.Add(receiptCacheTTL)) {
			w.checkPurged(ans.key, ans.body, "told to a client", p)
		}
	}
}

// replayOfPurged reports whether a, a replay, is of a receipt the key
// held before a purge that a began within the receipt cache's minute
// after: another isolate may replay it from memory that long
// (intake.Admin.Purge; docs/operating.md says so).
func (w *world) replayOfPurged(a *answer) bool {
	if w.mig == nil || a.kind != replayed {
		return false
	}
	for _, p := range w.mig.purges[a.key] {
		// The purge's own isolate forgets the receipt at once. When the
		// request began does not matter (it may have begun at the purge's
		// instant, or waited in flight across it): its answer came after
		// the purge began, and within the receipt cache's minute of the
		// purge's end, from a memory of the receipt stored before it.
		if !p.erased || !bytes.Equal(p.seen, a.body) || a.by.inst == p.by.inst ||
			a.end.Before(p.start) || !a.end.Before(p.end.Add(receiptCacheTTL)) {
			continue
		}
		w.count("a purged receipt replayed from memory within the cache's minute")
		return true
	}
	return false
}

// missedPurge is a KV read of key's entries, made after p began, that
// missed a delete p made, or p's own read that missed the write of the
// receipt it purged, as the stale read it is.
func (w *world) missedPurge(key keyName, p *purge) (*event, bool) {
	for _, kvKey := range []string{"pending:" + key, "result:" + key} {
		for _, m := range w.misses[kvKey] {
			if m.at.Before(p.start) {
				continue
			}
			for _, v := range m.missed {
				if v.entry == nil && v.by == p.by {
					return w.ck.newEvent(staleRead, "%s read %s at %s, missing its delete by %s at %s", actorName(m.reader), kvKey,
						m.at.Format("15:04:05.000"), actorName(p.by), v.at.Format("15:04:05.000")), true
				}
				// The purge's own read missed the receipt's write: it left
				// the receipt there.
				if m.reader.origin() == p.by && v.entry != nil && p.body != nil && v.entry.Value == string(p.body) {
					return w.ck.newEvent(staleRead, "%s read %s at %s, missing the receipt's write by %s at %s, and left it", actorName(p.by), kvKey,
						m.at.Format("15:04:05.000"), actorName(v.by), v.at.Format("15:04:05.000")), true
				}
			}
		}
	}
	return nil, false
}

// adoptionBound is how long after the history quiets down every key KV
// left open is in the ledger, final, purged or expired: KV's staleness
// (the list and the reads may show a key as it was), then a Cron run for
// every sweepLimit names the walk lists, one more for the run that
// finds the walk's end, and one for the Cron's phase.
func (m *migration) adoptionBound() time.Duration {
	return staleMost + time.Duration(m.pending/sweepLimit+3)*sweepEvery
}

// checkAdoptionBound: adoptionBound after quiet, every key KV left open
// at the switch is held by the ledger, final in KV, purged or gone.
func (w *world) checkAdoptionBound(quiet time.Time) {
	m := w.mig
	if m == nil || m.at.IsZero() || m.bounded || w.now().Before(quiet.Add(m.adoptionBound())) {
		return
	}
	m.bounded = true
	defer w.directly()()
	for _, key := range m.leftOpen {
		k := w.keyOf(key)
		rec, _ := w.ledger.Lookup(context.Background(), k)
		old, _ := w.kvStore.Lookup(context.Background(), k)
		if rec.State != intake.Absent || old.State == intake.Stored || old.State == intake.Absent || len(m.purges[key]) > 0 {
			continue
		}
		w.violate("%s, left open in KV at the switch, is not in the ledger %s after the history quieted (state in KV %d, %d names to walk)",
			key, m.adoptionBound(), old.State, m.pending)
	}
}

// legacyIDMissed reports whether c's order id, the Worker's own, follows
// first, an order id the old version minted (which the Worker keeps while
// it finds it), after a KV read that missed the key's writes, during a
// migration mid-run: KV's documented staleness, which it allows, naming
// the read. The Worker's own order ids derive from the key and the order,
// so only an old version's can be missed so.
func (w *world) legacyIDMissed(c *gatewayCall, first string) bool {
	if w.mig == nil || !strings.HasPrefix(first, "legacy-") {
		return false
	}
	event := w.fallbackMissed(c, first, false)
	if mint := w.mintOf(c.key, c.orderID, c.acceptedAt); event == nil && mint != nil {
		event = mint.cause
	}
	if event != nil {
		w.allowBy("a second order id after a read that missed an old version's", event)
	}
	return event != nil
}

// legacyIDResumed reports whether c's order id, an old version's, follows
// the Worker's own (firstID, minted at firstAt), which a claim minted blind over the key the
// old version held: that claim's own stale read, or claims at once, which
// it allows naming the event. A settler that read the old version's
// claim then calls under its id again.
func (w *world) legacyIDResumed(c *gatewayCall, firstID string, firstAt time.Time) bool {
	if !strings.HasPrefix(c.orderID, "legacy-") || strings.HasPrefix(firstID, "legacy-") {
		return false
	}
	mint := w.mintOf(c.key, firstID, firstAt)
	if mint == nil || mint.cause == nil {
		return false
	}
	w.allowBy("an old version's order id after the Worker's own, minted blind", mint.cause)
	return true
}

// omsDown reports whether the OMS is down: an outage across the switch,
// which ends with the faults at the latest.
func (w *world) omsDown() bool {
	return w.mig != nil && w.faults() && w.now().Before(w.mig.outageUntil)
}

// outageAnswer is the gateway's answer during an outage: the OMS acted or
// not, and its answer was lost.
func (w *world) outageAnswer(key keyName, p intake.Placement) error {
	w.count("OMS call in an outage")
	if w.choose(2, "OMS acted in an outage") == 1 {
		w.oms.act(key, p)
	}
	return errOMSUnavailable
}

// checkResolveOverwrite: in KV mode, a receipt an operator's resolve
// stored is never overwritten by a different one, nor does a resolve
// overwrite a different receipt, unless the writer's own read of the key
// missed the other's write, or its claim was written over another's
// (KV's documented limits: nothing fences a claim). Allowed, naming the
// event; docs/operating.md says so.
func (w *world) checkResolveOverwrite(kvKey string, e *kv.Entry) {
	name, ok := strings.CutPrefix(kvKey, "result:")
	if w.mig == nil || w.mode != KVMode || !ok || e == nil {
		return
	}
	vs := w.ns.keys[kvKey]
	if len(vs) < 2 {
		return
	}
	prev, writer := vs[len(vs)-2], w.sched.running
	old := prev.live(w.now())
	if old == nil || old.Value == e.Value || prev.by == writer || (!w.mig.resolvers[prev.by] && !w.mig.resolvers[writer]) {
		return
	}
	if event, ok := w.ownKVEvent(name, writer, prev.by); ok {
		w.allowBy("a resolve's receipt and a retry's overwrote one another", event)
		return
	}
	w.violate("%s: %s overwrote the receipt %s stored with another: %s, then %s", name, actorName(writer), actorName(prev.by), old.Value, e.Value)
}

// ownKVEvent is a KV event of key's that writer itself met: its read of
// the key that missed a write (of other's, when other is set), or its
// claim written over another's.
func (w *world) ownKVEvent(key keyName, writer, other *actor) (*event, bool) {
	writer = writer.origin() // work after its response is its request's
	if e := w.missBy(writer, key, other); e != nil {
		return e, true
	}
	if cw := w.ck.lastClaim[writer][key]; cw != nil && cw.cause != nil {
		return cw.cause, true
	}
	return nil, false
}

// missBy is a's read of key's KV entries that missed a write (one of
// other's request, when other is set), as the stale read it is; nil if a
// read none so.
func (w *world) missBy(a *actor, key keyName, other *actor) *event {
	if a == nil {
		return nil
	}
	for _, kvKey := range []string{"pending:" + key, "result:" + key} {
		for _, m := range w.misses[kvKey] {
			if m.reader.origin() != a.origin() {
				continue
			}
			for i := len(m.missed) - 1; i >= 0; i-- {
				if v := m.missed[i]; other == nil || v.by != nil && v.by.origin() == other.origin() {
					return w.ck.newEvent(staleRead, "%s read %s at %s, missing %s's write at %s", actorName(a), kvKey,
						m.at.Format("15:04:05.000"), actorName(v.by), v.at.Format("15:04:05.000"))
				}
			}
		}
	}
	return nil
}

// ranKV reports whether the history ran in KV mode, all of it or until a
// migration mid-run: the end's checks then allow what KV's events caused,
// each naming its event.
func (w *world) ranKV() bool { return w.mode == KVMode || w.mig != nil }

// fallbackMissed is the stale read that let c, a gateway call of the
// ledger-mode Worker during a migration, place another order under its
// key than first, KV's: the last read of KV's claim or receipt before the
// call, within staleMost, by the request whose ledger claim first held
// c's order id and time (ledgerMints; c's own where none did), that
// missed a write naming first. A last read that returned a version
// naming first hid nothing, whatever an earlier read missed. With adopted
// it is what let the ledger end with c's order instead: the same, by
// that request's last read before the call or its claim, whichever came
// later, since an adoption (the sweep's, or a resolve's) of a key KV mode
// left open after c's call reads KV before its claim, not before the
// call, which its read cannot have caused. Nil if there is none: no other
// read excuses it.
func (w *world) fallbackMissed(c *gatewayCall, first string, adopted bool) *event {
	reader, until := c.by.origin(), c.start
	if m, ok := w.ledgerMints[ledgerMintID(c.key, c.orderID, c.acceptedAt)]; ok {
		reader = m.by // the request whose claim minted it, if another calls
		if adopted {
			until = later(c.start, m.at)
		}
	}
	names := func(e *kv.Entry) bool {
		return e != nil && (strings.Contains(string(e.Metadata), first) || strings.Contains(e.Value, first))
	}
	// A read of either entry that returned first told the reader the key
	// was first's (its receipt wins over any claim): a miss of the other
	// hid nothing.
	for _, kvKey := range []string{"pending:" + c.key, "result:" + c.key} {
		if r := w.lastRead(kvKey, reader, until); r != nil && until.Sub(r.at) <= staleMost && names(r.got) {
			return nil
		}
	}
	for _, kvKey := range []string{"pending:" + c.key, "result:" + c.key} {
		r := w.lastRead(kvKey, reader, until)
		if r == nil || until.Sub(r.at) > staleMost {
			continue
		}
		for _, v := range r.missed {
			if names(v.entry) {
				return w.ck.newEvent(staleRead, "%s read %s at %s, missing %s's write of %s at %s", actorName(r.reader), kvKey,
					r.at.Format("15:04:05.000"), actorName(v.by), first, v.at.Format("15:04:05.000"))
			}
		}
	}
	return nil
}

// fallbackMissedBy is fallbackMissed of the gateway call that minted order
// id and acceptedAt at under key: the first call with them (later ones
// took the key over).
func (w *world) fallbackMissedBy(key keyName, id string, at time.Time, first string) *event {
	for _, d := range w.oms.calls {
		if d.key == key && d.orderID == id && d.acceptedAt.Equal(at) {
			return w.fallbackMissed(d, first, true)
		}
	}
	return nil
}

// observeLedgerMint records the request whose ledger claim first held key
// with an order id and time: a fallback read that let it claim is its
// own, whoever calls the gateway under the claim later (the alarm, once
// its holder died). A claim of a free key mints them afresh, even where
// an earlier claim, since released unsent or lapsed, held the same ones:
// order ids derive from the key and the order, and two requests in the
// same millisecond mint the same time.
func (w *world) observeLedgerMint(key keyName, method string, before, after intake.Record) {
	a := w.sched.running
	if w.direct || a == nil || method != "claim" || after.State != intake.Held || after.OrderID == "" {
		return
	}
	id := ledgerMintID(key, after.OrderID, after.AcceptedAt)
	if _, ok := w.ledgerMints[id]; !ok || before.State == intake.Absent {
		w.ledgerMints[id] = ledgerMint{by: a.origin(), at: w.now()}
	}
}

// ledgerMint is the request whose ledger claim first held a key with an
// order id and time, and when it wrote it.
type ledgerMint struct {
	by *actor
	at time.Time
}

func ledgerMintID(key keyName, orderID string, at time.Time) string {
	return key + " " + orderID + " " + at.UTC().Format(time.RFC3339Nano)
}
