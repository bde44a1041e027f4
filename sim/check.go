package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

// kvEvent is one event of KV's documented limits, on a key.
type kvEvent struct {
	at   time.Time
	what string
}

func (w *world) kvEvent(key keyName, what string) {
	w.kvEvents[key] = append(w.kvEvents[key], kvEvent{at: w.now(), what: what})
}

// kvAllows is the first event of KV's documented limits on key at or
// before at, which KV mode's allowances name: a read that missed a write
// (staleness), or two claims at once (no compare-and-swap). Over the
// ledger nothing is allowed, but during a migration mid-run (migrate.go).
func (w *world) kvAllows(key keyName, at time.Time) (string, bool) {
	if w.mode != KVMode && w.mig == nil {
		return "", false
	}
	for _, e := range w.kvEvents[key] {
		// A migration mid-run: KV mode's events, and after the switch the
		// ledger Worker's reads of KV (its fallback), KV reads as well.
		if !e.at.After(at) {
			return e.what, true
		}
	}
	return "", false
}

// kvAllowsSince is the first event of KV's documented limits on key at
// or after since.
func (w *world) kvAllowsSince(key keyName, since time.Time) (string, bool) {
	for _, e := range w.kvEvents[key] {
		if !e.at.Before(since) {
			return e.what, true
		}
	}
	return "", false
}

// allow counts an allowance, with the event that excuses it logged.
func (w *world) allow(what, event string) {
	w.count(what + " (KV allows)")
	w.logf("allowed: %s: %s", what, event)
}

// The invariants every history is checked against. Each is checked where
// it can first fail (as a call is made, an answer given, a receipt
// stored, time passes) or once the history has quieted down.

// checkOneCallAtOnce: no two gateway calls for one key at once, anywhere
// over the ledger, and within an isolate over KV. KV has no
// compare-and-swap, so two isolates may each claim a key and call at
// once: that is counted, not a violation.
func (w *world) checkOneCallAtOnce(call *gatewayCall) {
	for _, c := range w.oms.open[call.key] {
		if w.mode == LedgerMode || (c.inst == call.inst && c.gen == call.gen) {
			w.violate("two gateway calls for %s at once: %s (isolate %d) and %s (isolate %d)", call.key, c.orderID, c.inst, call.orderID, call.inst)
			return
		}
		w.count("gateway calls at once across isolates (KV allows)")
	}
	w.checkHeld(call)
}

// checkHeld: while a request calls the gateway, its claim holds the key:
// a lookup says in progress, and no other request may take the key over.
// Over KV only while the claim's write is the key's latest: another
// isolate may have written since (no compare-and-swap).
func (w *world) checkHeld(call *gatewayCall) {
	if w.mode == KVMode && w.lastWriter["pending:"+call.key] != call.by {
		return
	}
	rec := w.peek(call.key)
	if w.mode == KVMode {
		// The claim itself: a receipt beside it (a stale read missed it)
		// wins for readers, and is another invariant's concern.
		rec = w.peekClaim(call.key)
	}
	if rec.State != intake.Held {
		w.violate("%s calls the gateway for %s, but its claim does not hold the key (state %d, unresolved %v)", call.by.name, call.key, rec.State, rec.Unresolved)
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
		w.checkNotReceipted(ans.key, ans.orderID, "was told unresolved to its client", ans.by)
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
	w.lastWriter[key] = w.sched.running
	if a := w.sched.running; a != nil && !w.direct && e != nil && strings.HasPrefix(key, "pending:") {
		// A claim written after another's write of the claim landed since
		// this actor read it: two claims at once.
		if read, ok := a.reads[key]; ok {
			vs := w.ns.keys[key]
			for _, v := range vs[:len(vs)-1] {
				if v.seq >= read && v.by != a {
					w.kvEvent(strings.TrimPrefix(key, "pending:"), fmt.Sprintf("%s claimed %s at %s over %s's claim, written at %s after its read",
						a.name, key, w.now().Format("15:04:05.000"), actorName(v.by), v.at.Format("15:04:05.000")))
					break
				}
			}
		}
	}
	if strings.HasPrefix(key, "pending:") && os.Getenv("SIM_DEBUG") != "" {
		if e != nil {
			w.logf("  kv put %s %s %s", key, e.Value, e.Metadata)
		} else {
			w.logf("  kv delete %s", key)
		}
	}
	name, ok := strings.CutPrefix(key, "result:")
	if !ok || e == nil {
		return
	}
	w.stored(name, []byte(e.Value), expires)
}

// observeLedgerCall watches the ledger's commits as observeKVWrite
// watches KV's.
func (w *world) observeLedgerCall(method string) {
	a := w.sched.running
	if method != "commit" || a == nil || w.direct {
		return
	}
	rec := w.peek(a.key)
	if rec.State == intake.Stored {
		w.stored(a.key, rec.Body, rec.Expires)
	}
}

func (w *world) stored(key keyName, receipt []byte, until time.Time) {
	if os.Getenv("SIM_DEBUG") != "" {
		w.logf("  stored %s %s", key, receipt)
	}
	w.checkNotPurged(key, receipt, "stored again")
	w.commits[key] = w.now()
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
			w.receipts[key] = make(map[string]time.Time)
		}
		if until.IsZero() {
			until = w.now().Add(100 * 365 * 24 * time.Hour)
		}
		w.receipts[key][id] = until
	}
}

// checkNotReceipted: an accepted order is never reported unresolved while
// its receipt is stored. Over KV, only when the read of the reporting
// request (reader) missed the receipt's write: a stale read, past the
// give-up's check, or of a receipt stored within the minute before it.
func (w *world) checkNotReceipted(key keyName, orderID, what string, reader *actor) {
	until, ok := w.receipts[key][orderID]
	switch {
	case !ok || !w.now().Before(until):
	case w.mode == KVMode && w.missedReceipt(reader, "result:"+key):
		w.allow("unresolved beside a receipt its read missed", fmt.Sprintf("%s %s", key, what))
	case w.mode == KVMode && w.storedSinceRead(reader, "result:"+key):
		// Another request stored it while this one held the key: both
		// held it at once, which only KV's events allow.
		if event, ok := w.kvAllowsSince(key, reader.readAt["result:"+key]); ok {
			w.allow("unresolved beside a receipt another claim stored meanwhile", event)
			return
		}
		w.violate("%s %s, but its accepted receipt for %s is stored", key, what, orderID)
	default:
		w.violate("%s %s, but its accepted receipt for %s is stored", key, what, orderID)
	}
}

// storedSinceRead reports whether a receipt was written under kvKey by
// another actor since reader last read it.
func (w *world) storedSinceRead(reader *actor, kvKey string) bool {
	read, ok := reader.reads[kvKey]
	return ok && slices.ContainsFunc(w.ns.keys[kvKey], func(v version) bool {
		return v.entry != nil && v.seq >= read && v.by != reader
	})
}

// missedReceipt reports whether a read of kvKey by reader missed the
// write of a receipt.
func (w *world) missedReceipt(reader *actor, kvKey string) bool {
	for _, m := range w.misses[kvKey] {
		if m.reader == reader && slices.ContainsFunc(m.missed, func(v version) bool { return v.entry != nil }) {
			return true
		}
	}
	return false
}

// peek reads what the store holds for key now, without staleness, faults
// or yields.
func (w *world) peek(key keyName) intake.Record {
	was := w.direct
	w.direct = true
	defer func() { w.direct = was }()
	k := w.keyOf(key)
	var rec intake.Record
	if w.mode == KVMode {
		rec, _ = w.kvStore.Lookup(context.Background(), k)
	} else {
		rec, _ = w.ledger.Lookup(context.Background(), k)
		if rec.State == intake.Absent && w.migrating {
			rec, _ = w.kvStore.Lookup(context.Background(), k)
		}
	}
	return rec
}

// peekClaim reads KV's claim for key alone, as if no receipt were stored.
func (w *world) peekClaim(key keyName) intake.Record {
	was := w.direct
	w.direct = true
	defer func() { w.direct = was }()
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
		if w.absent[key] || w.purgedBetween(key, c.start, now) || !w.isAbsent(key) {
			continue
		}
		var until time.Time
		if at, ok := w.commits[key]; ok && !at.Before(c.start) {
			until = at.Add(w.resultTTL)
		} else {
			until = c.acceptedAt.Add(w.settleMaxAge + w.resultTTL)
			if at, ok := w.unresolved[key]; ok {
				until = later(until, at.Add(w.resultTTL))
			}
		}
		if now.Before(until) {
			w.absent[key] = true // once is enough
			if event, ok := w.kvAllows(key, c.start); ok {
				switch {
				case w.racedAnotherOrder(c):
					// The order was placed beside another under the same
					// key: the key ends with the other's outcome, and a
					// retry of this order carries its same order id.
					w.allow("a second order under the key forgotten with the first's outcome", event)
					continue
				case w.keptForAnEarlierClaim(c):
					// Two claims for the order, with two acceptedAt: the
					// key was kept for the earlier one's KeepUntil.
					w.allow("a key kept until an earlier claim's KeepUntil, not a later one's", event)
					continue
				}
			}
			w.violate("%s is absent %s after its order %s may have reached the OMS; it must be kept until %s",
				key, now.Sub(c.acceptedAt), c.orderID, until.Sub(c.acceptedAt))
		}
	}
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

// keptForAnEarlierClaim reports whether c's order was called with an
// earlier acceptedAt too, whose KeepUntil has passed.
func (w *world) keptForAnEarlierClaim(c *gatewayCall) bool {
	for _, d := range w.oms.calls {
		if d.key == c.key && d.orderID == c.orderID && d.acceptedAt.Before(c.acceptedAt) &&
			!w.now().Before(d.acceptedAt.Add(w.settleMaxAge+w.resultTTL)) {
			return true
		}
	}
	return false
}

// racedAnotherOrder reports whether another order under c's key reached
// the gateway: with the KV event that let both be claimed (kvAllows), the
// key may end with the other's outcome.
func (w *world) racedAnotherOrder(c *gatewayCall) bool {
	return slices.ContainsFunc(w.oms.calls, func(d *gatewayCall) bool { return d.key == c.key && d.fp != c.fp })
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
// what the client was given. Over KV, a key whose claim was read stale or
// claimed twice at once (no compare-and-swap) may end with either claim's
// outcome, another acceptedAt or even another order's: allowed, naming
// the event.
func (w *world) checkFinalRetries() {
	for _, fin := range w.finalRetries {
		for _, a := range w.answers {
			if a == fin || a.lookup || a.key != fin.key || a.fp != fin.fp || !w.now().Before(a.start.Add(w.resultTTL)) || w.purgedBetween(a.key, a.start, fin.start) {
				continue
			}
			event, allowed := w.kvAllows(a.key, fin.start)
			switch {
			case a.kind == created && (fin.kind == created || fin.kind == replayed) && bytes.Equal(a.body, fin.body):
			case a.kind == rejected && fin.kind == rejected && fin.orderID == a.orderID:
			case (a.kind == created || (a.kind == rejected && !a.replay)) && allowed:
				w.allow("a final retry got another claim's outcome", event)
			case a.kind == created:
				w.violate("a client of %s was given %s, but a retry once quiet got %s %s", a.key, a.body, fin.kind, fin.body)
			case a.kind == rejected && !a.replay && (fin.kind != rejected || fin.orderID != a.orderID):
				w.violate("a client of %s was told %s was rejected, but a retry once quiet got %s %s", a.key, a.orderID, fin.kind, fin.orderID)
			}
		}
	}
}

// otherClaimsReceipt reports whether body, a receipt stored for a's key
// other than the one a's client was given, is for the same order id and
// the history shows, before a, the KV event that lets a second claim
// exist (kvAllows) by the time a ended, which it returns: a claim minted from a stale read,
// or at once with another, has its own acceptedAt, and the settler may
// store the receipt built from either claim.
func (w *world) otherClaimsReceipt(a *answer, body []byte) (string, bool) {
	event, ok := w.kvAllows(a.key, a.end)
	if !ok || body == nil {
		return "", false
	}
	id, _, _ := order.ReceiptFields(body)
	return event, id == a.orderID
}

// checkOrderIDs: one order id per key and order, and one per key, for as
// long as any record of the first can be kept (RESULT_TTL from its
// acceptance at least). Over KV a second order under a key is allowed
// only after the KV event that lets it be claimed (kvAllows).
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
		case f.orderID != c.orderID:
			w.violate("the OMS saw a second order id for %s: %s, then %s", what, f.orderID, c.orderID)
			m[group] = first{c.orderID, c.acceptedAt}
		}
	}
	for _, c := range w.oms.calls {
		check(perOrder, c.key+" "+c.fp, "one key and order ("+c.key+")", c)
		if f, ok := perKey[c.key]; ok && f.orderID != c.orderID && c.start.Before(f.acceptedAt.Add(w.resultTTL)) {
			if event, ok := w.kvAllows(c.key, c.start); ok {
				// Another order under the key, placed after a read that
				// missed the first's claim, or a claim at once with it.
				w.allow("a second order id for one key", event)
				perKey[c.key] = first{c.orderID, c.acceptedAt}
				continue
			}
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
// second receipt within that time. Over KV, after the event that lets two
// claims exist (kvAllows), two may both create one, with the order's one
// order id; the one stored last is what replays return: allowed, naming
// the event.
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
		within := ok && a.start.Before(prev.end.Add(w.resultTTL)) && !w.purgedBetween(a.key, prev.end, a.start)
		same := within && slices.ContainsFunc(prev.bodies, func(b []byte) bool { return bytes.Equal(b, a.body) })
		event, allowed := w.kvAllows(a.key, a.end)
		otherEvent, otherClaim := w.otherClaimsReceipt(&answer{key: a.key, orderID: id, end: a.end}, a.body)
		switch {
		case a.kind == created && within && !same && allowed:
			w.allow("a second receipt created for one order", event)
			prev.bodies = append(prev.bodies, a.body)
		case a.kind == created && within && !same:
			w.violate("%s created a second receipt for %s within RESULT_TTL:\n  %s\n  %s", a.key, id, prev.bodies[0], a.body)
		case a.kind == created:
			anchors[group] = &anchor{bodies: [][]byte{a.body}, end: a.end}
		case within && !same && otherClaim:
			w.allow("a replay of another claim's receipt", otherEvent)
		case within && !same:
			w.violate("a replay for %s (%s) differs from the receipt created:\n  %s\n  %s", a.key, id, prev.bodies[0], a.body)
		}
	}
}

// checkSettled: once faults stop and time passes the backoff, every key
// whose order may have reached the OMS has a final outcome, or is
// unresolved once SETTLE_MAX_AGE has passed: during a migration, the keys
// KV mode left open too, which ledger mode adopts.
func (w *world) checkSettled() {
	for key, c := range w.oms.last {
		rec := w.peek(key)
		switch {
		case rec.State == intake.Stored, rec.State == intake.Absent:
			// Absent: checkKept says whether it was kept long enough.
		case rec.State == intake.Open && rec.Unresolved:
			if w.now().Before(c.acceptedAt.Add(w.settleMaxAge)) {
				w.violate("%s is unresolved before SETTLE_MAX_AGE", key)
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
