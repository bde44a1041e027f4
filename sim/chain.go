package sim

import (
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/settlequeue"
)

// KV mode's settler is a chain of queue messages per key: each attempt
// that leaves the key unknown sends the next message, for the key's due
// time. The Cron sweep is for chains a named event broke, and is no
// substitute for a chain that ends by itself: a key found overdue with no
// message coming had the chain of its current due time broken by one of
// these, or the Worker dropped it.
//
//   - after the due time was written: a send for the key that failed, a
//     message of it the queue lost or retried to its end, a sweep whose
//     settling of it failed (which sends nothing), a message that ended
//     on its consumer's own stale read of it (cause.go's staleRead) that
//     hid what it decides on (staleReadHid), or one
//     that found the key final, with a claim left beside its receipt that
//     outlives it;
//   - after the due time was written, the isolate death of the request
//     that wrote it (which owed the message), or its cut-off 30 s after
//     its client went away (waitUntil's limit; the Worker goes on till
//     then), or
//     of a settler working on the key (whose message is not redelivered
//     here);
//   - a write of the key's claim that failed (or landed, and was told it
//     failed), by the request that wrote the due time, before that write
//     or after it: kv.Store leaves a key whose claim write failed open and
//     due, since the claim may have landed, and the request answers 503
//     without a gateway call or a message (a takeover it gave back sends
//     one, intake.ErrGivenBack, and wrote no due time of its own: the
//     break excuses only a due time its own request wrote); a release
//     that failed leaves the due time in place, while the request's
//     message is for the time the release meant to write;
//   - for a key an old version left open or held before a migrating
//     history began, that version's messages, which are not the history's.
const chainBroken = "settle chain broken"

// How a chain broke: what each kind of break excuses differs (chainBreak).
type breakKind uint8

const (
	breakAfter      breakKind = iota // a message lost, or a settle that sent none
	breakStopped                     // an actor on the key stopped
	breakClaimWrite                  // a write of the key's claim failed
	breakSeeded                      // an old version's, before the history
)

func (k breakKind) String() string {
	switch k {
	case breakAfter:
		return "a message lost, or a settle that sent none"
	case breakStopped:
		return "an actor on the key stopped"
	case breakClaimWrite:
		return "its request's claim write failed"
	}
	return "an old version's, before the history"
}

// settleMessage is one settle message on its way: delivered to consumer,
// once one takes it, and done once handled.
type settleMessage struct {
	consumer *actor
	done     bool
}

// chainBreak is an event that broke key's chain, its kind, and in whose
// run.
type chainBreak struct {
	kind breakKind
	by   *actor
	e    *event
}

// dueWrite is the first write of one of a key's due times (noteDue): by
// whom, and seq, how many events the history had then: a break after it
// has a higher id.
type dueWrite struct {
	due      time.Time
	by       *actor
	seq      int
	attempts int // the key's attempts as written
}

// excuses reports whether b broke the chain of due.
func (b chainBreak) excuses(due dueWrite, written bool) bool {
	switch {
	case !written:
		return b.kind == breakSeeded
	case b.kind == breakClaimWrite:
		return b.by != nil && b.by.origin() == due.by.origin()
	case b.e.id <= due.seq:
		return false
	case b.kind == breakStopped:
		return b.by.origin() == due.by.origin() || b.by.kind == settlerActor
	}
	return b.kind == breakAfter
}

// sentSettle notes a message for body's key on its way.
func (w *world) sentSettle(body []byte) *settleMessage {
	key, err := settlequeue.ParseMessage(body)
	if err != nil {
		return &settleMessage{}
	}
	m := &settleMessage{}
	w.settleMessages[key.String()] = append(w.settleMessages[key.String()], m)
	return m
}

// breakChain records what broke the chain of the key body names.
func (w *world) breakChain(body []byte, format string, args ...any) {
	if key, err := settlequeue.ParseMessage(body); err == nil {
		w.breakChainOf(key.String(), breakAfter, format, args...)
	}
}

func (w *world) breakChainOf(key keyName, kind breakKind, format string, args ...any) {
	w.breakBy(key, kind, w.sched.running, format, args...)
}

// breakBy records an event of by's that broke key's chain.
func (w *world) breakBy(key keyName, kind breakKind, by *actor, format string, args ...any) {
	if w.mode != KVMode || key == "" {
		return
	}
	e := w.ck.newEvent(chainBroken, "%s: "+format, append([]any{key}, args...)...)
	w.chainBreaks[key] = append(w.chainBreaks[key], chainBreak{kind: kind, by: by, e: e})
}

// stoppedOn records the chain an actor that stops may break: the key it
// worked on, or its request's.
func (w *world) stoppedOn(a *actor, why string) {
	key := a.key
	if key == "" && a.request != nil {
		key = a.request.key
	}
	w.breakBy(key, breakStopped, a, "%s %s", a.name, why)
}

// noteDue notes key's due time after a write of its claim (a held
// claim's is its lease's end): the first write of that time since the
// key's claim was last gone owes the message for it, and bounds the
// events that may have broken its chain. A takeover that writes the same
// time again relies on that chain: it inherits the key's due time, and
// so does a release that made no call (a claim write that failed, put
// back as it was; another order's retry). A client's release after a
// call that failed too (one attempt more: a retry of a key awaiting the
// give-up's check leaves the time as it read it) sends a message for it,
// since its read may have been stale and the time's chain ended since:
// the latest such write bounds the breaks.
func (w *world) noteDue(key keyName) {
	if w.mode != KVMode || w.direct {
		return
	}
	rec := w.peekClaim(key) // a claim left beside a receipt outlives it
	switch {
	case rec.State == intake.Absent:
		delete(w.dues, key)
		return
	case rec.NextAttempt.IsZero():
		return // given up on
	}
	if w.dues[key] == nil {
		w.dues[key] = make(map[int64]dueWrite) // by UnixNano: a time.Time is no map key
	}
	a := w.sched.running
	prev, seen := w.dues[key][rec.NextAttempt.UnixNano()]
	if !seen || rec.State == intake.Open && a != nil && a.origin().kind == requestActor && rec.Attempts > prev.attempts {
		w.dues[key][rec.NextAttempt.UnixNano()] = dueWrite{due: rec.NextAttempt, by: a, seq: len(w.ck.events), attempts: rec.Attempts}
	}
}

// handledSettle notes a message handled by its consumer, whose Handle
// returned err: a message that ended with its key open, due and awaited
// by no other message, on its consumer's stale read, broke the chain
// (the request that sent it may still be answering its client).
func (w *world) handledSettle(m *settleMessage, key keyName, err error) {
	m.done = true
	if err != nil || w.mode != KVMode || w.messageComing(key) {
		return
	}
	switch rec := w.peek(key); {
	case rec.State == intake.Stored && !w.peekClaim(key).NextAttempt.IsZero():
		// Final: the chain is done with. The claim left beside the
		// receipt (written on a stale read of it) may outlive it, and
		// read due once alone: not this chain's to settle.
		w.breakChainOf(key, breakAfter, "its message found the key final, with a claim left beside its receipt")
		return
	case rec.State != intake.Open || rec.NextAttempt.IsZero():
		return
	}
	for _, k := range []string{"pending:" + key, "result:" + key} {
		if r, ok := w.ck.reads[m.consumer][k]; ok && r.stale != nil && w.staleReadHid(key, k, r) {
			w.breakChainOf(key, breakAfter, "its message ended on %s", r.stale)
			return
		}
	}
}

// staleReadHid reports whether r, a stale read of kvKey, hid something the
// settler decides on: an outcome, or a claim that says another phase, due
// time, attempt count or order than the one read. A stale read that
// returned what the key says ends no chain.
func (w *world) staleReadHid(key keyName, kvKey string, r readSeen) bool {
	if !strings.HasPrefix(kvKey, "pending:") || r.entry == nil || r.latest == nil {
		return true
	}
	got, want := w.decodeClaim(key, r.entry, r.at), w.decodeClaim(key, r.latest, r.at)
	return got.State != want.State || !got.NextAttempt.Equal(want.NextAttempt) || got.GiveUp != want.GiveUp ||
		got.Attempts != want.Attempts || got.OrderID != want.OrderID
}

// settleComing reports whether a message for key is on its way, or an
// actor still works on the key that may send one.
func (w *world) settleComing(key keyName) bool {
	if w.messageComing(key) {
		return true
	}
	for _, list := range [][]*actor{w.sched.ready, w.sched.timers, {w.sched.running}} {
		for _, a := range list {
			if a == nil || !alive(a) || a.kind == driverActor || a.kind == daemonActor {
				continue
			}
			if a.key == key || a.request != nil && a.request.key == key {
				return true
			}
		}
	}
	return false
}

// messageComing reports whether a message for key is on its way.
func (w *world) messageComing(key keyName) bool {
	msgs := w.settleMessages[key][:0]
	for _, m := range w.settleMessages[key] {
		if !m.done && (m.consumer == nil || alive(m.consumer)) {
			msgs = append(msgs, m)
		}
	}
	w.settleMessages[key] = msgs
	return len(msgs) > 0
}

// alive reports whether a's isolate still runs it.
func alive(a *actor) bool { return a.inst == nil || a.gen == a.inst.gen }

// checkChainGoesOn: a key the sweep finds overdue, open and due for the
// settler for more than the grace, with no message coming, had its chain
// broken by a named event since its due time was written (chainBroken).
// Otherwise the Worker ended the chain by itself: the key waited for the
// sweep, minutes, where its backoff said seconds.
func (w *world) checkChainGoesOn(key intake.Key) {
	name := key.String()
	rec := w.peek(name)
	if rec.State != intake.Open || rec.NextAttempt.IsZero() || rec.GiveUp == intake.GivenUp ||
		w.now().Before(rec.NextAttempt.Add(sweepGrace)) || w.settleComing(name) {
		return
	}
	due, written := w.dues[name][rec.NextAttempt.UnixNano()]
	for _, b := range w.chainBreaks[name] {
		if b.excuses(due, written) {
			w.count("a sweep found a key whose settle chain an event broke: " + b.kind.String())
			w.logf("allowed: the sweep finds %s: %s", name, b.e)
			return
		}
	}
	w.violate("the sweep found %s overdue since %s with no settle message coming, and no event broke its chain since its due time was written (after event %d)",
		name, rec.NextAttempt.Format("15:04:05.000"), due.seq)
}
