package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
	"github.com/edge-orders/edge-orders/settlequeue"
)

// Allowances held to the event that caused what they excuse (STYLE 9c):
// each test builds a history in which the named event is absent, or is
// not what led to the excused write, and holds the checker to failing it.

const pendingKey = "pending:" + checkedKey

// kvClaimEntry is the entry kv.Store writes for c's held claim at w's now
// (made on a namespace of its own, to be written as an actor).
func kvClaimEntry(t *testing.T, w *world, c intake.Claim) kv.Entry {
	t.Helper()
	ctx := context.Background()
	mem := kv.NewMemoryNamespace()
	if _, err := kv.NewStore(mem, w.now).Begin(ctx, w.keyOf(checkedKey), c); err != nil {
		t.Fatal(err)
	}
	e, err := mem.Get(ctx, pendingKey)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// kvReleaseEntry is the entry kv.Store writes when c's holder releases it
// open after a call whose outcome is unknown.
func kvReleaseEntry(t *testing.T, w *world, c intake.Claim) kv.Entry {
	t.Helper()
	ctx := context.Background()
	mem := kv.NewMemoryNamespace()
	c.Stage, c.NextAttempt = intake.StageSent, w.now().Add(30*time.Second)
	if err := kv.NewStore(mem, w.now).Release(ctx, w.keyOf(checkedKey), c); err != nil {
		t.Fatal(err)
	}
	e, err := mem.Get(ctx, pendingKey)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// readAs is a's read of kvKey, as a Worker's isolate reads it.
func readAs(w *world, a *actor, kvKey string) *kv.Entry {
	var got *kv.Entry
	as(w, a, 0, func() {
		before := len(w.misses[kvKey])
		got = w.ns.read(kvKey)
		w.sawRead(a, kvKey, got, before)
	})
	return got
}

// kvWorld is checkedWorld in KV mode with the settle chain's records.
func kvWorld(t *testing.T) (*world, [locations]*actor) {
	w, in, _ := checkedWorld(t, KVMode)
	w.dues, w.chainBreaks, w.settleMessages = make(map[keyName]map[int64]dueWrite), make(map[keyName][]chainBreak), make(map[keyName][]*settleMessage)
	w.resultTTL = 24 * time.Hour
	return w, in
}

func claimFor(token string, at time.Time) intake.Claim { // order-1, fp
	return intake.Claim{Token: token, Fingerprint: "fp", OrderID: "order-1", AcceptedAt: at, Lease: time.Minute,
		KeepUntil: at.Add(24 * time.Hour), Order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}}
}

// TestAClaimWrittenOverALiveClaimItReadExactlyIsNotExcused: request A's
// read missed C's claim (a stale read, event e1), and A claimed the key
// blind: A's claim is rightly excused beside C's. Request B, in another
// isolate, then read A's claim exactly, held and live, and claimed the key
// all the same (a Worker that takes over a live claim: a bug), and calls
// while A calls. Nothing B read was stale and no claim landed after its
// read: no event caused B's claim. The checker must fail the two calls at
// once; it excused them by e1, A's miss of C's claim, twice over:
//
//   - observeClaim gave B's claim the event of the claim it read (the
//     inheritance meant for a takeover of a blind claim's release, or of
//     one whose lease ended), though B read it held and live;
//   - checkOneCallAtOnce (eitherCause) excused two calls by either
//     claim's event, so even with B's claim given none, A's own e1, which
//     B's claim did not follow from, excused them: the later claim's event
//     (causeBetween) is the one that can have caused two calls at once.
func TestAClaimWrittenOverALiveClaimItReadExactlyIsNotExcused(t *testing.T) {
	w, in := kvWorld(t)
	a := &actor{name: "request A", inst: in[0].inst, kind: requestActor, key: checkedKey}
	b := &actor{name: "request B", inst: &instance{id: 3, loc: 0}, kind: requestActor, key: checkedKey}
	c := &actor{name: "request C", inst: in[1].inst, kind: requestActor, key: checkedKey}

	if got := readAs(w, a, pendingKey); got != nil { // location 0 caches "not found" for a minute
		t.Fatalf("set up: A's first read = %v, want not found", got)
	}
	as(w, c, time.Second, func() { e := kvClaimEntry(t, w, claimFor("c", w.now())); w.ns.write(pendingKey, &e, 0) })
	w.sched.now = w.sched.now.Add(time.Second)
	if got := readAs(w, a, pendingKey); got != nil {
		t.Fatalf("set up: A's read = %v, want its location's cached not found (a stale read of C's claim)", got)
	}
	as(w, a, 0, func() { e := kvClaimEntry(t, w, claimFor("a", w.now())); w.ns.write(pendingKey, &e, 0) })
	claimA := w.ck.lastClaim[a][checkedKey]
	if claimA == nil || claimA.cause == nil || claimA.cause.kind != staleRead {
		t.Fatalf("set up: A's claim %+v, want one caused by its stale read", claimA)
	}
	callA := &gatewayCall{key: checkedKey, orderID: "order-1", fp: "fp", acceptedAt: claimA.rec.AcceptedAt, inst: a.inst.id,
		start: w.now(), open: true, by: a}
	as(w, a, 0, func() { w.checkOneCallAtOnce(callA); w.oms.record(callA) })

	w.sched.now = w.sched.now.Add(2 * time.Second)
	seen := readAs(w, b, pendingKey) // its location saw A's own write at once
	if seen == nil || w.decodeClaim(checkedKey, seen, w.now()).State != intake.Held || w.ck.reads[b][pendingKey].stale != nil {
		t.Fatalf("set up: B's read = %v, want A's claim, held, read exactly", seen)
	}
	as(w, b, time.Second, func() { e := kvClaimEntry(t, w, claimFor("b", w.now())); w.ns.write(pendingKey, &e, 0) })
	claimB := w.ck.lastClaim[b][checkedKey]
	if claimB == nil {
		t.Fatal("set up: B's claim was not recorded")
	}
	if claimB.cause != nil {
		t.Errorf("B's claim, written after B read A's live claim exactly, carries %s", claimB.cause)
	}
	callB := &gatewayCall{key: checkedKey, orderID: "order-1", fp: "fp", acceptedAt: claimB.rec.AcceptedAt, inst: b.inst.id,
		start: w.now(), open: true, by: b}
	w.violations, w.counts = nil, make(map[string]int)
	as(w, b, 0, func() { w.checkOneCallAtOnce(callB) })
	if !violated(w, "two gateway calls for "+checkedKey+" at once") {
		t.Errorf("B's call beside A's, under a claim B wrote over A's live claim it read exactly, was excused: violations %q, counts %v", w.violations, w.counts)
	}

	// The same two calls with B's claim carrying no event: eitherCause,
	// which checkOneCallAtOnce used, excused them by A's.
	claimB.cause = nil
	w.violations, w.counts = nil, make(map[string]int)
	as(w, b, 0, func() { w.checkOneCallAtOnce(callB) })
	if !violated(w, "two gateway calls for "+checkedKey+" at once") {
		t.Errorf("with B's claim carrying no event, A's own stale read of C's claim excused B's call beside A's: violations %q, counts %v", w.violations, w.counts)
	}
}

// TestAClaimWhoseWriterReadTheReceiptIsNotExcusedByAStaleReadOfTheClaim:
// B's location cached A's held claim; A released it open, the settler took
// it over, stored the order's receipt and deleted the claim. B then read
// the key: its read of result: returned the receipt, exactly, and its read
// of pending: returned A's old claim from the cache (a stale read: it
// missed the release and the settler's claim). kv.Store reads a key with a
// stored outcome as Stored whatever its claim says, so the stale read of
// the claim changed nothing B could decide: a Worker that claims the key
// again and creates a second receipt (a bug) did so with the receipt in
// hand. The checker excused the second receipt by the stale read of the
// claim.
func TestAClaimWhoseWriterReadTheReceiptIsNotExcusedByAStaleReadOfTheClaim(t *testing.T) {
	w, in := kvWorld(t)
	a := &actor{name: "request A", inst: in[0].inst, kind: requestActor, key: checkedKey}
	s := &actor{name: "queue consumer", inst: &instance{id: 2, loc: 0}, kind: settlerActor, key: checkedKey}
	b := &actor{name: "request B", inst: in[1].inst, kind: requestActor, key: checkedKey}

	accepted := w.now()
	ca := claimFor("a", accepted)
	as(w, a, 0, func() { e := kvClaimEntry(t, w, ca); w.ns.write(pendingKey, &e, 0) })
	if got := readAs(w, b, pendingKey); got == nil { // location 1 caches A's claim for a minute
		t.Fatal("set up: B's first read found nothing, want A's claim")
	}
	as(w, a, 2*time.Second, func() { e := kvReleaseEntry(t, w, ca); w.ns.write(pendingKey, &e, 0) })
	if got := readAs(w, s, pendingKey); got == nil || w.decodeClaim(checkedKey, got, w.now()).State != intake.Open {
		t.Fatalf("set up: the settler's read = %v, want A's release, open", got)
	}
	cs := ca
	cs.Token = "s"
	as(w, s, 2*time.Second, func() { e := kvClaimEntry(t, w, cs); w.ns.write(pendingKey, &e, 0) })
	first := order.Receipt{OrderID: "order-1", Status: order.StatusAccepted, AcceptedAt: accepted,
		Order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}}.JSON()
	as(w, s, time.Second, func() { w.ns.write("result:"+checkedKey, &kv.Entry{Value: string(first)}, 0) })
	as(w, s, time.Second, func() { w.ns.write(pendingKey, nil, 0) })

	w.sched.now = w.sched.now.Add(5 * time.Second)
	if got := readAs(w, b, "result:"+checkedKey); got == nil || got.Value != string(first) {
		t.Fatalf("set up: B's read of result: = %v, want the receipt", got)
	}
	if got := readAs(w, b, pendingKey); got == nil || w.ck.reads[b][pendingKey].stale == nil {
		t.Fatalf("set up: B's read of pending: = %v, want A's claim from its location's cache, stale", got)
	}
	again := w.now().Add(time.Second)
	as(w, b, time.Second, func() { e := kvClaimEntry(t, w, claimFor("b", again)); w.ns.write(pendingKey, &e, 0) })
	claimB := w.ck.lastClaim[b][checkedKey]
	if claimB == nil {
		t.Fatal("set up: B's claim was not recorded")
	}
	if claimB.cause != nil {
		t.Errorf("B's claim, written after B read the key's receipt exactly, carries %s", claimB.cause)
	}
	second := order.Receipt{OrderID: "order-1", Status: order.StatusAccepted, AcceptedAt: again,
		Order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}}.JSON()
	w.oms.orders["order-1"].fp = "fp"
	w.answers = []*answer{
		{key: checkedKey, fp: "fp", start: accepted, end: accepted.Add(8 * time.Second), kind: created, body: first, orderID: "order-1", by: a},
		{key: checkedKey, fp: "fp", start: again, end: again.Add(2 * time.Second), kind: created, body: second, orderID: "order-1", by: b},
	}
	w.violations, w.counts = nil, make(map[string]int)
	w.checkReplaysIdentical()
	if !violated(w, "created a second receipt for order-1") {
		t.Errorf("a second receipt, created by a claim whose writer read the first receipt exactly, was excused: violations %q, counts %v",
			w.violations, allowed(w))
	}
}

// allowed are the allowances w counted.
func allowed(w *world) []string {
	var out []string
	for k := range w.counts {
		if strings.Contains(k, "KV allows") {
			out = append(out, k)
		}
	}
	return out
}

// TestAnAbsentKeyIsNotExcusedByARivalOutcomeItDoesNotHold: request B's
// read missed A's claim of order-1 (a stale read, event e) and B claimed
// the key blind for another order, order-2: both called, and neither
// outcome is known. Then A's release deleted the key (a Worker that drops
// a claim whose order may have reached the OMS: a bug, the mutant "an
// unknown outcome's release deletes the claim and its order id"). The key
// is absent with both orders unknown, long before either's KeepUntil. The
// allowance "a second order under the key forgotten with the first's
// outcome" is for a key that ends with the rival order's outcome, kept its
// TTL; here no outcome was ever stored, and the key did not end with
// either order: e did not cause the absence, A's delete did. The checker
// excused it by e.
func TestAnAbsentKeyIsNotExcusedByARivalOutcomeItDoesNotHold(t *testing.T) {
	w, in := kvWorld(t)
	w.settleMaxAge, w.absentSeen, w.unresolved = time.Hour, make(map[*gatewayCall]bool), make(map[keyName]time.Time)
	a := &actor{name: "request A", inst: in[0].inst, kind: requestActor, key: checkedKey}
	b := &actor{name: "request B", inst: in[1].inst, kind: requestActor, key: checkedKey}
	if got := readAs(w, b, pendingKey); got != nil { // location 1 caches "not found" for a minute
		t.Fatalf("set up: B's first read = %v, want not found", got)
	}
	ca := claimFor("a", w.now().Add(time.Second))
	as(w, a, time.Second, func() { e := kvClaimEntry(t, w, ca); w.ns.write(pendingKey, &e, 0) })
	callA := &gatewayCall{key: checkedKey, orderID: "order-1", fp: "fp", acceptedAt: ca.AcceptedAt, inst: a.inst.id, start: w.now(), by: a}
	as(w, a, 0, func() { w.checkOneCallAtOnce(callA); w.oms.record(callA) })
	if got := readAs(w, b, pendingKey); got != nil || w.ck.reads[b][pendingKey].stale == nil {
		t.Fatalf("set up: B's read = %v, want its location's cached not found, stale", got)
	}
	cb := claimFor("b", w.now().Add(time.Second))
	cb.OrderID, cb.Fingerprint, cb.Order = "order-2", "fp2", order.Order{Symbol: "MSFT", Side: order.Sell, Quantity: 3}
	as(w, b, time.Second, func() { e := kvClaimEntry(t, w, cb); w.ns.write(pendingKey, &e, 0) })
	if claimB := w.ck.lastClaim[b][checkedKey]; claimB == nil || claimB.cause == nil {
		t.Fatalf("set up: B's claim %+v, want one caused by its stale read", claimB)
	}
	callB := &gatewayCall{key: checkedKey, orderID: "order-2", fp: "fp2", acceptedAt: cb.AcceptedAt, inst: b.inst.id, start: w.now(), by: b}
	as(w, b, 0, func() { w.checkOneCallAtOnce(callB); w.oms.record(callB) })
	callA.end, callA.returned = w.now(), true
	callB.end, callB.returned = w.now(), true
	w.oms.open = map[keyName][]*gatewayCall{}

	as(w, a, 2*time.Second, func() { w.ns.write(pendingKey, nil, 0) }) // the bug: A's release deletes the key
	w.violations, w.counts = nil, make(map[string]int)
	w.sched.now = w.sched.now.Add(time.Minute)
	w.checkKept()
	if !violated(w, checkedKey+" is absent") {
		t.Errorf("a key absent with both its orders unknown, no outcome ever stored, was excused: violations %q, counts %v",
			w.violations, allowed(w))
	}
}

// TestAClaimWhoseWriterReadTheReceiptIsNotExcusedByAClaimAtOnce: as
// above, with nothing B read stale: B read the receipt, and the claim
// deleted, exactly. Request C, whose location still cached "not found",
// claimed the key blind after B's read (C's claim is rightly C's event).
// B then claimed the key with the receipt in hand (the bug) and created a
// second receipt: C's claim landing after B's read is no cause of B's, which
// the receipt B read forbade whatever the claim said. The checker named
// "claims at once" and excused it.
func TestAClaimWhoseWriterReadTheReceiptIsNotExcusedByAClaimAtOnce(t *testing.T) {
	w, in := kvWorld(t)
	a := &actor{name: "request A", inst: in[0].inst, kind: requestActor, key: checkedKey}
	b := &actor{name: "request B", inst: &instance{id: 3, loc: 0}, kind: requestActor, key: checkedKey}
	c := &actor{name: "request C", inst: in[1].inst, kind: requestActor, key: checkedKey}
	if got := readAs(w, c, pendingKey); got != nil { // location 1 caches "not found"
		t.Fatalf("set up: C's first read = %v, want not found", got)
	}
	accepted := w.now()
	as(w, a, time.Second, func() { e := kvClaimEntry(t, w, claimFor("a", accepted)); w.ns.write(pendingKey, &e, 0) })
	first := order.Receipt{OrderID: "order-1", Status: order.StatusAccepted, AcceptedAt: accepted,
		Order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}}.JSON()
	as(w, a, time.Second, func() { w.ns.write("result:"+checkedKey, &kv.Entry{Value: string(first)}, 0) })
	as(w, a, time.Second, func() { w.ns.write(pendingKey, nil, 0) })

	w.sched.now = w.sched.now.Add(2 * time.Second)
	if got := readAs(w, b, "result:"+checkedKey); got == nil || w.ck.reads[b]["result:"+checkedKey].stale != nil {
		t.Fatalf("set up: B's read of result: = %v, want the receipt, exactly", got)
	}
	if got := readAs(w, b, pendingKey); got != nil || w.ck.reads[b][pendingKey].stale != nil {
		t.Fatalf("set up: B's read of pending: = %v, want not found, exactly", got)
	}
	if got := readAs(w, c, pendingKey); got != nil {
		t.Fatalf("set up: C's read = %v, want its location's cached not found", got)
	}
	as(w, c, 0, func() { e := kvClaimEntry(t, w, claimFor("c", w.now())); w.ns.write(pendingKey, &e, 0) })
	again := w.now().Add(time.Second)
	as(w, b, time.Second, func() { e := kvClaimEntry(t, w, claimFor("b", again)); w.ns.write(pendingKey, &e, 0) })
	claimB := w.ck.lastClaim[b][checkedKey]
	if claimB == nil {
		t.Fatal("set up: B's claim was not recorded")
	}
	if claimB.cause != nil {
		t.Errorf("B's claim, written after B read the key's receipt exactly, carries %s", claimB.cause)
	}
	second := order.Receipt{OrderID: "order-1", Status: order.StatusAccepted, AcceptedAt: again,
		Order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}}.JSON()
	w.answers = []*answer{
		{key: checkedKey, fp: "fp", start: accepted, end: accepted.Add(3 * time.Second), kind: created, body: first, orderID: "order-1", by: a},
		{key: checkedKey, fp: "fp", start: again, end: again.Add(2 * time.Second), kind: created, body: second, orderID: "order-1", by: b},
	}
	w.violations, w.counts = nil, make(map[string]int)
	w.checkReplaysIdentical()
	if !violated(w, "created a second receipt for order-1") {
		t.Errorf("a second receipt, created by a claim whose writer read the first receipt exactly, was excused: violations %q, counts %v",
			w.violations, allowed(w))
	}
}

// TestAFallbackReadThatReturnedTheOldReceiptExcusesNothing: during a
// migration, the adopter's read of KV's result: returned the old version's
// receipt of legacy-0, exactly; its read of pending: returned its
// location's cached "not found", missing the old version's claim of
// legacy-0. kv.Store reads a key whose outcome is stored as that outcome,
// whatever its claim: the adopter saw legacy-0's receipt, and an adoption
// that ends the key with another order all the same (a bug) was not caused
// by the stale read of the claim. fallbackMissed skipped a read that
// returned a version naming the old order id only for the key it read,
// and named the stale read of the other.
func TestAFallbackReadThatReturnedTheOldReceiptExcusesNothing(t *testing.T) {
	w, in, _ := checkedWorld(t, LedgerMode)
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	adopter := &actor{name: "adoption", inst: in[1].inst, kind: requestActor, key: checkedKey}
	if got := readAs(w, adopter, pendingKey); got != nil { // location 1 caches "not found"
		t.Fatalf("set up: the adopter's first read = %v, want not found", got)
	}
	legacyAt := w.now().Add(time.Second)
	old := claimFor("old", legacyAt)
	old.OrderID = "legacy-0"
	as(w, in[0], time.Second, func() {
		e := kvClaimEntry(t, w, old)
		w.direct = true
		w.ns.write(pendingKey, &e, 0)
		w.direct = false
	})
	legacy := order.Receipt{OrderID: "legacy-0", Status: order.StatusAccepted, AcceptedAt: legacyAt, Order: o}.JSON()
	storeKV(w, legacy, time.Second)
	w.sched.now = w.sched.now.Add(time.Second)
	if got := readAs(w, adopter, "result:"+checkedKey); got == nil || got.Value != string(legacy) {
		t.Fatalf("set up: the adopter's read of result: = %v, want legacy-0's receipt", got)
	}
	if got := readAs(w, adopter, pendingKey); got != nil {
		t.Fatalf("set up: the adopter's read of pending: = %v, want its location's cached not found", got)
	}
	w.sched.now = w.sched.now.Add(time.Second)
	call := &gatewayCall{key: checkedKey, orderID: "order-2", fp: o.Fingerprint(), acceptedAt: w.now(), start: w.now(), by: in[0]}
	w.ledgerMints = map[string]ledgerMint{ledgerMintID(call.key, call.orderID, call.acceptedAt): {by: adopter, at: w.now()}}
	if e := w.fallbackMissed(call, "legacy-0", true); e != nil {
		t.Errorf("excused by %v, though the adopter's last read of result: returned legacy-0's receipt", e)
	}
}

// TestAChainIsNotExcusedByAStaleReadThatHidNothing: request A left the key
// open, due at D, and sent its message; another request wrote the same
// claim back as it was (a release that made no call), due at D too. The
// message's consumer read the key from its location's cache: A's version,
// not the rewrite (a stale read), which says exactly what the rewrite
// says: open, due at D. The consumer ended the message without sending
// the next (a settler that drops its follow-up: a bug). The stale read hid
// nothing the consumer could have decided on, so it did not end the
// chain; the checker excused the sweep finding the key overdue by it.
func TestAChainIsNotExcusedByAStaleReadThatHidNothing(t *testing.T) {
	w, in := kvWorld(t)
	key := w.keyOf(checkedKey)
	a := &actor{name: "request A", inst: in[0].inst, kind: requestActor, key: checkedKey}
	x := &actor{name: "request X", inst: &instance{id: 2, loc: 0}, kind: requestActor, key: checkedKey}
	s := &actor{name: "queue consumer", inst: in[1].inst, kind: settlerActor, key: checkedKey}

	release := kvReleaseEntry(t, w, claimFor("a", w.now()))
	as(w, a, 0, func() { e := release; w.ns.write(pendingKey, &e, 0) })
	due := w.peekClaim(checkedKey).NextAttempt
	if rec := w.peekClaim(checkedKey); rec.State != intake.Open || due.IsZero() {
		t.Fatalf("set up: A's release = %+v, want open and due", rec)
	}
	var m *settleMessage
	as(w, a, 0, func() { m = w.sentSettle(settlequeue.Message(key)) })
	if got := readAs(w, s, pendingKey); got == nil { // location 1 caches A's release
		t.Fatal("set up: the consumer's first read found nothing")
	}
	as(w, x, 2*time.Second, func() { e := release; w.ns.write(pendingKey, &e, 0) })
	if rec := w.peekClaim(checkedKey); rec.State != intake.Open || !rec.NextAttempt.Equal(due) {
		t.Fatalf("set up: after the rewrite %+v, want open, due at %v", rec, due)
	}
	m.consumer = s
	w.sched.now = w.sched.now.Add(time.Second)
	got := readAs(w, s, pendingKey)
	if r := w.ck.reads[s][pendingKey]; got == nil || r.stale == nil {
		t.Fatalf("set up: the consumer's read = %v, want A's release from its location's cache, stale", got)
	}
	if rec := w.decodeClaim(checkedKey, got, w.now()); rec.State != intake.Open || !rec.NextAttempt.Equal(due) {
		t.Fatalf("set up: the consumer read %+v, want open, due at %v: what the rewrite says", rec, due)
	}
	as(w, s, 0, func() { w.handledSettle(m, checkedKey, nil) }) // it sent no next message

	w.sched.now = due.Add(sweepGrace + time.Minute)
	w.violations, w.counts = nil, make(map[string]int)
	w.checkChainGoesOn(key)
	if !violated(w, "no settle message coming") {
		t.Errorf("the chain ended by a consumer that read what the key held was excused: violations %q, counts %v", w.violations, w.counts)
	}
}
