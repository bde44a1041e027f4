package sim

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

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
		w.raced[call.key] = true
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
	case rejected:
		if got, ok := w.oms.orders[ans.orderID]; !ok || got.accepted {
			w.violate("a client of %s was told %s was rejected, which the OMS did not reject", ans.key, ans.orderID)
		}
	case unresolved:
		w.checkNotReceipted(ans.key, ans.orderID, "was told unresolved to its client")
	}
	if ans.lookup && ans.body != nil && !w.storedBodies[ans.key][string(ans.body)] {
		w.violate("a lookup of %s was told a receipt that was never stored: %s", ans.key, ans.body)
	}
}

// observeKVWrite: no receipt is stored for an order the OMS did not
// accept (or, for a rejection, reject).
func (w *world) observeKVWrite(key string, e *kv.Entry, expires time.Time) {
	w.lastWriter[key] = w.sched.running
	if name, ok := strings.CutPrefix(key, "pending:"); ok && e != nil && w.sched.running != nil && w.sched.running.inst != nil {
		if w.claimedBy[name] == nil {
			w.claimedBy[name] = make(map[[2]int]bool)
		}
		w.claimedBy[name][[2]int{w.sched.running.inst.id, w.sched.running.gen}] = true
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
// its receipt is stored. Over KV, two isolates that called the gateway for
// the key, at once or after a stale read, may: one stores the receipt, the
// other, reading stale, reports its own failed call (counted).
func (w *world) checkNotReceipted(key keyName, orderID, what string) {
	until, ok := w.receipts[key][orderID]
	switch {
	case !ok || !w.now().Before(until):
	case w.mode == KVMode && (w.raced[key] || len(w.claimedBy[key]) > 1):
		w.count("unresolved beside a racing isolate's receipt (KV allows)")
	default:
		w.violate("%s %s, but its accepted receipt for %s is stored", key, what, orderID)
	}
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
		var until time.Time
		if at, ok := w.commits[key]; ok && !at.Before(c.start) {
			until = at.Add(w.resultTTL)
		} else {
			until = c.acceptedAt.Add(w.settleMaxAge + w.resultTTL)
			if at, ok := w.unresolved[key]; ok {
				until = later(until, at.Add(w.resultTTL))
			}
		}
		if now.Before(until) && !w.absent[key] && w.peek(key).State == intake.Absent {
			w.absent[key] = true // once is enough
			if w.mode == KVMode && w.racedAnotherOrder(c) {
				// The order was placed beside another under the same key,
				// after a read that missed it: KV's documented limit. The
				// key ends with the other's outcome, and a retry of this
				// order carries its same order id.
				w.count("a second order under the key, from a stale read, forgotten with the first's outcome (KV allows)")
				continue
			}
			w.violate("%s is absent %s after its order %s may have reached the OMS; it must be kept until %s",
				key, now.Sub(c.acceptedAt), c.orderID, until.Sub(c.acceptedAt))
		}
	}
}

// racedAnotherOrder reports whether a gateway call for another order under
// c's key started within staleWindow of c: only a read that missed the
// other order's claim or receipt lets both reach the gateway.
func (w *world) racedAnotherOrder(c *gatewayCall) bool {
	for _, d := range w.oms.calls {
		if d.key == c.key && d.fp != c.fp && max(d.start.Sub(c.start), c.start.Sub(d.start)) < staleWindow {
			return true
		}
	}
	return false
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
// what the client was given. Over KV, a key claimed by two isolates, or
// by one before and after it died with its memory (no compare-and-swap:
// one read it stale), may end with either claim's outcome, another
// acceptedAt or even another order's: counted.
func (w *world) checkFinalRetries() {
	for _, fin := range w.finalRetries {
		for _, a := range w.answers {
			if a == fin || a.lookup || a.key != fin.key || a.fp != fin.fp || !w.now().Before(a.start.Add(w.resultTTL)) {
				continue
			}
			switch {
			case a.kind == created && (fin.kind == created || fin.kind == replayed) && bytes.Equal(a.body, fin.body):
			case (a.kind == created || (a.kind == rejected && !a.replay)) && w.mode == KVMode && len(w.claimedBy[a.key]) > 1:
				w.count("final retry got another isolate's claim's outcome (KV allows)")
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
// the key was claimed in KV by more than one isolate (or isolate life):
// without
// compare-and-swap, an isolate whose read of the key was stale mints a
// claim of its own, with its own acceptedAt, and the settler may store
// the receipt built from either claim.
func (w *world) otherClaimsReceipt(a *answer, body []byte) bool {
	if w.mode != KVMode || len(w.claimedBy[a.key]) < 2 || body == nil {
		return false
	}
	id, _, _ := order.ReceiptFields(body)
	return id == a.orderID
}

// checkOrderIDs: one order id per key and order, in both modes, and one
// per key over the ledger, for as long as any record of the first can be
// kept (RESULT_TTL from its acceptance at least).
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
		case !ok || !c.start.Before(f.acceptedAt.Add(w.resultTTL)):
			m[group] = first{c.orderID, c.acceptedAt}
		case f.orderID != c.orderID:
			w.violate("the OMS saw a second order id for %s: %s, then %s", what, f.orderID, c.orderID)
			m[group] = first{c.orderID, c.acceptedAt}
		}
	}
	for _, c := range w.oms.calls {
		check(perOrder, c.key+" "+c.fp, "one key and order ("+c.key+")", c)
		if w.mode == LedgerMode {
			check(perKey, c.key, "one key ("+c.key+")", c)
		}
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
// its creation is the same, byte for byte, and over the ledger a key never
// creates a second receipt within that time. Over KV two isolates racing
// for a fresh key may both create one (no compare-and-swap), with the
// order's one order id; the one stored last is what replays return:
// counted, not a violation.
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
		within := ok && a.start.Before(prev.end.Add(w.resultTTL))
		same := within && slices.ContainsFunc(prev.bodies, func(b []byte) bool { return bytes.Equal(b, a.body) })
		switch {
		case a.kind == created && within && !same && w.mode == KVMode:
			w.count("receipts created by racing isolates (KV allows)")
			prev.bodies = append(prev.bodies, a.body)
		case a.kind == created && within && !same:
			w.violate("%s created a second receipt for %s within RESULT_TTL:\n  %s\n  %s", a.key, id, prev.bodies[0], a.body)
		case a.kind == created:
			anchors[group] = &anchor{bodies: [][]byte{a.body}, end: a.end}
		case within && !same && w.otherClaimsReceipt(&answer{key: a.key, orderID: id}, a.body):
			w.count("replay of another isolate's claim's receipt (KV allows)")
		case within && !same:
			w.violate("a replay for %s (%s) differs from the receipt created:\n  %s\n  %s", a.key, id, prev.bodies[0], a.body)
		}
	}
}

// checkSettled: once faults stop and time passes the backoff, every key
// whose order may have reached the OMS has a final outcome, or is
// unresolved once SETTLE_MAX_AGE has passed.
func (w *world) checkSettled() {
	for key, c := range w.oms.last {
		rec := w.peek(key)
		if w.migrating && rec.State != intake.Stored {
			if inLedger, _ := w.ledger.Lookup(context.Background(), w.keyOf(key)); inLedger.State == intake.Absent {
				// Left open in KV before the migration: only a client's
				// retry adopts it into the ledger, whose settler never
				// reads KV (a known gap, counted).
				w.count("key left open in the KV fallback")
				continue
			}
		}
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
