package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
)

// The checker's own tests: each builds the moment a check judges by hand
// and holds the check to failing, or to naming its excuse.

const checkedKey keyName = "desk-a:k0"

// checkedWorld is modelWorld with the checker watching KV, an OMS that
// accepted order "order-1", and, in ledger mode, a migration under way.
func checkedWorld(t *testing.T, mode Mode) (w *world, in [locations]*actor, receipt []byte) {
	t.Helper()
	w, in = modelWorld(func(int, string) int { return 0 })
	w.mode, w.ck = mode, newCausality()
	w.storedRuns, w.ledgerSaw = make(map[keyName]storedRun), make(map[*actor]bool)
	w.storedBodies, w.receipts, w.commits = make(map[keyName]map[string]bool), make(map[keyName]map[string]keptReceipt), make(map[keyName]commit)
	w.oms = newOMS(w)
	w.oms.orders["order-1"] = &omsOrder{key: checkedKey, accepted: true}
	w.ns.observe = w.observeKVWrite
	w.kvStore = kv.NewStore(w.ns, w.now)
	if mode == LedgerMode {
		w.mig = &migration{step: -1, purges: make(map[keyName][]*purge), resolvers: make(map[*actor]bool)}
		w.migrating = true
		w.ledger = ledger.NewMemoryStore()
		w.ledger.Now = w.now
	}
	receipt = order.Receipt{OrderID: "order-1", Status: order.StatusAccepted, AcceptedAt: w.now(),
		Order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}}.JSON()
	return w, in, receipt
}

// storeKV writes (or, with nil, deletes) KV's receipt as the setting up
// does, after moving the clock on.
func storeKV(w *world, body []byte, after time.Duration) {
	w.sched.now = w.sched.now.Add(after)
	w.direct = true
	defer func() { w.direct = false }()
	if body == nil {
		w.ns.write("result:"+checkedKey, nil, 0)
		return
	}
	w.ns.write("result:"+checkedKey, &kv.Entry{Value: string(body)}, 0)
}

// storeLedger stores receipt in the ledger under a claim named token, as
// another request or a resolve does, unseen by the checker's hooks.
func storeLedger(t *testing.T, w *world, token string, receipt []byte) {
	t.Helper()
	ctx, c := context.Background(), intake.Claim{Token: token, Lease: time.Minute}
	w.direct = true
	defer func() { w.direct = false }()
	if _, err := w.ledger.Begin(ctx, w.keyOf(checkedKey), c); err != nil {
		t.Fatal(err)
	}
	if err := w.ledger.Commit(ctx, w.keyOf(checkedKey), c, intake.Result{Body: receipt, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
}

// readKV is a's read of KV's receipt, as a Worker's isolate reads it.
func readKV(w *world, a *actor) *kv.Entry {
	var got *kv.Entry
	as(w, a, 0, func() {
		before := len(w.misses["result:"+checkedKey])
		got = w.ns.read("result:" + checkedKey)
		w.sawRead(a, "result:"+checkedKey, got, before)
	})
	return got
}

// answer404 answers a's lookup, begun at start, with 404.
func answer404(w *world, a *actor, start time.Time) {
	ans := &answer{lookup: true, key: checkedKey, start: start, kind: gaveUp}
	as(w, a, 0, func() { w.answered(a, ans, intake.Outcome{}, intake.ErrNotFound) })
}

func violated(w *world, about string) bool {
	for _, v := range w.violations {
		if strings.Contains(v, about) {
			return true
		}
	}
	return false
}

// TestALookupIsExcusedOnlyByItsOwnReads: a migrating lookup told 404
// beside KV's receipt is excused by its own read of KV that missed it, and
// only if its own read of the ledger, before, showed no outcome: not when
// the ledger held the receipt when it read it, nor when it never read the
// ledger (whatever the ledger held when the request began).
func TestALookupIsExcusedOnlyByItsOwnReads(t *testing.T) {
	for _, tc := range []struct {
		name        string
		readsLedger bool // before another request copies the receipt into it
		copied      bool // the copy lands before the lookup reads the ledger
		excused     bool
	}{
		{"its ledger read found nothing: excused", true, false, true},
		{"its ledger read found the receipt: not excused", true, true, false},
		{"it never read the ledger: not excused", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, in, receipt := checkedWorld(t, LedgerMode)
			lookup := &actor{name: "lookup", inst: in[0].inst, kind: requestActor, key: checkedKey}
			readKV(w, in[0]) // location 0 caches "not found" for a minute
			storeKV(w, receipt, time.Second)
			w.sched.now = w.sched.now.Add(time.Second)
			start := w.now()
			copyIntoLedger := func() { storeLedger(t, w, "copy", receipt) }
			if tc.copied {
				copyIntoLedger()
			}
			if tc.readsLedger {
				as(w, lookup, 0, func() { w.sawLedger(lookup, "lookup") })
			}
			if !tc.copied {
				copyIntoLedger()
			}
			if got := readKV(w, lookup); got != nil {
				t.Fatalf("the lookup's KV read = %v, want the location's cached not found", got)
			}
			answer404(w, lookup, start)
			if got := violated(w, "a lookup of "+checkedKey); got == tc.excused {
				t.Errorf("violated = %v, want %v: %q", got, !tc.excused, w.violations)
			}
		})
	}
}

// TestALookupInAGapOfItsKeysOutcomeIsNoViolation: an outcome stored,
// erased, and stored again byte for byte while a lookup that began in
// the gap ran: the lookup rightly found nothing.
func TestALookupInAGapOfItsKeysOutcomeIsNoViolation(t *testing.T) {
	w, in, receipt := checkedWorld(t, KVMode)
	lookup := &actor{name: "lookup", inst: in[0].inst, kind: requestActor, key: checkedKey}
	storeKV(w, receipt, 0)
	storeKV(w, nil, time.Second)
	w.sched.now = w.sched.now.Add(time.Second)
	start := w.now()
	if got := readKV(w, lookup); got != nil {
		t.Fatalf("the lookup's read = %v, want not found", got)
	}
	storeKV(w, receipt, time.Second)
	answer404(w, lookup, start)
	if violated(w, "a lookup of "+checkedKey) {
		t.Errorf("a lookup in the gap was failed: %q", w.violations)
	}
	// Its outcome stored without a gap since before it began, a lookup
	// told 404 without a read that missed it is one.
	again := &actor{name: "another lookup", inst: in[1].inst, kind: requestActor, key: checkedKey}
	w.sched.now = w.sched.now.Add(time.Second)
	answer404(w, again, w.now())
	if !violated(w, "a lookup of "+checkedKey) {
		t.Error("a lookup told 404 beside an outcome stored before it began passed")
	}
}

// TestALookupIsJudgedByItsOwnRead: over the ledger, a lookup that read
// the key given up on, before a resolve stored its receipt, rightly
// answers unresolved; one whose read found the receipt does not.
func TestALookupIsJudgedByItsOwnRead(t *testing.T) {
	for _, readAfter := range []bool{false, true} {
		w, in, receipt := checkedWorld(t, LedgerMode)
		lookup := &actor{name: "lookup", inst: in[0].inst, kind: requestActor, key: checkedKey}
		resolve := func() {
			storeLedger(t, w, "resolve", receipt)
			w.stored(checkedKey, receipt, w.now().Add(time.Hour))
		}
		start := w.now()
		if readAfter {
			resolve()
		}
		as(w, lookup, 0, func() { w.sawLedger(lookup, "lookup") })
		if !readAfter {
			resolve()
		}
		ans := &answer{lookup: true, key: checkedKey, start: start, kind: gaveUp}
		unresolved := &intake.Unsettled{OrderID: "order-1", GiveUp: intake.GivenUp}
		as(w, lookup, 0, func() { w.answered(lookup, ans, intake.Outcome{}, unresolved) })
		if got := violated(w, "was told unresolved"); got != readAfter {
			t.Errorf("read after the resolve %v: violated = %v, want %v: %q", readAfter, got, readAfter, w.violations)
		}
	}
}

// TestAPurgeExcusesAKeysAbsenceByItsOwnDelete: a purge that began while
// the key was not final erases an outcome stored while it ran; the key's
// absence after a call is excused by the purge's own delete of that
// call's outcome after the call began, in the store the absence is judged
// in, while no other writer's move has left that order on the key since;
// never by a delete before the call, or of another order's outcome.
func TestAPurgeExcusesAKeysAbsenceByItsOwnDelete(t *testing.T) {
	w, _, receipt := checkedWorld(t, LedgerMode)
	began := w.now()
	call := began.Add(time.Second)
	p := &purge{start: began, end: began.Add(2 * time.Minute), by: &actor{name: "operator purge"}}
	w.mig.purges[checkedKey] = []*purge{p}
	excused := func() bool { return w.purgedOutcomeOf(checkedKey, "order-1", call, call.Add(time.Hour)) }
	if excused() {
		t.Fatal("a purge begun before the call, which deleted nothing, excused the key's absence")
	}
	p.touched, p.deleted, p.deletedBody = true, began, receipt
	w.lastMover[checkedKey] = p.by
	if excused() {
		t.Fatal("a purge whose delete came before the call excused the key's absence after it")
	}
	p.deleted = call.Add(time.Minute)
	if !excused() {
		t.Fatal("a purge that deleted the call's outcome after the call did not excuse its absence")
	}
	if w.purgedOutcomeOf(checkedKey, "order-2", call, call.Add(time.Hour)) {
		t.Fatal("a purge that deleted order-1's outcome excused the absence of order-2's")
	}
	w.lastMover[checkedKey] = &actor{name: "a later writer"}
	w.carried[checkedKey] = map[string]time.Time{"order-1": call.Add(2 * time.Minute)}
	if excused() {
		t.Fatal("a purge excused the key's absence though another writer left order-1 on the key after its delete")
	}
}

// TestAPurgeThatBeganBeforeAnAnswerExcusesItByItsDelete: a purge whose
// reads stalled began before a client was given a receipt, and erased it
// after: a later retry that places the order anew is the purge's doing,
// as its own delete of that receipt shows; a delete before the answer, or
// of another receipt, excuses nothing.
func TestAPurgeThatBeganBeforeAnAnswerExcusesItByItsDelete(t *testing.T) {
	w, _, receipt := checkedWorld(t, LedgerMode)
	began := w.now()
	answered, retried := began.Add(30*time.Second), began.Add(10*time.Minute)
	p := &purge{start: began, end: began.Add(2 * time.Minute), by: &actor{name: "operator purge"}, erased: true, touched: true,
		deletedBody: receipt}
	w.mig.purges[checkedKey] = []*purge{p}
	p.deleted = began.Add(time.Second)
	if w.purgedAnswer(checkedKey, receipt, answered, retried) {
		t.Fatal("a purge that deleted the receipt before the answer excused what a later retry got")
	}
	p.deleted = began.Add(61 * time.Second)
	if !w.purgedAnswer(checkedKey, receipt, answered, retried) {
		t.Fatal("a purge that deleted the receipt after the answer did not excuse what a later retry got")
	}
	if w.purgedAnswer(checkedKey, []byte(`{"orderId":"order-2"}`), answered, retried) {
		t.Fatal("a purge that deleted one receipt excused what a retry got after another")
	}
}

// TestAPurgeExcusesOnlyTheDeleteOfTheOrderItNamed: a purge that named
// order-1's receipt, and whose delete came after a client was given
// another order's receipt under the key (order-2), excuses nothing about
// that receipt: a purge with an order id leaves another order's outcome
// (AdminStore.Purge), so a final retry that got a new order is a
// violation, not the purge's doing. A Purge that ignored the order id it
// was given would make exactly this history (found by a review).
func TestAPurgeExcusesOnlyTheDeleteOfTheOrderItNamed(t *testing.T) {
	w, _, named := checkedWorld(t, LedgerMode)
	w.resultTTL = 24 * time.Hour
	began := w.now()
	other := order.Receipt{OrderID: "order-2", Status: order.StatusAccepted, AcceptedAt: began.Add(10 * time.Second),
		Order: order.Order{Symbol: "MSFT", Side: order.Sell, Quantity: 3}}.JSON()
	p := &purge{start: began, end: began.Add(2 * time.Minute), by: &actor{name: "operator purge"},
		seen: named, touched: true, erased: true}
	w.mig.purges[checkedKey] = []*purge{p}
	a := &answer{key: checkedKey, fp: "fp-2", start: began.Add(10 * time.Second), end: began.Add(11 * time.Second),
		kind: created, body: other, orderID: "order-2", by: &actor{name: "client"}}
	p.deleted, p.deletedBody = began.Add(time.Minute), other // its delete, in the ledger, took order-2's receipt
	w.lastMover[checkedKey] = p.by
	again := order.Receipt{OrderID: "order-2", Status: order.StatusAccepted, AcceptedAt: began.Add(time.Hour),
		Order: order.Order{Symbol: "MSFT", Side: order.Sell, Quantity: 3}}.JSON()
	w.sched.now = began.Add(time.Hour)
	fin := &answer{key: checkedKey, fp: "fp-2", start: w.now(), end: w.now(), kind: created, body: again, orderID: "order-2",
		by: &actor{name: "final retry"}}
	w.answers, w.finalRetries = []*answer{a, fin}, []*answer{fin}
	w.checkFinalRetries()
	if !violated(w, "but a retry once quiet got") {
		t.Errorf("a purge of order-1 excused order-2's receipt being placed anew: %q", w.violations)
	}
}

// TestAPurgeExcusesItsOrdersAbsenceUntilTheOrderIsBack: a purge that
// deleted order-1's receipt excuses the key's absence as far as order-1
// is concerned even once another order's claim moved the key and lapsed
// (absent again: a long ledger run, migrating, seed 131334445), and no
// longer once a write left order-1 on the key again.
func TestAPurgeExcusesItsOrdersAbsenceUntilTheOrderIsBack(t *testing.T) {
	w, _, _ := checkedWorld(t, LedgerMode)
	began := w.now()
	receipt := order.Receipt{OrderID: "order-1", Status: order.StatusAccepted, AcceptedAt: began,
		Order: order.Order{Symbol: "MSFT", Side: order.Sell, Quantity: 3}}.JSON()
	p := &purge{start: began, end: began.Add(2 * time.Minute), by: &actor{name: "operator purge"}, touched: true, erased: true,
		deleted: began.Add(time.Minute), deletedBody: receipt}
	w.mig.purges[checkedKey] = []*purge{p}
	w.carried[checkedKey] = map[string]time.Time{"order-1": began.Add(time.Second), "order-2": began.Add(10 * time.Minute)}
	w.lastMover[checkedKey] = &actor{name: "submit of order-2"} // its claim lapsed since
	if !w.purgedOutcomeOf(checkedKey, "order-1", began, began.Add(time.Hour)) {
		t.Error("another order's lapsed claim took the purge's excuse away from order-1's absence")
	}
	w.carried[checkedKey]["order-1"] = began.Add(20 * time.Minute)
	if w.purgedOutcomeOf(checkedKey, "order-1", began, began.Add(time.Hour)) {
		t.Error("the purge still excused order-1's absence once a write left order-1 on the key again")
	}
	w.lastMover[checkedKey] = p.by
	if !w.purgedOutcomeOf(checkedKey, "order-1", began, began.Add(time.Hour)) {
		t.Error("the purge, the key's last mover, did not excuse order-1's absence")
	}
}

// TestAKVKeyExpiresByItsOwnTTL: a resolve told not found is excused by
// KV's claim reaching the end of its TTL while the resolve ran, and by
// nothing else: not before it began, and not once the key was written
// again.
func TestAKVKeyExpiresByItsOwnTTL(t *testing.T) {
	w, _, _ := checkedWorld(t, LedgerMode)
	const kvKey = "pending:" + checkedKey
	shown := w.now()
	w.direct = true
	w.ns.write(kvKey, &kv.Entry{Value: "1"}, time.Minute)
	w.direct = false
	if w.kvExpiredBetween(kvKey, shown, shown.Add(30*time.Second)) {
		t.Fatal("a key that expires after the resolve answered excused it")
	}
	if !w.kvExpiredBetween(kvKey, shown, shown.Add(2*time.Minute)) {
		t.Fatal("a key that expired while the resolve ran did not excuse it")
	}
	if w.kvExpiredBetween(kvKey, shown.Add(time.Minute), shown.Add(2*time.Minute)) {
		t.Fatal("a key that expired as the resolve began excused it")
	}
	w.direct = true
	w.ns.write(kvKey, &kv.Entry{Value: "1"}, 0)
	w.direct = false
	if w.kvExpiredBetween(kvKey, shown, shown.Add(2*time.Minute)) {
		t.Fatal("a key written again, without a TTL, excused a resolve")
	}
}

// TestAnUnresolvedReportIsJudgedByWhatIsStoredNow: a purge whose call
// failed after it took effect deleted the receipt, which the checker's
// record of stored receipts still holds; a give-up then is no fault. A
// receipt gone without a purge, or after a purge that deleted it before
// it was stored last (order ids are derived from the key and the order,
// so the same one comes back) or deleted another order's, and the same
// report beside the receipt stored, are.
func TestAnUnresolvedReportIsJudgedByWhatIsStoredNow(t *testing.T) {
	w, _, receipt := checkedWorld(t, LedgerMode)
	stored := w.now()
	w.receipts[checkedKey] = map[string]keptReceipt{"order-1": {at: stored, until: stored.Add(time.Hour)}}
	w.checkNotReceipted(checkedKey, "order-1", "is reported unresolved", &actor{name: "alarm"})
	if !violated(w, "is reported unresolved, but its accepted receipt") {
		t.Fatalf("a report beside a receipt no store holds, and no purge deleted, was no violation: %q", w.violations)
	}
	other := []byte(`{"orderId":"order-2","status":"accepted"}`)
	for _, p := range []*purge{
		{deleted: stored.Add(-time.Second), deletedBody: receipt}, // before the receipt was stored again
		{deleted: stored, deletedBody: other},                     // another order's
		{touched: true},                                           // the other store's copy
	} {
		w.violations = nil
		p.start, p.by = stored.Add(-time.Minute), &actor{name: "operator purge"}
		w.mig.purges[checkedKey] = []*purge{p}
		w.checkNotReceipted(checkedKey, "order-1", "is reported unresolved", &actor{name: "alarm"})
		if !violated(w, "is reported unresolved, but its accepted receipt") {
			t.Fatalf("a report beside a receipt that purge (deleted %v at %v) did not delete was no violation: %q", p.deletedBody, p.deleted, w.violations)
		}
	}
	w.violations = nil
	w.mig.purges[checkedKey] = []*purge{{start: w.now(), by: &actor{name: "operator purge"}, touched: true, deleted: stored, deletedBody: receipt}}
	w.checkNotReceipted(checkedKey, "order-1", "is reported unresolved", &actor{name: "alarm"})
	if len(w.violations) != 0 {
		t.Fatalf("a report beside a receipt a purge deleted was a violation: %q", w.violations)
	}
	storeLedger(t, w, "resolve", receipt)
	w.checkNotReceipted(checkedKey, "order-1", "is reported unresolved", &actor{name: "alarm"})
	if !violated(w, "is reported unresolved, but its accepted receipt") {
		t.Fatalf("a report beside the stored receipt was no violation: %q", w.violations)
	}
}

// TestAnOrderIsReportedUnresolvedOnceOverTheLedger: a second give-up of
// the same order, with no answer from the OMS for it since the first, is
// a violation over the ledger (a key given up on stays so); one after an
// answer that could not be stored, one of the same order taken again
// after its key expired (another acceptedAt), and any in KV mode are not.
func TestAnOrderIsReportedUnresolvedOnceOverTheLedger(t *testing.T) {
	w, _, _ := checkedWorld(t, LedgerMode)
	w.reported, w.omsAnswered = make(map[string]time.Time), make(map[string]time.Time)
	p := intake.Placement{OrderID: "order-1", AcceptedAt: w.now()}
	w.checkReportedOnce(checkedKey, p)
	if len(w.violations) != 0 {
		t.Fatalf("a first report was a violation: %q", w.violations)
	}
	w.sched.now = w.sched.now.Add(time.Minute)
	w.checkReportedOnce(checkedKey, p)
	if !violated(w, "is reported unresolved for order-1 again") {
		t.Fatalf("a second report with no answer since was no violation: %q", w.violations)
	}
	w.violations = nil
	w.sched.now = w.sched.now.Add(time.Minute)
	w.omsAnswered[orderOf(checkedKey, p)] = w.now()
	w.sched.now = w.sched.now.Add(time.Minute)
	w.checkReportedOnce(checkedKey, p)
	again := p
	again.AcceptedAt = w.now()
	w.checkReportedOnce(checkedKey, again)
	w.mode = KVMode
	w.checkReportedOnce(checkedKey, again)
	if len(w.violations) != 0 {
		t.Fatalf("reports after an answer, of the order taken again, or in KV mode were violations: %q", w.violations)
	}
}

// TestAPurgeThatBeganBeforeAReceiptFreesItsKeyByItsDelete: a purge whose
// reads stalled began before a client's receipt was created, and deleted
// that receipt once it was. The key was free again: a receipt created for
// the same order after that delete is a new order's, not a second receipt
// within RESULT_TTL (make simulate, ledger, seed 271297897226482362). A
// delete before the first receipt was created, or of another receipt,
// excuses nothing.
func TestAPurgeThatBeganBeforeAReceiptFreesItsKeyByItsDelete(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deleted time.Duration // after the purge began
		first   bool          // the purge deleted the first receipt
		want    bool          // a violation
	}{
		{"deleted after the first receipt was created", time.Minute, true, false},
		{"deleted before it was created", time.Second, true, true},
		{"deleted another receipt", time.Minute, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _, first := checkedWorld(t, LedgerMode)
			w.resultTTL = 24 * time.Hour
			began := w.now()
			deleted := first
			if !tc.first {
				deleted = []byte(`{"orderId":"order-2","status":"accepted"}`)
			}
			p := &purge{start: began, end: began.Add(2 * time.Minute), by: &actor{name: "operator purge"},
				touched: true, deleted: began.Add(tc.deleted), deletedBody: deleted}
			w.mig.purges[checkedKey] = []*purge{p}
			again := order.Receipt{OrderID: "order-1", Status: order.StatusAccepted, AcceptedAt: began.Add(time.Hour)}.JSON()
			w.answers = []*answer{
				{key: checkedKey, start: began, end: began.Add(30 * time.Second), kind: created, body: first, orderID: "order-1", by: &actor{name: "client"}},
				{key: checkedKey, start: began.Add(time.Hour), end: began.Add(time.Hour + time.Second), kind: created, body: again, orderID: "order-1", by: &actor{name: "client"}},
			}
			w.checkReplaysIdentical()
			if got := violated(w, "created a second receipt"); got != tc.want {
				t.Fatalf("violation %v, want %v: %q", got, tc.want, w.violations)
			}
		})
	}
}

// TestARewriteWithoutAMessageDoesNotTakeOverTheChain: a settler leaves the key awaiting the give-up's check at T and owes its
// chain. A client's request takes the key over and, its claim's write
// failing (kv.Store's takeOver), writes the key back as it was, due at T,
// and sends no message (it made no call). The settler's chain then ends
// with no event that broke it: the sweep finding the key overdue is a
// violation, which the request's own failed write does not excuse
// (docs/reliability.md: only the request that made the key due, or a
// retry whose call failed too and sent a message). A review found the
// checker excusing it.
func TestARewriteWithoutAMessageDoesNotTakeOverTheChain(t *testing.T) {
	w, _, _ := checkedWorld(t, KVMode)
	w.dues, w.chainBreaks, w.settleMessages = make(map[keyName]map[int64]dueWrite), make(map[keyName][]chainBreak), make(map[keyName][]*settleMessage)
	ctx := context.Background()
	key := w.keyOf(checkedKey)
	settler := &actor{name: "settler", inst: &instance{id: 0}, kind: settlerActor}
	request := &actor{name: "request", inst: &instance{id: 1}, kind: requestActor}
	accepted := w.now()
	due := accepted.Add(30 * time.Second)
	c := intake.Claim{Token: "s", Fingerprint: "fp", OrderID: "order-1", AcceptedAt: accepted, Lease: time.Minute,
		KeepUntil: accepted.Add(24 * time.Hour), Order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}}
	// The entries kv.Store writes, made on a namespace of their own
	// (the simulator's waits on its scheduler) and written as each actor.
	mem := kv.NewMemoryNamespace()
	clock := accepted
	store := kv.NewStore(mem, func() time.Time { clock = clock.Add(2 * time.Second); return clock })
	if _, err := store.Begin(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	left := c
	left.Stage, left.GiveUp, left.NextAttempt = intake.StageSent, intake.AwaitingCheck, due
	if err := store.Release(ctx, key, left); err != nil {
		t.Fatal(err)
	}
	entry, err := mem.Get(ctx, "pending:"+checkedKey)
	if err != nil {
		t.Fatal(err)
	}
	as(w, settler, 0, func() { w.ns.write("pending:"+checkedKey, &entry, 0) })
	if rec := w.peekClaim(checkedKey); rec.State != intake.Open || !rec.NextAttempt.Equal(due) {
		t.Fatalf("set up: %+v", rec)
	}
	as(w, request, time.Second, func() {
		// kv.Store.takeOver: the claim's put failed; the key goes back as it was.
		w.breakChainOf(checkedKey, breakClaimWrite, "%s was told its put of the claim failed", request.name)
		again := entry
		w.ns.write("pending:"+checkedKey, &again, 0)
	})
	if rec := w.peekClaim(checkedKey); rec.State != intake.Open || !rec.NextAttempt.Equal(due) {
		t.Fatalf("after the reopen: %+v", rec)
	}
	w.sched.now = due.Add(sweepGrace + time.Minute)
	w.checkChainGoesOn(key)
	if !violated(w, "no settle message coming") {
		t.Errorf("the settler's chain for %v ended unexcused, and the checker excused it: %v (counts %v)", due, w.violations, w.counts)
	}
}

// TestAnAdoptionIsExcusedByItsOwnReadBeforeItsClaim: KV mode placed a
// second order (order-2) beside an old version's receipt (legacy-0), and
// an adoption (the sweep's, or a resolve's) took order-2 into the ledger
// after that call, its own read of KV missing the receipt: the ledger may
// then end with order-2's outcome, excused by the adopter's read before
// its claim. Another request's read, or one older than KV's staleness
// when the adopter claimed, excuses nothing.
func TestAnAdoptionIsExcusedByItsOwnReadBeforeItsClaim(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ownRead bool          // the adopter read KV, not another request
		readAgo time.Duration // how long before the adopter's claim the read was
		excused bool
	}{
		{"its own read just before its claim", true, 0, true},
		{"another request's read", false, 0, false},
		{"its own read, older than KV's staleness", true, staleMost + time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, in, _ := checkedWorld(t, LedgerMode)
			legacy := order.Receipt{OrderID: "legacy-0", Status: order.StatusAccepted, AcceptedAt: w.now(),
				Order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}}.JSON()
			call := &gatewayCall{key: checkedKey, orderID: "order-2", acceptedAt: w.now(), start: w.now(), by: in[0]}
			adopter := &actor{name: "adoption", inst: in[1].inst, kind: requestActor, key: checkedKey}
			reader := adopter
			if !tc.ownRead {
				reader = &actor{name: "other", inst: in[1].inst, kind: requestActor, key: checkedKey}
			}
			readKV(w, reader) // location 0 caches "not found" for a minute
			storeKV(w, legacy, 0)
			w.sched.now = w.sched.now.Add(time.Second)
			if got := readKV(w, reader); got != nil {
				t.Fatalf("the read = %v, want the location's cached not found", got)
			}
			w.sched.now = w.sched.now.Add(tc.readAgo + 10*time.Second)
			w.ledgerMints = map[string]ledgerMint{ledgerMintID(call.key, call.orderID, call.acceptedAt): {by: adopter, at: w.now()}}
			if got := w.fallbackMissed(call, "legacy-0", true) != nil; got != tc.excused {
				t.Errorf("excused = %v, want %v", got, tc.excused)
			}
		})
	}
}

// TestAnAdoptersReadAfterACallExcusesNoSecondOrderIDAtTheOMS: KV mode
// placed a second order id beside an old version's receipt with no stale
// read of its own (a bug), and an adoption took that order into the
// ledger after the call, its own read missing the receipt. The adopter's
// read, after the call, cannot have caused it: the second order id is a
// violation, adopted or not.
func TestAnAdoptersReadAfterACallExcusesNoSecondOrderIDAtTheOMS(t *testing.T) {
	for _, adopted := range []bool{false, true} {
		t.Run(map[bool]string{false: "not adopted", true: "adopted after the call"}[adopted], func(t *testing.T) {
			w, in, _ := checkedWorld(t, LedgerMode)
			w.resultTTL = time.Hour
			o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
			adopter := &actor{name: "adoption", inst: in[1].inst, kind: requestActor, key: checkedKey}
			readKV(w, adopter) // location 1 caches "not found"
			legacyAt := w.now().Add(time.Second)
			legacy := order.Receipt{OrderID: "legacy-0", Status: order.StatusAccepted, AcceptedAt: legacyAt, Order: o}.JSON()
			storeKV(w, legacy, time.Second)
			first := &gatewayCall{key: checkedKey, orderID: "legacy-0", fp: o.Fingerprint(), acceptedAt: legacyAt, start: legacyAt, inst: -2}
			w.sched.now = w.sched.now.Add(500 * time.Millisecond)
			second := &gatewayCall{key: checkedKey, orderID: "order-2", fp: o.Fingerprint(), acceptedAt: w.now(), start: w.now(), by: in[0]}
			w.sched.now = w.sched.now.Add(500 * time.Millisecond)
			if got := readKV(w, adopter); got != nil {
				t.Fatalf("the adopter's read = %v, want the location's cached not found", got)
			}
			w.sched.now = w.sched.now.Add(time.Second)
			w.ledgerMints = map[string]ledgerMint{}
			if adopted {
				w.ledgerMints[ledgerMintID(second.key, second.orderID, second.acceptedAt)] = ledgerMint{by: adopter, at: w.now()}
			}
			w.oms.calls = append(w.oms.calls, first, second)
			w.checkOrderIDs()
			if !violated(w, "second order id") {
				t.Errorf("the second order id was excused: violations %q, counts %v", w.violations, w.counts)
			}
		})
	}
}

// TestAnAdoptionThatSawTheReceiptIsNotExcusedByAnEarlierMiss: an adopter
// missed the old version's receipt once, then read it, and adopted KV
// mode's second order all the same (a bug): its last read before its
// claim hid nothing, and the earlier miss excuses nothing.
func TestAnAdoptionThatSawTheReceiptIsNotExcusedByAnEarlierMiss(t *testing.T) {
	w, in, _ := checkedWorld(t, LedgerMode)
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	adopter := &actor{name: "adoption", inst: in[1].inst, kind: requestActor, key: checkedKey}
	call := &gatewayCall{key: checkedKey, orderID: "order-2", acceptedAt: w.now(), start: w.now(), by: in[0]}
	readKV(w, adopter) // location 1 caches "not found"
	legacy := order.Receipt{OrderID: "legacy-0", Status: order.StatusAccepted, AcceptedAt: w.now(), Order: o}.JSON()
	storeKV(w, legacy, time.Second)
	w.sched.now = w.sched.now.Add(time.Second)
	if got := readKV(w, adopter); got != nil {
		t.Fatalf("the read = %v, want the location's cached not found", got)
	}
	w.sched.now = w.sched.now.Add(3 * time.Minute) // the cached entry ended
	if got := readKV(w, adopter); got == nil {
		t.Fatal("the adopter's last read found nothing, want the receipt")
	}
	w.sched.now = w.sched.now.Add(time.Second)
	w.ledgerMints = map[string]ledgerMint{ledgerMintID(call.key, call.orderID, call.acceptedAt): {by: adopter, at: w.now()}}
	if e := w.fallbackMissed(call, "legacy-0", true); e != nil {
		t.Errorf("excused by %v, though the adopter's last read before its claim returned the receipt", e)
	}
}
