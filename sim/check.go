package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

// kvEvent logs an event of KV's documented limits on key, for the
// history's reader: it excuses nothing (the allowances name the events
// that caused what they excuse, cause.go).
func (w *world) kvEvent(key keyName, what string) {
	if os.Getenv("SIM_DEBUG") != "" {
		w.logf("  kv: %s: %s", key, what)
	}
}

// The invariants every history is checked against. Each is checked where
// it can first fail (as a call is made, an answer given, a receipt
// stored, time passes) or once the history has quieted down.

// checkOneCallAtOnce: no two gateway calls for one key at once, anywhere
// over the ledger, and within an isolate over KV. KV has no
// compare-and-swap, so two isolates may each claim a key and call at
// once, but only after a named event: the later of the two callers' claims
// was written after its writer's own stale read of the key, or at once with
// another's (a release by the other's rival may since have opened the key
// for a third, the settler, whose claim carries that event). The earlier
// claim's own event excuses nothing: its writer could not have seen the
// later.
func (w *world) checkOneCallAtOnce(call *gatewayCall) {
	for _, c := range w.oms.open[call.key] {
		if w.mode == LedgerMode || (c.inst == call.inst && c.gen == call.gen) {
			w.violate("two gateway calls for %s at once: %s (isolate %d) and %s (isolate %d)", call.key, c.orderID, c.inst, call.orderID, call.inst)
			return
		}
		if e := causeBetween(w.claimOf(c), w.claimOf(call)); e != nil {
			w.allowBy("gateway calls at once across isolates", e)
			continue
		}
		w.violate("two gateway calls for %s at once across isolates, with no KV event that let both claim it: %s (%s) and %s (%s)",
			call.key, c.orderID, actorName(c.by), call.orderID, actorName(call.by))
	}
	w.checkHeld(call)
}

// claimOf is the claim under which c's caller calls: its latest held claim
// of the key.
func (w *world) claimOf(c *gatewayCall) *claimWrite {
	return w.ck.lastClaim[c.by][c.key]
}

// checkHeld: while a request calls the gateway, its claim holds the key:
// a lookup says in progress, and no other request may take the key over.
// Over KV the caller must have written a claim; another may have written
// one over it since only after a named event (its stale read, or claims at
// once).
func (w *world) checkHeld(call *gatewayCall) {
	if w.mode == KVMode {
		mine := w.claimOf(call)
		if mine == nil {
			w.violate("%s calls the gateway for %s without a claim of its own", actorName(call.by), call.key)
			return
		}
		if cs := w.ck.claimsOf(call.key); cs[len(cs)-1] != mine {
			if e := causeBetween(mine, cs[len(cs)-1]); e != nil {
				w.allowBy("a gateway call under a claim another has written over", e)
				return
			}
			w.violate("%s calls the gateway for %s, but %s's claim was written over its own with no KV event that let it",
				actorName(call.by), call.key, actorName(cs[len(cs)-1].by))
			return
		}
	}
	rec := w.peek(call.key)
	if w.mode == KVMode {
		// The claim itself: a receipt beside it (a stale read missed it)
		// wins for readers, and is another invariant's concern.
		rec = w.peekClaim(call.key)
	}
	if rec.State != intake.Held {
		w.violate("%s calls the gateway for %s, but its claim does not hold the key (state %d, unresolved %v)", call.by.name, call.key, rec.State, rec.GiveUp.Unresolved())
	}
}

// checkAnswer: every receipt a client was given names an order the OMS
// accepted; every rejection one it rejected; no key whose accepted
// receipt was stored is reported unresolved.
func (w *world) checkAnswer(ans *answer) {
	switch ans.kind {
	case created, replayed:
		id, status, _ := order.ReceiptFields(ans.body)
		got, ok := w.oms.orders[id]
		if status != order.StatusAccepted || !ok || !got.accepted {
			w.violate("a client of %s was given a receipt for %s (%s), which the OMS did not accept", ans.key, id, status)
		}
		w.checkAnswersItsOrder(ans, id)
	case rejected:
		if got, ok := w.oms.orders[ans.orderID]; !ok || got.accepted {
			w.violate("a client of %s was told %s was rejected, which the OMS did not reject", ans.key, ans.orderID)
		}
		w.checkAnswersItsOrder(ans, ans.orderID)
	case unresolved:
		if !ans.lookup || !w.readBeforeStored(ans.key, ans.by) {
			w.checkNotReceipted(ans.key, ans.orderID, "was told unresolved to its client", ans.by)
		}
	}
	if ans.lookup && (ans.kind == notFound || ans.kind == unknown || ans.kind == unresolved) {
		w.checkLookupFound(ans)
	}
	w.checkAnswerNotPurged(ans)
	if ans.lookup && ans.body != nil && !w.storedBodies[ans.key][string(ans.body)] {
		w.violate("a lookup of %s was told a receipt that was never stored: %s", ans.key, ans.body)
	}
}

// checkAnswersItsOrder: a receipt or a rejection answers the order its
// client sent, under its key: the receipt's symbol, side and quantity are
// the order's, and its order id is the one the key and order derive
// (intake.OrderIDFor), or a migrated key's own.
func (w *world) checkAnswersItsOrder(ans *answer, orderID string) {
	if ans.lookup || ans.fp == "" {
		return
	}
	if ans.body != nil {
		var r struct {
			Symbol   string  `json:"symbol"`
			Side     string  `json:"side"`
			Quantity float64 `json:"quantity"`
		}
		o := order.Order{}
		if json.Unmarshal(ans.body, &r) == nil {
			o = order.Order{Symbol: r.Symbol, Side: order.Side(r.Side), Quantity: r.Quantity}
		}
		if o.Fingerprint() != ans.fp {
			w.violate("a client of %s was answered %s with %s, which is not the order it sent", ans.key, ans.kind, ans.body)
		}
	}
	if want := intake.OrderIDFor(w.keyOf(ans.key), ans.fp); orderID != want && !strings.HasPrefix(orderID, "legacy-") {
		w.violate("a client of %s was answered %s for order id %s, not its order's %s", ans.key, ans.kind, orderID, want)
	}
}

// observeKVWrite: no receipt is stored for an order the OMS did not
// accept (or, for a rejection, reject).
func (w *world) observeKVWrite(key string, e *kv.Entry, expires time.Time) {
	w.checkResolveOverwrite(key, e)
	w.ck.writes++
	w.lastWriter[key] = w.sched.running
	if strings.HasPrefix(key, "pending:") && os.Getenv("SIM_DEBUG") != "" {
		if e != nil {
			w.logf("  kv put %s %s %s", key, e.Value, e.Metadata)
		} else {
			w.logf("  kv delete %s", key)
		}
	}
	if name, ok := strings.CutPrefix(key, "pending:"); ok {
		w.observeClaim(name, e)
		w.noteDue(name)
		w.checkKeptPastDue(name, e, expires)
	}
	name, ok := strings.CutPrefix(key, "result:")
	if ok {
		defer func() { w.trackStored(name, w.peek(name)) }()
	}
	if !ok || e == nil {
		return
	}
	if a := w.sched.running; a != nil && !w.direct {
		w.ck.resultWriters[name] = append(w.ck.resultWriters[name], resultWrite{by: a, seq: w.ck.writes - 1})
	}
	w.stored(name, []byte(e.Value), expires)
}

// checkKeptPastDue: a claim KV keeps until expires, and that says it is
// due for the settler, is kept past its due time: a key that expired
// before the call or the give-up's check it awaits would drop an order
// whose outcome is unknown without a report.
func (w *world) checkKeptPastDue(key keyName, e *kv.Entry, expires time.Time) {
	if e == nil || expires.IsZero() || w.direct {
		return
	}
	if due := w.decodeClaim(key, e, w.now()).NextAttempt; !due.IsZero() && !expires.After(due) {
		w.violate("%s's claim is due for the settler at %s, but KV keeps it only until %s", key,
			due.Format("15:04:05.000"), expires.Format("15:04:05.000"))
	}
}

// observeLedgerCommit watches the ledger's commits as observeKVWrite
// watches KV's: a commit that stored key's outcome, as the ledger showed
// it before and after. A commit the object refused stores nothing, even
// where KV's fallback still holds the outcome.
func (w *world) observeLedgerCommit(key keyName, method string, before, after intake.Record) {
	if method != "commit" || w.direct || w.sched.running == nil || after.State != intake.Stored ||
		before.State == intake.Stored && bytes.Equal(before.Body, after.Body) {
		return
	}
	w.stored(key, after.Body, after.Expires)
}

func (w *world) stored(key keyName, receipt []byte, until time.Time) {
	if os.Getenv("SIM_DEBUG") != "" {
		w.logf("  stored %s %s", key, receipt)
	}
	w.checkNotPurged(key, receipt, "stored again")
	w.commits[key] = commit{at: w.now(), body: receipt}
	if w.storedBodies[key] == nil {
		w.storedBodies[key] = make(map[string]bool)
	}
	w.storedBodies[key][string(receipt)] = true
	id, status, _ := order.ReceiptFields(receipt)
	got, ok := w.oms.orders[id]
	switch {
	case !ok:
		w.violate("a receipt for %s was stored naming %s, which the OMS never saw", key, id)
	case got.accepted != (status == order.StatusAccepted):
		w.violate("a receipt for %s was stored saying %s is %s, which the OMS did not answer", key, id, status)
	case got.accepted:
		if w.receipts[key] == nil {
			w.receipts[key] = make(map[string]keptReceipt)
		}
		if until.IsZero() {
			until = w.now().Add(100 * 365 * 24 * time.Hour)
		}
		w.receipts[key][id] = keptReceipt{at: w.now(), until: until}
	}
}

// checkReportedOnce: over the ledger, whose reads are exact, the settler
// gives up on an order once: a key given up on stays so (a retry's
// unknown outcome, or a claim's that never learnt it, leaves it so) until
// an operator resolves it or it expires, unless the OMS answered for the
// order since, and that answer could not be stored. KV mode's reports,
// before a migration, do not count: the ledger's settler asks once more
// about a key it adopts, and reports it itself.
func (w *world) checkReportedOnce(key keyName, p intake.Placement) {
	if w.mode != LedgerMode {
		return
	}
	order := orderOf(key, p)
	if at, ok := w.reported[order]; ok && !w.omsAnswered[order].After(at) {
		w.violate("%s is reported unresolved for %s again, though the OMS answered nothing for it since %s", key, p.OrderID, at.Format("15:04:05.000"))
	}
	w.reported[order] = w.now()
}

// orderOf names one order of key's, placed as p: by its order id and
// acceptedAt, so that the same order taken again after its key expired is
// another.
func orderOf(key keyName, p intake.Placement) string {
	return key + " " + p.OrderID + " " + p.AcceptedAt.Format(time.RFC3339Nano)
}

// keptReceipt is when an accepted receipt was last stored, and until when
// it is kept.
type keptReceipt struct{ at, until time.Time }

// checkNotReceipted: an accepted order is never reported unresolved while
// its receipt is stored. Over KV, only when the reporting request or
// settler run (reader) missed the receipt by its own read, the give-up's
// check: a stale read; or when another claim, held beside the reporter's
// after a named event (one's stale read, or claims at once), stored it
// during the reporter's call.
func (w *world) checkNotReceipted(key keyName, orderID, what string, reader *actor) {
	kept, ok := w.receipts[key][orderID]
	if !ok || !w.now().Before(kept.until) {
		return
	}
	if rec := w.peek(key); (rec.State != intake.Stored || intake.OrderIDOf(rec) != orderID) && w.purgedOutcomeSince(key, orderID, kept.at) {
		// Not stored now, exactly read: a purge deleted it since it was
		// stored, though its call failed after it took effect, so the
		// checker kept it.
		return
	}
	names := func(body []byte) bool { id, _, _ := order.ReceiptFields(body); return id == orderID }
	if e := w.missedReceipt(key, reader, names); e != nil {
		w.allowBy("unresolved beside a receipt the reporter's own read missed", e)
		return
	}
	if w.mode == KVMode {
		if e := w.storedBesideReporter(key, reader); e != nil {
			w.allowBy("unresolved beside a receipt another claim stored meanwhile", e)
			return
		}
	}
	w.violate("%s %s, but its accepted receipt for %s is stored", key, what, orderID)
}

// missedReceipt is reader's own read of KV's result:<key> that found
// nothing when the key held a receipt the caller names, as the stale read
// it is: over KV, or the ledger-mode Worker's read of KV's fallback, made
// after its own read of the ledger showed no outcome of the key
// (ledgerSaw). Nil if there is none.
func (w *world) missedReceipt(key keyName, reader *actor, names func(body []byte) bool) *event {
	r, ok := w.ck.reads[reader]["result:"+key]
	if !ok || r.stale == nil || r.entry != nil || r.latest == nil || !names([]byte(r.latest.Value)) || !w.ranKV() {
		return nil
	}
	if w.mode != KVMode {
		if saw, ok := w.ledgerSaw[reader]; !ok || saw {
			return nil
		}
	}
	return r.stale
}

// checkLookupFound: a lookup finds an outcome stored, without a gap,
// since before it began and still when it answers. Told 404 or unknown
// instead, its client might place the order again under another key.
// Over KV, or through KV's fallback in a migration, the lookup's own
// read that missed that outcome excuses it, named.
func (w *world) checkLookupFound(ans *answer) {
	run, ok := w.storedRuns[ans.key]
	if !ok || !run.since.Before(ans.start) {
		return
	}
	// Expiry writes nothing: the run may have ended since, unseen.
	if rec := w.peek(ans.key); rec.State != intake.Stored || string(rec.Body) != run.body {
		return
	}
	same := func(body []byte) bool { return string(body) == run.body }
	if e := w.missedReceipt(ans.key, ans.by, same); e != nil {
		w.allowBy("a lookup that missed a stored outcome", e)
		return
	}
	w.violate("a lookup of %s was told %s, but its outcome was stored at %s, before the lookup began, and is still: %s",
		ans.key, ans.kind, run.since.Format("15:04:05.000"), run.body)
}

// readBeforeStored reports whether reader's own last read of key, exact,
// found no outcome, and one is stored now: it came after the read that
// reader's answer reports, as an operator's resolve may (a lookup holds
// no claim that would keep it out). Over KV its read of result:<key>,
// not stale; over the ledger its read of the ledger, with the outcome now
// stored there.
func (w *world) readBeforeStored(key keyName, reader *actor) bool {
	if w.mode == KVMode {
		r, ok := w.ck.reads[reader]["result:"+key]
		return ok && r.entry == nil && r.stale == nil
	}
	saw, ok := w.ledgerSaw[reader]
	return ok && !saw && w.peekLedger(key).State == intake.Stored
}

// commit is a key's outcome as it was stored, and when.
type commit struct {
	at   time.Time
	body []byte
}

// storedRun is the outcome a key has held without a gap since since, as
// the Worker's exact read would find it (peek): a gap that expiry made
// is not seen, but for a store of the same bytes after it, the outcome
// is no longer stored.
type storedRun struct {
	body  string
	since time.Time
}

// trackStored notes key's outcome after a write that may have changed it,
// as rec, the record an exact read finds now.
func (w *world) trackStored(key keyName, rec intake.Record) {
	cur, ok := w.storedRuns[key]
	switch {
	case rec.State != intake.Stored:
		delete(w.storedRuns, key)
	case !ok || cur.body != string(rec.Body):
		w.storedRuns[key] = storedRun{body: string(rec.Body), since: w.now()}
	}
}

// sawLedger notes what actor a's own read of the ledger (a lookup, or a
// claim, which returns what it found) showed of its key: whether an
// outcome was stored.
func (w *world) sawLedger(a *actor, method string) {
	if method == "lookup" || method == "claim" {
		w.ledgerSaw[a] = w.peekLedger(a.key).State == intake.Stored
	}
}

// peekLedger reads what the ledger itself holds for key now, as peek
// does.
func (w *world) peekLedger(key keyName) intake.Record {
	defer w.directly()()
	rec, _ := w.ledger.Lookup(context.Background(), w.keyOf(key))
	return rec
}

// storedBesideReporter is the event that let another actor hold key beside
// reader and store its outcome after reader's read of it: the later of the
// two claims' writer read the key stale, or wrote at once with the other.
func (w *world) storedBesideReporter(key keyName, reader *actor) *event {
	read, ok := reader.reads["result:"+key]
	if !ok {
		return nil
	}
	mine := w.ck.lastClaim[reader][key]
	for _, r := range w.ck.resultWriters[key] {
		if r.seq < read || r.by.origin() == reader.origin() {
			continue
		}
		// An outcome stored after its request's response is that
		// request's: its claim is the request's own.
		theirs := w.ck.lastClaim[r.by][key]
		if theirs == nil {
			theirs = w.ck.lastClaim[r.by.origin()][key]
		}
		if e := causeBetween(mine, theirs); e != nil {
			return e
		}
	}
	return nil
}

// peek reads what the store holds for key now, without staleness, faults
// or yields.
func (w *world) peek(key keyName) intake.Record {
	if w.mode == KVMode {
		return w.peekKV(key)
	}
	return w.asPeeked(key, w.peekLedger(key))
}

// asPeeked is key's record as peek reads it, given rec, what the ledger
// holds: during a migration a key the ledger does not hold is KV's. The
// ledger's Watch hook, which runs under the ledger's lock, passes the
// record it has rather than read it again.
func (w *world) asPeeked(key keyName, rec intake.Record) intake.Record {
	if rec.State == intake.Absent && w.migrating {
		return w.peekKV(key)
	}
	return rec
}

// directly has the checks read the stores, until the func it returns
// restores what was: defer w.directly()().
func (w *world) directly() (restore func()) {
	was := w.direct
	w.direct = true
	return func() { w.direct = was }
}

// peekKV reads what KV holds for key now, as peek does.
func (w *world) peekKV(key keyName) intake.Record {
	defer w.directly()()
	rec, _ := w.kvStore.Lookup(context.Background(), w.keyOf(key))
	return rec
}

// peekClaim reads KV's claim for key alone, as if no receipt were stored.
func (w *world) peekClaim(key keyName) intake.Record {
	defer w.directly()()
	rec, _ := kv.NewStore(claimsOnly{w.ns}, w.now).Lookup(context.Background(), w.keyOf(key))
	return rec
}

// claimsOnly is a namespace's claims, with its outcomes hidden.
type claimsOnly struct{ *namespace }

func (c claimsOnly) GetMany(ctx context.Context, keys ...string) ([]*kv.Entry, error) {
	got, err := c.namespace.GetMany(ctx, keys...)
	for i, k := range keys {
		if strings.HasPrefix(k, "result:") && err == nil {
			got[i] = nil
		}
	}
	return got, err
}

func (w *world) keyOf(name keyName) intake.Key {
	client, id, ok := strings.Cut(name, ":")
	if !ok || (client != "desk-a" && client != "desk-b") {
		return intake.Key{ID: name}
	}
	return intake.Key{Client: client, ID: id}
}

// checkKept: a key whose order may have reached the OMS is never absent
// before its KeepUntil while its outcome is unknown, nor before its
// receipt's TTL once one is stored, nor before another receipt's TTL
// once the settler gave up on it.
func (w *world) checkKept() {
	now := w.now()
	for key, c := range w.oms.last {
		if w.absentSeen[c] || w.purgeTouchedBetween(key, c.start, now) || !w.isAbsent(key) || w.purgedOutcomeOf(key, c.orderID, c.start, now) {
			continue
		}
		var until time.Time
		if last, ok := w.commits[key]; ok && !last.at.Before(c.start) {
			until = last.at.Add(w.resultTTL)
		} else {
			until = c.acceptedAt.Add(w.settleMaxAge + w.resultTTL)
			if at, ok := w.unresolved[key]; ok {
				until = later(until, at.Add(w.resultTTL))
			}
		}
		if now.Before(until) {
			w.absentSeen[c] = true // once for this call; a later call is checked anew
			// Over KV, in KV mode or before a migration's switch: whoever
			// then drops the claim left beside the outcome, KV mode's
			// settler or the ledger's adoption.
			if w.ranKV() {
				if e := w.rivalCause(c, func(d *gatewayCall) bool { return d.fp != c.fp && w.endedWithOutcomeOf(key, d.orderID) }); e != nil {
					// The order was placed beside another under the same
					// key: the key ends with the other's outcome, and a
					// retry of this order carries its same order id.
					w.allowBy("a second order under the key forgotten with the first's outcome", e)
					continue
				}
				if e := w.rivalCause(c, func(d *gatewayCall) bool {
					return d.orderID == c.orderID && d.acceptedAt.Before(c.acceptedAt) &&
						!w.now().Before(d.acceptedAt.Add(w.settleMaxAge+w.resultTTL))
				}); e != nil {
					// Two claims for the order, with two acceptedAt: the
					// key was kept for the earlier one's KeepUntil.
					w.allowBy("a key kept until an earlier claim's KeepUntil, not a later one's", e)
					continue
				}
				if e := w.keptForAnotherOrderID(key, c); e != nil {
					w.allowBy("a key kept for the outcome of another order id it ends with, not the blind claim's KeepUntil", e)
					continue
				}
			}
			w.violate("%s is absent %s after its order %s may have reached the OMS; it must be kept until %s",
				key, now.Sub(c.acceptedAt), c.orderID, until.Sub(c.acceptedAt))
		}
	}
}

// endedWithOutcomeOf reports whether key's last outcome stored was
// orderID's, and has reached its TTL: the key ended with it, and went with
// it.
func (w *world) endedWithOutcomeOf(key keyName, orderID string) bool {
	last, ok := w.commits[key]
	if !ok || w.now().Before(last.at.Add(w.resultTTL)) {
		return false
	}
	id, _, _ := order.ReceiptFields(last.body)
	return id == orderID
}

// keptForAnotherOrderID is the event that let c's claim be minted blind
// beside the outcome key ends with: an outcome under another order id
// (an old version's for the same order, say), stored before c's call and
// kept its TTL, which c's claim's writer missed (the claim's own cause).
// The key is then kept for that outcome's claim, and may go before c's
// KeepUntil: the adoption, like KV mode's settler, deletes a claim left
// beside an outcome. Nil otherwise.
func (w *world) keptForAnotherOrderID(key keyName, c *gatewayCall) *event {
	last, ok := w.commits[key]
	if !ok || !last.at.Before(c.start) || w.now().Before(last.at.Add(w.resultTTL)) {
		return nil
	}
	if id, _, _ := order.ReceiptFields(last.body); id == c.orderID {
		return nil
	}
	if mc := w.mintOf(c.key, c.orderID, c.acceptedAt); mc != nil {
		return mc.cause
	}
	return nil
}

// rivalCause is the event that let a rival claim exist beside c's: for a
// call d under c's key that rival picks, the event between the claims
// that minted c's and d's acceptedAt (causeBetween).
func (w *world) rivalCause(c *gatewayCall, rival func(d *gatewayCall) bool) *event {
	mc := w.mintOf(c.key, c.orderID, c.acceptedAt)
	for _, d := range w.oms.calls {
		if d.key != c.key || d == c || !rival(d) {
			continue
		}
		if e := causeBetween(mc, w.mintOf(d.key, d.orderID, d.acceptedAt)); e != nil {
			return e
		}
	}
	return nil
}

// isAbsent reports whether the store holds nothing for key now: over KV,
// neither an outcome nor a claim (a cheaper look than peek, which decodes
// them: checkKept asks after every step, of every key).
func (w *world) isAbsent(key keyName) bool {
	if w.mode == KVMode {
		k := w.keyOf(key).String()
		return w.ns.latest("result:"+k) == nil && w.ns.latest("pending:"+k) == nil
	}
	return w.peek(key).State == intake.Absent
}

// checkEnd checks what is checked over the whole history, once it has
// quieted down.
func (w *world) checkEnd() {
	w.checkOrderIDs()
	w.checkRefusalsPlaceNothing()
	w.checkReplaysIdentical()
	w.checkSettled()
	w.checkFinalRetries()
}

// checkFinalRetries: every outcome a client was given is, once the history
// is quiet, exactly what a retry of its order gets, within RESULT_TTL of
// the answer: a receipt byte for byte, a rejection of the same order id.
// The outcome may have been answered before its commit, which may have
// failed or never run; the settler, or the retry itself, must then store
// what the client was given. Over KV, only the outcomes the docs list, each
// after its named event: the order's receipt with another claim's
// acceptedAt (the same order id), when one of the two claims was minted
// blind (causeBetween); or 422 key reused, when another order under the
// key was claimed blind beside this one and its outcome is the key's.
func (w *world) checkFinalRetries() {
	for _, fin := range w.finalRetries {
		for _, a := range w.answers {
			if a == fin || a.lookup || a.key != fin.key || a.fp != fin.fp || !w.now().Before(a.start.Add(w.resultTTL)) || w.purgedBetween(a.key, a.start, fin.start) ||
				w.purgedAnswer(a.key, a.body, a.start, fin.start) {
				continue
			}
			switch {
			case a.kind == created && (fin.kind == created || fin.kind == replayed) && bytes.Equal(a.body, fin.body):
			case a.kind == rejected && fin.kind == rejected && fin.orderID == a.orderID:
			case a.kind != created && (a.kind != rejected || a.replay):
			default:
				if w.ranKV() {
					if e := w.finalRetryCause(a, fin); e != nil {
						w.allowBy("a final retry got another claim's outcome", e)
						continue
					}
				}
				w.violate("a client of %s was given %s %s %s, but a retry once quiet got %s %s %s", a.key, a.kind, a.orderID, a.body, fin.kind, fin.orderID, fin.body)
			}
		}
	}
}

// finalRetryCause is the event that lets fin, a final retry, get another
// outcome than a's: the order's receipt under another acceptedAt, 422 key
// reused beside a rival order, or, during a migration, the outcome of the
// order placed again under the Worker's own id after its request's read
// of KV's fallback missed the old version's id.
func (w *world) finalRetryCause(a, fin *answer) *event {
	mine := w.answerMints(a)
	switch {
	case fin.kind == created || fin.kind == replayed:
		id, _, _ := order.ReceiptFields(fin.body)
		at := order.ReceiptAcceptedAt(fin.body)
		if id == a.orderID {
			theirs := w.mintOf(fin.key, id, at)
			for _, m := range mine {
				if e := causeBetween(m, theirs); e != nil {
					return e
				}
			}
		} else if !strings.HasPrefix(a.orderID, "legacy-") {
			// Only an old version's order id can give way to another,
			// after the read that missed it (legacyIDMissed).
			return nil
		}
		if w.mig != nil {
			// The ledger-mode Worker minted the other acceptedAt, or the
			// other order id: its request's own read of KV's fallback
			// missed a's.
			if e := w.fallbackMissedBy(fin.key, id, at, a.orderID); e != nil {
				return e
			}
		}
	case fin.kind == rejected && fin.orderID != a.orderID && strings.HasPrefix(a.orderID, "legacy-") && w.mig != nil:
		// The other order, under the Worker's own id, was placed and
		// rejected after its request's read of KV's fallback missed the
		// old version's (legacyIDMissed).
		for _, d := range w.oms.calls {
			if d.key == fin.key && d.orderID == fin.orderID {
				return w.fallbackMissed(d, a.orderID, true) // the first call minted it
			}
		}
	case fin.kind == reused:
		for _, d := range w.oms.calls {
			if d.key != a.key || d.fp == a.fp {
				continue
			}
			for _, m := range mine {
				if e := causeBetween(m, w.mintOf(d.key, d.orderID, d.acceptedAt)); e != nil {
					return e
				}
			}
			if w.mig != nil {
				if e := w.fallbackMissed(d, a.orderID, true); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

// answerMints are the claims that minted an acceptedAt of a's order id:
// the receipt's own, or every one of a rejection's.
func (w *world) answerMints(a *answer) []*claimWrite {
	if a.body != nil {
		if m := w.mintOf(a.key, a.orderID, order.ReceiptAcceptedAt(a.body)); m != nil {
			return []*claimWrite{m}
		}
		return nil
	}
	var out []*claimWrite
	for _, d := range w.oms.calls {
		if d.key == a.key && d.orderID == a.orderID {
			if m := w.mintOf(d.key, d.orderID, d.acceptedAt); m != nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// checkOrderIDs: one order id per key and order, and one per key, for as
// long as any record of the first can be kept (RESULT_TTL from its
// acceptance at least). Over KV a second order under a key is allowed
// only after the event that let one of the two be claimed blind
// (causeBetween their claims).
func (w *world) checkOrderIDs() {
	type first struct {
		orderID    string
		acceptedAt time.Time
	}
	perOrder := make(map[string]first)
	perKey := make(map[string]first)
	check := func(m map[string]first, group, what string, c *gatewayCall) {
		f, ok := m[group]
		switch {
		case !ok || !c.start.Before(f.acceptedAt.Add(w.resultTTL)) || w.purgedBetween(c.key, f.acceptedAt, c.start):
			m[group] = first{c.orderID, c.acceptedAt}
		case f.orderID != c.orderID && w.legacyIDMissed(c, f.orderID):
			m[group] = first{c.orderID, c.acceptedAt}
		case f.orderID != c.orderID && w.legacyIDResumed(c, f.orderID, f.acceptedAt):
			m[group] = first{c.orderID, c.acceptedAt}
		case f.orderID != c.orderID:
			w.violate("the OMS saw a second order id for %s: %s, then %s", what, f.orderID, c.orderID)
			m[group] = first{c.orderID, c.acceptedAt}
		}
	}
	firstCall := make(map[keyName]*gatewayCall)
	for _, c := range w.oms.calls {
		check(perOrder, c.key+" "+c.fp, "one key and order ("+c.key+")", c)
		if f, ok := perKey[c.key]; ok && f.orderID != c.orderID && c.start.Before(f.acceptedAt.Add(w.resultTTL)) && w.ranKV() {
			fc := firstCall[c.key]
			e := causeBetween(w.mintOf(fc.key, fc.orderID, fc.acceptedAt), w.mintOf(c.key, c.orderID, c.acceptedAt))
			if e == nil && w.mig != nil {
				// During a migration the ledger claims first and reads
				// KV's fallback after: no KV claim minted the second.
				e = w.fallbackMissed(c, fc.orderID, false)
			}
			if e != nil {
				// Another order under the key, claimed after its writer's
				// read missed the first's claim, or at once with it.
				w.allowBy("a second order id for one key", e)
				perKey[c.key] = first{c.orderID, c.acceptedAt}
				firstCall[c.key] = c
				continue
			}
		}
		if f, ok := perKey[c.key]; !ok || !c.start.Before(f.acceptedAt.Add(w.resultTTL)) || f.orderID != c.orderID {
			firstCall[c.key] = c
		}
		check(perKey, c.key, "one key ("+c.key+")", c)
	}
}

// checkRefusalsPlaceNothing: an order whose every submission so far was
// answered with a refusal (400, 422 key reused, 429) is never placed.
func (w *world) checkRefusalsPlaceNothing() {
	for id, o := range w.oms.orders {
		if strings.HasPrefix(id, "legacy-") {
			continue
		}
		refused, others := 0, 0
		for _, a := range w.answers {
			if a.lookup || a.key != o.key || a.fp != o.fp || a.start.After(o.at) {
				continue
			}
			if a.kind.refusal() {
				refused++
			} else {
				others++
			}
		}
		if refused > 0 && others == 0 {
			w.violate("%s was placed as %s, but every submission of it was refused", o.key, id)
		}
	}
}

// checkReplaysIdentical: every replay of a receipt within RESULT_TTL of
// its creation is the same, byte for byte, and a key never creates a
// second receipt within that time. Over KV two claims of the order, one
// of them minted blind (causeBetween), may both create one, with the
// order's one order id, and the one stored last is what replays return:
// allowed, naming the event. After a purge, another isolate may replay
// the purged receipt from memory for the receipt cache's minute, beside
// one created since (replayOfPurged). A purge whose reads stalled may
// have begun before the first receipt was created: its own delete of that
// receipt, after it was created, freed the key (purgeDeletedOneOf).
func (w *world) checkReplaysIdentical() {
	type anchor struct {
		bodies [][]byte
		end    time.Time
	}
	anchors := make(map[string]*anchor)
	byEnd := slices.Clone(w.answers)
	slices.SortStableFunc(byEnd, func(a, b *answer) int { return a.end.Compare(b.end) })
	for _, a := range byEnd {
		if a.body == nil {
			continue
		}
		id, _, _ := order.ReceiptFields(a.body)
		group := a.key + " " + id
		prev, ok := anchors[group]
		// A request that began before a purge may claim the key it freed.
		end := a.start
		if a.kind == created {
			end = a.end
		}
		within := ok && a.start.Before(prev.end.Add(w.resultTTL)) && !w.purgedBetween(a.key, prev.end, end) &&
			!w.purgeDeletedOneOf(a.key, prev.bodies, prev.end, end)
		same := within && slices.ContainsFunc(prev.bodies, func(b []byte) bool { return bytes.Equal(b, a.body) })
		var e *event
		if within && !same && w.ranKV() {
			e = w.otherReceiptCause(a.key, id, prev.bodies, a.body)
		}
		switch {
		case a.kind == created && e != nil:
			w.allowBy("a second receipt created for one order", e)
			prev.bodies = append(prev.bodies, a.body)
		case a.kind == created && within && !same:
			w.violate("%s created a second receipt for %s within RESULT_TTL:\n  %s\n  %s", a.key, id, prev.bodies[0], a.body)
		case a.kind == created:
			anchors[group] = &anchor{bodies: [][]byte{a.body}, end: a.end}
		case e != nil:
			w.allowBy("a replay of another claim's receipt", e)
		case within && !same && w.replayOfPurged(a):
		case within && !same:
			w.violate("a replay for %s (%s) differs from the receipt created:\n  %s\n  %s", a.key, id, prev.bodies[0], a.body)
		}
	}
}

// fallbackMintCause is the read of KV's fallback that let the ledger-mode
// Worker mint body, a receipt of orderID under key, afresh: its minting
// request's own read, which missed a write of KV's naming the order id.
func (w *world) fallbackMintCause(key keyName, orderID string, body []byte) *event {
	if w.mig == nil {
		return nil
	}
	return w.fallbackMissedBy(key, orderID, order.ReceiptAcceptedAt(body), orderID)
}

// otherReceiptCause is the event that let body, a receipt of orderID
// under key, carry another acceptedAt than each of bodies: for each, one of
// the two claims that minted them was written blind, or, during a
// migration, one of the two was minted by a ledger-mode request whose read
// of KV's fallback missed the other. Nil unless every pair has one.
func (w *world) otherReceiptCause(key keyName, orderID string, bodies [][]byte, body []byte) *event {
	theirs := w.mintOf(key, orderID, order.ReceiptAcceptedAt(body))
	var first *event
	for _, b := range bodies {
		e := causeBetween(w.mintOf(key, orderID, order.ReceiptAcceptedAt(b)), theirs)
		if e == nil {
			e = w.fallbackMintCause(key, orderID, body)
		}
		if e == nil {
			e = w.fallbackMintCause(key, orderID, b)
		}
		if e == nil {
			return nil
		}
		if first == nil {
			first = e
		}
	}
	return first
}

// checkSettled: once faults stop and time passes the backoff, every key
// whose order may have reached the OMS has a final outcome, or is
// unresolved once SETTLE_MAX_AGE has passed, and then was paged: during a
// migration, the keys KV mode left open too, which ledger mode adopts.
func (w *world) checkSettled() {
	for key, c := range w.oms.last {
		rec := w.peek(key)
		switch {
		case rec.State == intake.Stored, rec.State == intake.Absent:
			// Absent: checkKept says whether it was kept long enough.
		case rec.State == intake.Open && rec.GiveUp.Unresolved():
			if w.now().Before(c.acceptedAt.Add(w.settleMaxAge)) {
				w.violate("%s is unresolved before SETTLE_MAX_AGE", key)
			}
			if _, ok := w.paged[key]; !ok && rec.GiveUp == intake.GivenUp {
				w.violate("%s ended unresolved, but no page for it reached the pager", key)
			}
		default:
			w.violate("%s's outcome is still not final after a quiet time without faults (state %d, %d attempts, due %s)",
				key, rec.State, rec.Attempts, rec.NextAttempt.Sub(w.now()))
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
