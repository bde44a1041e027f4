package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
)

// The causes KV mode's allowances name. Each allowance names the one event
// that caused what it excuses, and the checker verifies the link: an event
// of another actor, of another time, or of no claim excuses nothing.
//
//   - staleRead: a read of a key, by the request or settler run whose
//     claim (or answer) is excused, that returned a version older than a
//     write that held an entry and already existed; its claim followed that
//     read within staleMost.
//   - claimsAtOnce: a claim written by one actor over another actor's claim
//     that landed after the first one's read: two claims at once, which KV
//     cannot fence (no compare-and-swap).
const (
	staleRead    = "stale read"
	claimsAtOnce = "claims at once"
)

// event is one of KV's documented limits, as the history shows it.
type event struct {
	id   int
	kind string
	text string
}

func (e *event) String() string { return fmt.Sprintf("event %d (%s): %s", e.id, e.kind, e.text) }

// readSeen is what an actor's last read of a KV key returned: stale, the
// staleRead event it is.
type readSeen struct {
	at    time.Time
	entry *kv.Entry
	stale *event
	// latest is what the key held when the read missed it: the version
	// it should have returned (nil for a delete).
	latest *kv.Entry
	// writer is who wrote the version read, if a claim's.
	writer *actor
}

// claimWrite is one write of a held claim under pending:<key>: by whom,
// what it says (decoded as the Worker reads it), and the event that let
// its writer write it blind, if any.
type claimWrite struct {
	key   keyName
	by    *actor
	at    time.Time
	seq   int // the namespace's writes before it
	rec   intake.Record
	cause *event // the writer's stale read just before it, or claims at once
}

// causality is what the checker knows of KV's events and of the claims
// they caused.
type causality struct {
	events []*event
	// writes counts the namespace's writes, as namespace.writes does.
	writes int
	reads  map[*actor]map[string]readSeen
	// lastClaim is each actor's latest held claim of each key.
	lastClaim map[*actor]map[keyName]*claimWrite
	// mints is, per key, order id and acceptedAt, the first claim written
	// with them: the claim that minted that acceptedAt.
	mints map[string]*claimWrite
	// unresolvedMarks is when each key, order id and acceptedAt was first
	// written unresolved: the give-up's mark.
	unresolvedMarks map[string]time.Time
	// resultWriters are, per key, who wrote its outcome, in order.
	resultWriters map[keyName][]resultWrite
	// claims are the held claims written for each key, in order.
	claims map[keyName][]*claimWrite
	// written are, per key, every claim written with an order id, held
	// or open.
	written map[keyName][]*claimWrite
	// answered is when each request was answered.
	answered map[*actor]time.Time
	// claimWriters is who wrote each claim entry, by key and bytes, and
	// claimWrites the write itself, for those with an order id.
	claimWriters map[string]*actor
	claimWrites  map[string]*claimWrite
}

type resultWrite struct {
	by  *actor
	seq int
}

func newCausality() *causality {
	return &causality{reads: make(map[*actor]map[string]readSeen), lastClaim: make(map[*actor]map[keyName]*claimWrite),
		mints: make(map[string]*claimWrite), unresolvedMarks: make(map[string]time.Time), resultWriters: make(map[keyName][]resultWrite), claimWriters: make(map[string]*actor), claimWrites: make(map[string]*claimWrite), answered: make(map[*actor]time.Time),
		claims: make(map[keyName][]*claimWrite), written: make(map[keyName][]*claimWrite)}
}

func (c *causality) newEvent(kind, format string, args ...any) *event {
	e := &event{id: len(c.events) + 1, kind: kind, text: fmt.Sprintf(format, args...)}
	c.events = append(c.events, e)
	return e
}

func claimID(key keyName, orderID string, acceptedAt time.Time) string {
	return key + " " + orderID + " " + strconv.FormatInt(acceptedAt.UnixMilli(), 10)
}

// allowBy counts an allowance by its event's kind, and logs the event.
func (w *world) allowBy(what string, e *event) {
	w.count(fmt.Sprintf("%s (KV allows, after a %s)", what, e.kind))
	w.logf("allowed: %s: %s", what, e)
}

// watched is the namespace as a Worker's isolate reads it: each read is
// recorded for the actor that made it, with the stale read it was.
type watched struct{ *namespace }

func (n watched) GetMany(ctx context.Context, keys ...string) ([]*kv.Entry, error) {
	defer n.stall()()
	before := make([]int, len(keys))
	for i, k := range keys {
		before[i] = len(n.w.misses[k])
	}
	a := n.w.sched.running
	got, err := n.namespace.GetMany(ctx, keys...)
	if err == nil {
		for i, k := range keys {
			n.w.sawRead(a, k, got[i], before[i])
		}
	}
	return got, err
}

func (n watched) Get(ctx context.Context, key string) (kv.Entry, error) {
	defer n.stall()()
	before := len(n.w.misses[key])
	a := n.w.sched.running
	e, err := n.namespace.Get(ctx, key)
	switch {
	case err == nil:
		n.w.sawRead(a, key, &e, before)
	case errors.Is(err, kv.ErrNotFound):
		n.w.sawRead(a, key, nil, before)
	}
	return e, err
}

// stall, now and then where storage faults, holds a ledger-mode read of
// KV's fallback past a claim's lease (stallPastLease).
func (n watched) stall() (after func()) {
	return n.w.stallPastLease("kv fallback read")
}

// stallPastLease, now and then where storage faults, holds a ledger-mode
// call that a request makes while its claim holds a key (what, a read of
// KV's fallback or the rate limit's answer) past the claim's lease, before
// the call or after it, which it returns to be deferred: the runtime
// paused the isolate, or the call hung, or its answer did. The ledger's
// claims are fenced by token and the Worker can tell how long it waited
// (intake's outlasted and renew). KV mode's calls never stall: its claims
// are fenced by their lease alone.
func (w *world) stallPastLease(what string) (after func()) {
	if w.mode != LedgerMode || w.densities[storagePart] == noFaults || !w.faultAt(5, what+" stalls past a lease") {
		return func() {}
	}
	wait := func() { w.sched.sleep(pendingTTL + time.Second) }
	if w.choose(2, "the stall comes after the "+what) == 1 {
		return wait
	}
	wait()
	return func() {}
}

// sawRead records a's read of kvKey, which returned e; the misses from
// index since on are those recorded during it.
func (w *world) sawRead(a *actor, kvKey string, e *kv.Entry, since int) {
	if a == nil || w.direct {
		return
	}
	if _, ok := keyNameOf(kvKey); !ok {
		return
	}
	seen := readSeen{at: w.now(), entry: e}
	if e != nil {
		seen.writer = w.ck.claimWriters[entryID(kvKey, e)]
	}
	if a.readAt != nil {
		seen.at = a.readAt[kvKey]
	}
	ms := w.misses[kvKey]
	for i := len(ms) - 1; i >= since && i >= 0; i-- {
		m := ms[i]
		if m.reader != a {
			continue
		}
		for _, v := range m.missed {
			if v.entry != nil {
				seen.stale = w.ck.newEvent(staleRead, "%s read %s at %s and got an older version than %s's write at %s",
					actorName(a), kvKey, m.at.Format("15:04:05.000"), actorName(v.by), v.at.Format("15:04:05.000"))
				break
			}
		}
		if len(m.missed) > 0 {
			seen.latest = m.missed[len(m.missed)-1].entry
		}
		break
	}
	if w.ck.reads[a] == nil {
		w.ck.reads[a] = make(map[string]readSeen)
	}
	w.ck.reads[a][kvKey] = seen
}

// observeClaim records a write of pending:<key> by the running actor, and
// checks the defences a claim write can break.
func (w *world) observeClaim(key keyName, e *kv.Entry) {
	seq := w.ck.writes - 1
	a := w.sched.running
	if a == nil || w.direct || e == nil {
		return
	}
	w.ck.claimWriters[entryID("pending:"+key, e)] = a
	rec := w.decodeClaim(key, e, w.now())
	if rec.GiveUp.Unresolved() && rec.OrderID != "" {
		id := claimID(key, rec.OrderID, rec.AcceptedAt)
		if _, ok := w.ck.unresolvedMarks[id]; !ok {
			// Marked when its writer decided, as its last call returned:
			// the write may land a second later, past KV's write limit.
			at := w.now()
			for _, c := range w.oms.calls {
				if c.by == a && c.key == key && c.returned {
					at = c.end
				}
			}
			w.ck.unresolvedMarks[id] = at
		}
	}
	if rec.OrderID == "" {
		return // the reference's claim, for no order
	}
	cw := &claimWrite{key: key, by: a, at: w.now(), seq: seq, rec: rec}
	// Its cause: the writer's own read of the key just before, stale, or
	// another's claim that landed after that read. A request's work after
	// its response (a release once its commit failed) is the request: its
	// reads are the request's.
	// A writer that read the key's outcome read it final, whatever its
	// claim said or another wrote since: nothing KV did let it claim the
	// key, and its claim carries no event.
	sawOutcome := false
	for _, reader := range []*actor{a, a.origin()} {
		if r, ok := w.ck.reads[reader]["result:"+key]; ok && r.entry != nil && w.now().Sub(r.at) <= staleMost {
			sawOutcome = true
		}
	}
	for _, reader := range []*actor{a, a.origin()} {
		if sawOutcome {
			break
		}
		for _, kvKey := range []string{"pending:" + key, "result:" + key} {
			if r, ok := w.ck.reads[reader][kvKey]; ok && r.stale != nil && w.now().Sub(r.at) <= staleMost && cw.cause == nil {
				cw.cause = r.stale
			}
		}
	}
	if read, ok := a.reads["pending:"+key]; ok && cw.cause == nil && !sawOutcome {
		for _, other := range w.ck.claimsOf(key) {
			if other.seq >= read && other.by != a {
				cw.cause = w.ck.newEvent(claimsAtOnce, "%s claimed %s at %s over %s's claim, written at %s after its read",
					actorName(a), key, w.now().Format("15:04:05.000"), actorName(other.by), other.at.Format("15:04:05.000"))
				break
			}
		}
	}
	if r, ok := w.ck.reads[a]["pending:"+key]; ok && cw.cause == nil && !sawOutcome && r.writer != nil && r.writer != a &&
		w.decodeClaim(key, r.entry, r.at).State != intake.Held {
		// It took over what a blind claim's holder released, or a release
		// that itself landed blind (one after a failed claim write), or a
		// claim whose lease ended: that event caused it too. A claim it
		// read held and live gave it no leave to claim.
		if read := w.ck.claimWrites[entryID("pending:"+key, r.entry)]; read != nil && read.cause != nil {
			cw.cause = read.cause
		} else if prev := w.ck.lastClaim[r.writer][key]; prev != nil {
			cw.cause = prev.cause
		}
	}
	w.ck.written[key] = append(w.ck.written[key], cw)
	w.ck.claimWrites[entryID("pending:"+key, e)] = cw
	id := claimID(key, rec.OrderID, rec.AcceptedAt)
	if _, minted := w.ck.mints[id]; !minted {
		w.ck.mints[id] = cw
		if cw.cause != nil {
			w.logf("  %s", cw.cause)
		}
		w.checkIsolateForgetsNothing(cw)
	}
	if rec.State != intake.Held {
		return // a release: it holds nothing
	}
	if w.ck.lastClaim[a] == nil {
		w.ck.lastClaim[a] = make(map[keyName]*claimWrite)
	}
	w.ck.lastClaim[a][key] = cw
	w.ck.claims[key] = append(w.ck.claims[key], cw)
	w.checkSettlerTakesNoLiveClaim(cw)
}

func entryID(kvKey string, e *kv.Entry) string {
	return kvKey + "\x00" + e.Value + "\x00" + string(e.Metadata)
}

// claimsOf are the held claims written for key, in order.
func (c *causality) claimsOf(key keyName) []*claimWrite { return c.claims[key] }

// mintOf is the claim that minted order id at acceptedAt under key.
func (w *world) mintOf(key keyName, orderID string, acceptedAt time.Time) *claimWrite {
	return w.ck.mints[claimID(key, orderID, acceptedAt)]
}

// causeBetween is the event that let two claims, x and y, be minted for
// one key: the later one's writer read the key stale just before it, or
// wrote it at once with another's. Nil if neither: nothing excuses them.
func causeBetween(x, y *claimWrite) *event {
	if x == nil || y == nil || x == y {
		return nil
	}
	if x.seq > y.seq {
		x, y = y, x
	}
	return y.cause
}

// decodeClaim is what the Worker reads of a claim entry e at now.
func (w *world) decodeClaim(key keyName, e *kv.Entry, now time.Time) intake.Record {
	rec, _ := kv.NewStore(oneClaim{e}, func() time.Time { return now }).Lookup(context.Background(), w.keyOf(key))
	return rec
}

// oneClaim is a namespace that holds one claim and no outcome.
type oneClaim struct{ e *kv.Entry }

func (o oneClaim) Get(ctx context.Context, key string) (kv.Entry, error) {
	if strings.HasPrefix(key, "pending:") && o.e != nil {
		return *o.e, nil
	}
	return kv.Entry{}, kv.ErrNotFound
}

func (o oneClaim) GetMany(ctx context.Context, keys ...string) ([]*kv.Entry, error) {
	got := make([]*kv.Entry, len(keys))
	for i, k := range keys {
		if strings.HasPrefix(k, "pending:") {
			got[i] = o.e
		}
	}
	return got, nil
}

func (oneClaim) Put(context.Context, string, kv.Entry, kv.PutOptions) error { return nil }
func (oneClaim) Delete(context.Context, string) error                       { return nil }

// remembers is how long an isolate remembers a claim its gateway call
// left behind: the opened set's entry (intake's openedTTL) for an unknown
// outcome, the receipt cache's (cacheTTL) for a final one.
const remembers = 60 * time.Second

// maxOpened is the opened set's bound (intake's maxOpened): past it an
// isolate forgets its oldest open claims.
const maxOpened = 1024

// checkIsolateForgetsNothing: an isolate mints no second acceptedAt for a
// key while it still remembers a claim of its own: a call in flight (the
// in-flight set), a call that returned within the last minute, or a claim
// a request of it wrote and was answered about within the last minute
// (the opened set, the receipt cache). The opened set's bound is the one
// exception: after calls on 1,024 other keys it may have evicted the
// claim, which is counted.
func (w *world) checkIsolateForgetsNothing(mint *claimWrite) {
	a := mint.by
	if a.inst == nil || w.mode != KVMode {
		return
	}
	decided := w.ck.reads[a]["pending:"+mint.key].at
	other := func(orderID string, acceptedAt time.Time) bool {
		return orderID != mint.rec.OrderID || !acceptedAt.Equal(mint.rec.AcceptedAt)
	}
	forgot := func(ended time.Time, orderID string, acceptedAt time.Time) bool {
		switch {
		case decided.Before(ended) || !decided.Before(ended.Add(remembers)):
			return false
		case w.evictedSince(a.inst.id, a.gen, mint.key, ended):
			w.count("an isolate forgot a claim: the opened set's 1,024 entries evicted it")
			return false
		}
		w.violate("isolate %d minted a second acceptedAt for %s (%s at %s) %s after its own claim %s at %s ended: it still remembered that claim",
			a.inst.id, mint.key, mint.rec.OrderID, mint.rec.AcceptedAt.Format("15:04:05.000"), decided.Sub(ended), orderID, acceptedAt.Format("15:04:05.000"))
		return true
	}
	for _, c := range w.oms.calls {
		if c.inst != a.inst.id || c.gen != a.gen || c.key != mint.key || c.by == a || !other(c.orderID, c.acceptedAt) {
			continue
		}
		switch {
		case c.open:
			w.violate("isolate %d minted a claim for %s (%s at %s) while its own call for %s was in flight",
				a.inst.id, mint.key, mint.rec.OrderID, mint.rec.AcceptedAt.Format("15:04:05.000"), c.orderID)
			return
		case c.returned && forgot(c.end, c.orderID, c.acceptedAt):
			return
		}
	}
	for _, cw := range w.ck.written[mint.key] {
		if cw.by == a || cw.by.inst != a.inst || cw.by.gen != a.gen || !other(cw.rec.OrderID, cw.rec.AcceptedAt) {
			continue
		}
		if ended, ok := w.ck.answered[cw.by]; ok && !ended.Before(cw.at) && forgot(ended, cw.rec.OrderID, cw.rec.AcceptedAt) {
			return
		}
	}
}

// evictedSince reports whether isolate inst (generation gen) ended calls
// on maxOpened keys other than key since ended: its opened set may have
// evicted key's claim.
func (w *world) evictedSince(inst, gen int, key keyName, ended time.Time) bool {
	keys := make(map[keyName]bool)
	for _, d := range w.oms.calls {
		if d.inst == inst && d.gen == gen && d.key != key && d.returned && !d.end.Before(ended) {
			keys[d.key] = true
		}
	}
	return len(keys) >= maxOpened
}

// checkSettlerTakesNoLiveClaim: the settler takes over only a claim it
// read open (left open, or its lease over), never one it read held.
func (w *world) checkSettlerTakesNoLiveClaim(cw *claimWrite) {
	if cw.by.kind != settlerActor {
		return
	}
	seen, ok := w.ck.reads[cw.by]["pending:"+cw.key]
	if !ok || seen.entry == nil {
		return
	}
	if rec := w.decodeClaim(cw.key, seen.entry, seen.at); rec.State == intake.Held {
		w.violate("%s took over %s, whose claim it read live (held, its lease until after %s)", cw.by.name, cw.key, seen.at.Format("15:04:05.000"))
	}
}

// checkAlertWaited: a KV order_unresolved alert comes at least
// 2 x ReadsLag after the key's claim was first written unresolved: the
// give-up's check reads only once reads have caught up.
func (w *world) checkAlertWaited(key keyName, p intake.Placement) {
	if w.mode != KVMode {
		return
	}
	mark, ok := w.ck.unresolvedMarks[claimID(key, p.OrderID, p.AcceptedAt)]
	switch {
	case !ok:
		w.violate("%s was reported unresolved with no unresolved mark written before", key)
	case w.now().Sub(mark) < 2*kv.ReadsLag:
		w.violate("%s was reported unresolved %s after its unresolved mark, before 2 x ReadsLag (%s)", key, w.now().Sub(mark), 2*kv.ReadsLag)
	}
}
