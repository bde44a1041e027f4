package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
	"github.com/edge-orders/edge-orders/settlequeue"
	"github.com/edge-orders/edge-orders/workers"
)

// Mode is the storage a history runs over.
type Mode uint8

const (
	// KVMode is the reference's layout over Workers KV, settled by the
	// settle queue and the Cron Trigger's sweep.
	KVMode Mode = iota
	// LedgerMode is the Durable Object ledger, settled by its alarm; a
	// history may migrate to it from KV (the fallback).
	LedgerMode
)

func (m Mode) String() string {
	if m == KVMode {
		return "kv"
	}
	return "ledger"
}

// The Worker's wiring, as config's defaults and package app set it, and
// what wrangler.toml asks of the platform.
const (
	pendingTTL      = config.DefaultPendingTTL
	waitForHolder   = config.DefaultWait
	sweepGrace      = config.DefaultSweepGrace
	sweepLimit      = app.SweepLimit
	queueRetryDelay = app.QueueRetryDelay
	sweepEvery      = 5 * time.Minute // wrangler.toml's Cron Trigger
	queueMaxRetries = 10              // wrangler.toml's max_retries
	// quietFor is how long a history runs without faults at its end, for
	// every unknown outcome to be settled: past the settler's longest
	// backoff, a sweep and its grace, several times over.
	quietFor = 40 * time.Minute
)

// keyName is a key in its scoped form, intake.Key.String.
type keyName = string

// world is one history: the isolates, the stores, the OMS, the clients'
// submissions and what every part saw, driven by one stream of choices.
type world struct {
	// ledgerMints is, per key, order id and time, the request whose ledger
	// claim first held the key with them, and when (observeLedgerMint).
	ledgerMints map[string]ledgerMint
	mode        Mode
	sched       *scheduler
	choices     func(n int, label string) int
	log         []string
	counts      map[string]int

	// knobs, drawn per history
	resultTTL, settleMaxAge time.Duration
	// densities holds each part's fault density, drawn once per history:
	// storage (KV, the ledger's RPC), the OMS, and the rest (queue,
	// alarms, rate limiter, isolates, clients).
	densities [parts]density
	// staleOdds: with probability 2^-staleOdds a KV list lags, and with
	// 2^-(staleOdds+1) a write lands late or a location keeps a stale
	// version past its cache entry. Every history may read stale, as every
	// KV namespace may.
	staleOdds     int
	releaseClaims bool
	migrating     bool
	mig           *migration // a migration mid-run (migrate.go), or nil
	// misses are the stale reads of each KV key.
	misses map[string][]miss
	// readLog is every read of each KV key by an actor, fresh or stale,
	// in order: an allowance that names a reader's stale read judges its
	// last read before it acted (lastRead).
	readLog map[string][]kvRead
	// ck is what the checker knows of KV's events and the claims they
	// caused: only they excuse what KV mode does not promise (cause.go).
	ck *causality
	// chances counts, per fault, the draws that could have fired it: the
	// realised rate is counts[fault] / chances[fault].
	chances map[string]int

	faultsOn bool // false once the history quiets down
	jumping  bool // the driver moves the clock hours ahead
	direct   bool // the checks read the stores: no yields, no faults
	ids      int

	ns      *namespace
	kvStore *kv.Store
	// fallback is KV as the ledger-mode Worker reads it during a
	// migration: each read is its reader's own, as a KV-mode isolate's.
	fallback *kv.Store
	ledger   *ledger.MemoryStore
	oms      *oms

	instances []*instance
	keys      []*clientKey
	answers   []*answer
	// commits is each key's last outcome stored, and when, storedRuns
	// what each key has held without a gap, and since when, and receipts
	// when each key's accepted receipt for an order id was last stored,
	// and until when it is kept.
	commits    map[keyName]commit
	storedRuns map[keyName]storedRun
	receipts   map[keyName]map[string]keptReceipt
	// ledgerSaw is whether each actor's last read of the ledger showed
	// its key's outcome stored.
	ledgerSaw map[*actor]bool
	// lastWriter is the actor whose write a KV key holds now.
	lastWriter map[string]*actor
	// settleMessages are each key's settle messages on their way,
	// chainBreaks the events that broke its chain of them, and dues the
	// first write of each of its due times (chain.go).
	settleMessages map[keyName][]*settleMessage
	chainBreaks    map[keyName][]chainBreak
	dues           map[keyName]map[int64]dueWrite
	// lastMover is who last moved each key from one phase to another, in
	// the store its absence is judged in (checkRefines), and carried when
	// such a move last left each order id on the key.
	lastMover map[keyName]*actor
	carried   map[keyName]map[string]time.Time
	// heldAt is when a claim last took each key (a move to held), in
	// the store its absence is judged in.
	heldAt     map[keyName]time.Time
	unresolved map[keyName]time.Time
	absentSeen map[*gatewayCall]bool // its key reported absent too early
	// paged is when the pager took a page for each key
	// (Options.ReportUnresolved), the first time.
	paged map[keyName]time.Time
	// reported is when the settler last gave up on each order, in ledger
	// mode (by key, order id and acceptedAt: a key that expired and took
	// the same order again is another), and omsAnswered when the OMS last
	// answered a call for each for good.
	reported    map[string]time.Time
	omsAnswered map[string]time.Time
	// storedBodies are the outcomes ever stored for each key, byte for
	// byte: a lookup may tell only one of them.
	storedBodies map[keyName]map[string]bool
	// finalRetries are the retries made once the history was quiet
	// (retryAnswered).
	finalRetries []*answer

	violations []string
}

// instance is one Worker isolate: its Service's memory lives as long as
// the isolate, and dies with it. It lives in one of KV's locations, whose
// cache it reads through.
type instance struct {
	id  int
	gen int
	loc int
	svc *intake.Service
}

// clientKey is one key a client uses, with the order it stands for.
type clientKey struct {
	key   intake.Key
	order order.Order
	other order.Order // another order the client sends under the same key
}

// answerKind is what a client was told.
type answerKind string

const (
	created    answerKind = "201 created"
	replayed   answerKind = "200 replayed"
	rejected   answerKind = "422 rejected by the OMS"
	inProgress answerKind = "409 in progress"
	reused     answerKind = "422 key reused"
	limited    answerKind = "429 rate limited"
	invalid    answerKind = "400 invalid"
	unknown    answerKind = "503 outcome unknown"
	unresolved answerKind = "503 outcome unresolved"
	storage    answerKind = "503 storage unavailable"
	notFound   answerKind = "404 not found"
	gaveUp     answerKind = "client gave up"
)

// refusal is true for the answers that tell a client its order was not
// placed and will not be.
func (k answerKind) refusal() bool { return k == reused || k == limited || k == invalid }

// answer is one request and what its client was told.
type answer struct {
	lookup     bool
	key        keyName
	fp         string
	inst       int
	start, end time.Time
	kind       answerKind
	body       []byte
	orderID    string
	// replay marks a rejection replayed from storage.
	replay bool
	// by is the request's actor.
	by *actor
}

// run plays one history in mode, every choice made by choose (0 is always
// the least eventful choice), and returns it with its violations.
func run(mode Mode, choose func(n int, label string) int) *world { return play(mode, choose, false) }

// play is run, with RESULT_TTL and SETTLE_MAX_AGE at the least the Worker
// takes (config.MinTTL, KV's shortest expiration) when shortest: keys then
// expire within a history, beside the settler's backoff and the give-up's
// check, which the drawn settings leave far behind them.
func play(mode Mode, choose func(n int, label string) int, shortest bool) *world {
	w := &world{mode: mode, choices: choose, counts: make(map[string]int), chances: make(map[string]int), misses: make(map[string][]miss), ck: newCausality(),
		commits: make(map[keyName]commit), storedRuns: make(map[keyName]storedRun), ledgerSaw: make(map[*actor]bool), receipts: make(map[keyName]map[string]keptReceipt), unresolved: make(map[keyName]time.Time),
		absentSeen: make(map[*gatewayCall]bool), paged: make(map[keyName]time.Time), reported: make(map[string]time.Time), omsAnswered: make(map[string]time.Time), lastWriter: make(map[string]*actor),
		lastMover: make(map[keyName]*actor), carried: make(map[keyName]map[string]time.Time), heldAt: make(map[keyName]time.Time), storedBodies: make(map[keyName]map[string]bool),
		settleMessages: make(map[keyName][]*settleMessage), chainBreaks: make(map[keyName][]chainBreak), dues: make(map[keyName]map[int64]dueWrite)}
	start := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	// The scheduler picks who runs next fairly, from bits (uniform), as
	// the driver picks its actions: rapid's integer draws lean toward 0.
	w.sched = newScheduler(start, func(n int, label string) int { return w.uniform(n, label) })
	w.sched.stop = w.stopped
	w.ns = newNamespace(w)
	w.kvStore = kv.NewStore(w.ns, w.now)
	w.fallback = kv.NewStore(watched{w.ns}, w.now)
	w.oms = newOMS(w)

	w.resultTTL = []time.Duration{24 * time.Hour, time.Hour}[choose(2, "RESULT_TTL")]
	w.settleMaxAge = []time.Duration{24 * time.Hour, 30 * time.Minute}[choose(2, "SETTLE_MAX_AGE")]
	if shortest {
		w.resultTTL, w.settleMaxAge = config.MinTTL, config.MinTTL
	}
	for p := range w.densities {
		w.densities[p] = density(w.uniform(3, partNames[p]+" fault density"))
		w.count(fmt.Sprintf("history with %s faults %s", partNames[p], w.densities[p]))
	}
	w.staleOdds = []int{4, 1}[choose(2, "stale read density")]
	w.releaseClaims = choose(2, "KV_CLAIM_AFTER_RECEIPT") == 0
	w.faultsOn = w.densities != [parts]density{}
	if mode == LedgerMode {
		w.ledger = ledger.NewMemoryStore()
		w.ledgerMints = make(map[string]ledgerMint)
		w.ledger.Now = w.now
		w.ledger.RoundTrip = w.ledgerCall
		w.ledger.Watch = func(key intake.Key, method string, before, after intake.Record) {
			for _, rec := range []intake.Record{before, after} {
				if err := intake.CheckWrittenPhase(rec); err != nil {
					w.violate("%s, by the ledger's %s: %v", key, method, err)
				}
			}
			w.checkRefines(key.String(), before, after, "ledger "+method)
			w.observeLedgerMint(key.String(), method, before, after)
			w.observeLedgerCommit(key.String(), method, before, after)
			w.trackStored(key.String(), w.asPeeked(key.String(), after))
		}
		w.migrating = w.uniform(3, "migrating") == 2
		w.drawMigration()
	}

	nKeys := 1 + choose(4, "keys")
	for i := range nKeys {
		client := []string{"desk-a", ""}[choose(2, "client")]
		k := &clientKey{key: intake.Key{Client: client, ID: "k" + strconv.Itoa(i)},
			order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: float64(10 + i)},
			other: order.Order{Symbol: "MSFT", Side: order.Sell, Quantity: float64(10 + i)}}
		w.keys = append(w.keys, k)
	}
	if w.migrating {
		w.seedLegacyKV()
	}
	// At least one isolate in each location, so that a client's retry
	// may land in either.
	for i := range locations + choose(2, "isolates") {
		inst := &instance{id: i, loc: i % locations}
		inst.svc = w.newService(inst)
		w.instances = append(w.instances, inst)
	}

	driver := &actor{name: "driver", kind: driverActor, inv: &invocation{kind: "driver"}}
	done := false
	w.sched.spawn(driver, func() {
		w.drive()
		done = true
	})
	if w.mode == KVMode {
		w.sched.spawn(&actor{name: "cron", kind: daemonActor}, w.cron("sweep", w.sweep))
	} else {
		w.sched.spawn(&actor{name: "alarms", kind: daemonActor}, w.alarms)
		if w.migrating {
			w.sched.spawn(&actor{name: "cron", kind: daemonActor}, w.cron("adoption sweep", w.adopt))
		}
	}
	for !done && w.sched.panicked == "" && w.sched.rapidPanic == nil && w.sched.step() {
	}
	if p := w.sched.rapidPanic; p != nil {
		w.sched.clear()
		panic(p)
	}
	if w.sched.panicked != "" {
		w.violate("an actor panicked: %s", w.sched.panicked)
	}
	w.direct = true
	w.ns.tally()
	w.checkEnd()
	w.sched.clear()
	return w
}

func (w *world) now() time.Time { return w.sched.Now() }

func (w *world) choose(n int, label string) int { return w.choices(n, label) }

func (w *world) logf(format string, args ...any) {
	w.log = append(w.log, w.now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

func (w *world) count(what string) { w.counts[what]++ }

func (w *world) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.logf("VIOLATION: %s", msg)
	w.violations = append(w.violations, msg)
}

// checkNoRow fails the history on an error from a move the table has no
// row for (intake.ErrNoRow), which the Service reports as storage
// unavailable, with the Store's error as its text.
func (w *world) checkNoRow(who string, err error) {
	if err != nil && strings.Contains(err.Error(), intake.ErrNoRow.Error()) {
		w.violate("%s: a move the table has no row for: %v", who, err)
	}
}

// faults is true while the history injects faults.
func (w *world) faults() bool { return w.faultsOn && !w.direct }

// A history's parts, each with its own fault density.
const (
	storagePart = iota
	omsPart
	otherPart
	parts
)

var partNames = [parts]string{"storage", "OMS", "other"}

// density is how often a part's faults fire in a history.
type density uint8

const (
	noFaults density = iota
	lightFaults
	heavyFaults
)

func (d density) String() string { return [...]string{"none", "light", "heavy"}[d] }

// faultOdds are, per part and density, k for a fault's probability 2^-k
// at each chance (0: never): light about 1 %, 6 % and 1.6 %; heavy 6 %,
// 25 % and 12.5 %.
var faultOdds = [parts][3]int{
	storagePart: {0, 7, 4},
	omsPart:     {0, 4, 2},
	otherPart:   {0, 6, 3},
}

// part is the part a fault belongs to, by its name.
func part(what string) int {
	switch {
	case strings.HasPrefix(what, "kv "), strings.HasPrefix(what, "ledger "):
		return storagePart
	case strings.HasPrefix(what, "oms "):
		return omsPart
	}
	return otherPart
}

// fault draws whether what happens now, at its part's density, and counts
// the chance and the fault.
func (w *world) fault(what string) bool {
	return w.faultAt(faultOdds[part(what)][w.densities[part(what)]], what)
}

// faultAt draws whether what happens now, with probability 2^-k.
func (w *world) faultAt(k int, what string) bool {
	if !w.faults() || k == 0 {
		return false
	}
	w.chances[what]++
	if !w.coin(k, what) {
		return false
	}
	w.count(what)
	return true
}

// coin is true with probability 2^-k: k fair bits, all set, each its own
// draw, so that a failing history shrinks toward false.
func (w *world) coin(k int, label string) bool {
	for range k {
		if w.choose(2, label) == 0 {
			return false
		}
	}
	return true
}

// uniform is a fair draw from [0, n), from bits, rejecting the values past
// n; it shrinks toward 0.
func (w *world) uniform(n int, label string) int {
	for {
		v := 0
		for b := n - 1; b > 0; b >>= 1 {
			v = v<<1 | w.choose(2, label)
		}
		if v < n {
			return v
		}
	}
}

// newID mints ids in order: claim tokens, and order ids where the Worker
// mints them.
func (w *world) newID() string {
	w.ids++
	return "id-" + strconv.Itoa(w.ids)
}

// newService is inst's Service, wired as main.go wires the Worker's.
func (w *world) newService(inst *instance) *intake.Service {
	opts := w.options(gateway{w: w, inst: inst.id})
	opts.Defer = func(ctx context.Context, task func(context.Context)) {
		parent := w.sched.running
		w.sched.spawn(&actor{name: parent.name + " after", inst: inst, gen: inst.gen, inv: parent.inv, key: parent.key, kind: taskActor, request: parent.origin()},
			func() { task(context.WithoutCancel(ctx)) })
	}
	opts.Limit = func(ctx context.Context, who string) (bool, error) {
		w.sched.yield()
		defer w.stallPastLease("rate limit's answer")()
		if w.fault("rate limit fails") {
			return false, errors.New("sim: rate limiter failed")
		}
		if w.fault("rate limit refuses") {
			return false, nil
		}
		return true, nil
	}
	var store intake.Store
	if w.mode == KVMode {
		s := kv.NewStore(watched{w.ns}, w.now)
		s.ReleaseClaims = w.releaseClaims
		s.Sleep = opts.Sleep
		store = s
		consumer := w.consumer(inst)
		opts.Schedule = consumer.Schedule
	} else {
		store = w.ledger
		if w.migrating {
			opts.Fallback, opts.FallbackUntil = w.fallback, w.now().Add(7*24*time.Hour)
		}
	}
	return intake.New(store, opts)
}

// errPagerRefused is the pager's refusal of a page.
var errPagerRefused = errors.New("sim: the pager refused the page")

// options are the Service's options every isolate and the settler share.
func (w *world) options(gw intake.Gateway) intake.Options {
	return intake.Options{
		ResultTTL:    w.resultTTL,
		PendingTTL:   pendingTTL,
		Wait:         waitForHolder,
		SettleMaxAge: w.settleMaxAge,
		Gateway:      gw,
		Now:          w.now,
		NewID:        w.newID,
		Sleep: func(ctx context.Context, d time.Duration) error {
			w.sched.sleep(d)
			return ctx.Err()
		},
		OnReleaseError: func(key intake.Key, err error) {
			w.count("claim not released")
			if errors.Is(err, intake.ErrNoRow) {
				w.violate("a release of %s that the table has no row for: %v", key, err)
			}
		},
		// The pager refuses a page in four in histories with faults of
		// the other part, as one that is down does, even once the history
		// is quiet (most give-ups come then, SETTLE_MAX_AGE after their
		// order): the key then owes its page, and the give-up waits for it.
		ReportUnresolved: func(ctx context.Context, key intake.Key, p intake.Placement, attempts int) error {
			if w.densities[otherPart] != noFaults && !w.direct {
				w.chances["pager refuses the page"]++
				if w.coin(2, "pager refuses the page") {
					w.count("pager refuses the page")
					return errPagerRefused
				}
			}
			w.count("pager took a page")
			if _, ok := w.paged[key.String()]; !ok {
				w.paged[key.String()] = w.now()
			}
			w.checkNotReceipted(key.String(), p.OrderID, "is paged unresolved", w.sched.running)
			return nil
		},
		OnUnresolved: func(ctx context.Context, key intake.Key, p intake.Placement, attempts int) {
			w.count("settler gave up")
			if _, ok := w.paged[key.String()]; !ok {
				w.violate("%s is reported unresolved, but no page for it reached the pager", key)
			}
			w.logf("%s: settler gave up on %s (%s)", w.sched.running.name, key, p.OrderID)
			w.unresolved[key.String()] = w.now()
			w.checkReportedOnce(key.String(), p)
			w.checkAlertWaited(key.String(), p)
			w.checkNotReceipted(key.String(), p.OrderID, "is reported unresolved", w.sched.running)
		},
	}
}

// consumer is KV mode's settle queue consumer on inst.
func (w *world) consumer(inst *instance) settlequeue.Consumer {
	return settlequeue.Consumer{Settler: settler{w: w, inst: inst}, Queue: queue{w: w}, Now: w.now}
}

// settler settles keys on an isolate's Service, naming the key it works
// on for the gateway's record.
type settler struct {
	w    *world
	inst *instance
}

func (s settler) Settle(ctx context.Context, key intake.Key) (intake.Settlement, error) {
	s.w.sched.running.key = key.String()
	st, err := s.inst.svc.Settle(ctx, key)
	s.w.checkNoRow(s.w.sched.running.name, err)
	if err != nil && st.NextAttempt.IsZero() && s.w.sched.running.name == "sweep" {
		s.w.breakChainOf(key.String(), breakAfter, "the sweep's settling failed: %v", err)
	}
	s.w.logf("%s: settled %s: %+v %v", s.w.sched.running.name, key, st, err)
	return st, err
}

// queue is the settle queue: a message is delivered at its delay, or
// later, or twice, or never.
type queue struct{ w *world }

func (q queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	w := q.w
	w.countOp("queue send", "")
	w.sched.yield()
	if w.fault("queue send fails") {
		w.breakChain(body, "its message's send failed")
		return errors.New("sim: queue send failed")
	}
	w.count("queue message sent")
	copies := 1
	switch {
	case w.fault("queue message lost"):
		w.breakChain(body, "the queue lost its message")
		copies = 0
	case w.fault("queue message duplicated"):
		copies = 2
	}
	for range copies {
		w.deliver(body, delay, 0)
	}
	return nil
}

// deliver hands body to a consumer on a live isolate after delay; a
// failed delivery is retried, up to the queue's retries.
func (w *world) deliver(body []byte, delay time.Duration, attempt int) {
	m := w.sentSettle(body)
	pump := &actor{name: "queue delivery", kind: daemonActor}
	w.sched.spawn(pump, func() {
		w.sched.sleep(delay)
		if w.fault("queue delivery late") {
			w.sched.sleep(time.Minute)
		}
		inst := w.instances[w.choose(len(w.instances), "consumer isolate")]
		a := &actor{name: "queue consumer", inst: inst, gen: inst.gen, inv: &invocation{kind: "queue"}, kind: settlerActor}
		if key, err := settlequeue.ParseMessage(body); err == nil {
			a.key = key.String()
		}
		m.consumer = a
		w.sched.spawn(a, func() {
			if w.mode != KVMode {
				m.done = true
				return // the ledger-mode Worker acknowledges it unsettled
			}
			if attempt > 0 {
				w.count("queue redelivery")
			}
			err := w.consumer(inst).Handle(context.Background(), body)
			w.handledSettle(m, a.key, err)
			switch {
			case err != nil && attempt < queueMaxRetries:
				w.deliver(body, queueRetryDelay, attempt+1)
			case err != nil:
				w.breakChain(body, "its message ran out of retries")
			}
		})
	})
}

// cron runs a Cron Trigger's work on a live isolate every sweepEvery:
// KV mode's sweep, or ledger mode's adoption during a migration.
//
// While the driver jumps hours ahead the runs in between are skipped, as
// Cron Triggers may be: a day's 288 sweeps would cost more than the rest
// of the history.
func (w *world) cron(name string, work func(inst *instance, a *actor)) func() {
	return func() {
		for {
			w.sched.sleep(sweepEvery)
			if w.jumping {
				w.count("sweep skipped in a time jump")
				continue
			}
			inst := w.instances[w.choose(len(w.instances), "sweep isolate")]
			a := &actor{name: name, inst: inst, gen: inst.gen, inv: &invocation{kind: "sweep"}, kind: settlerActor}
			w.sched.spawn(a, func() { work(inst, a) })
		}
	}
}

// sweep is KV mode's Cron Trigger: the settler's sweep of overdue keys.
func (w *world) sweep(inst *instance, a *actor) {
	if w.mode != KVMode {
		return // the route moved to the ledger-mode Worker
	}
	w.count("sweep")
	_, err := w.consumer(inst).Sweep(context.Background(), overdue{w: w, inv: a.inv}, w.now(), sweepGrace, sweepLimit)
	w.logf("sweep: %d KV operations, %v", a.inv.kvOps, err)
}

// adopt is ledger mode's Cron Trigger during a migration: it adopts the
// keys the KV-mode Worker left open and overdue (app.Worker.adoptOverdue),
// which the ledger's alarm then settles.
func (w *world) adopt(inst *instance, a *actor) {
	w.count("adoption sweep")
	ctx := context.Background()
	keys, err := overdue{w: w, inv: a.inv}.LeftOpen(ctx, sweepLimit)
	for _, key := range keys {
		a.key = key.String()
		adopted, aerr := inst.svc.Adopt(ctx, key)
		w.checkNoRow(a.name, aerr)
		if adopted {
			w.count("key adopted from KV")
		}
		err = errors.Join(err, aerr)
	}
	w.logf("adoption sweep: %d keys listed, %v", len(keys), err)
}

// overdue is the KV store's listing of overdue keys, watched: what it
// costs is the sweep's listing.
type overdue struct {
	w   *world
	inv *invocation
}

func (o overdue) Overdue(ctx context.Context, before time.Time, limit int) ([]intake.Key, error) {
	o.inv.kind = "sweep listing"
	keys, err := o.w.kvStore.Overdue(ctx, before, limit)
	o.inv.kind = "sweep"
	for _, key := range keys {
		o.w.checkChainGoesOn(key)
	}
	return keys, err
}

// LeftOpen is the KV store's listing of the keys KV mode left open, for a
// migration's adoption.
func (o overdue) LeftOpen(ctx context.Context, limit int) ([]intake.Key, error) {
	o.inv.kind = "sweep listing"
	defer func() { o.inv.kind = "sweep" }()
	return o.w.kvStore.LeftOpen(ctx, limit)
}

// alarms runs the ledger object's alarm when it is due, as the runtime
// does: at least once.
func (w *world) alarms() {
	for {
		at := w.ledger.Alarm
		if at.IsZero() || at.After(w.now()) {
			wait := time.Minute
			if !at.IsZero() {
				wait = min(wait, at.Sub(w.now()))
			}
			w.sched.sleep(wait)
			continue
		}
		runs := 1
		if w.fault("alarm runs twice") {
			runs = 2
		}
		for range runs {
			w.sched.spawn(&actor{name: "alarm", inv: &invocation{kind: "alarm"}, kind: alarmActor}, w.alarm)
		}
		w.sched.yield()
	}
}

// alarm is the ledger's alarm handler (ledger/object_js.go): it settles
// the due keys with a Service over the object's own rows, which caches
// nothing, asks no rate limit, and during a migration reads KV's fallback
// only before it gives up on a key.
func (w *world) alarm() {
	w.count("alarm")
	opts := w.options(gateway{w: w, inst: -1})
	opts.CachedReceipts = -1
	if w.migrating {
		opts.Fallback, opts.FallbackUntil = w.fallback, w.now().Add(7*24*time.Hour)
	}
	svc := intake.New(w.ledger, opts)
	w.ledger.RunAlarm(func(keys []intake.Key) error {
		for _, key := range keys {
			w.sched.running.key = key.String()
			st, err := svc.Settle(context.Background(), key)
			w.checkNoRow("alarm", err)
			w.logf("alarm: settled %s: %+v %v", key, st, err)
		}
		return nil
	})
}

// ledgerCall carries one call to the ledger object: over RPC from an
// isolate, yielding and failing as RPC does; in the alarm, in the
// object's own call stack, atomic.
func (w *world) ledgerCall(ctx context.Context, method string, apply func()) error {
	a := w.sched.running
	if w.direct || a == nil || a.kind == alarmActor {
		apply()
		if !w.direct && a != nil {
			w.sawLedger(a, method)
		}
		return nil
	}
	w.countOp("ledger "+method, "")
	w.sched.yield()
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case w.fault("ledger " + method + " overloaded"):
		return &workers.Error{Message: "sim: Durable Object is overloaded", Overloaded: true}
	case w.fault("ledger " + method + " fails before"):
		return &workers.Error{Message: "sim: Durable Object call failed", Retryable: true}
	}
	apply()
	w.sawLedger(a, method)
	if os.Getenv("SIM_DEBUG") != "" {
		w.logf("  %s: ledger %s %s", a.name, method, a.key)
	}
	w.sched.yield()
	if method != "lookup" && w.fault("ledger "+method+" fails after") {
		return &workers.Error{Message: "sim: Durable Object call failed after it took effect", Retryable: true}
	}
	return nil
}

// waitUntilLimit is how long Workers let waitUntil work go on after the
// client disconnects.
const waitUntilLimit = 30 * time.Second

// stopped decides, as a scheduler resumes a, whether it is stopped for
// good instead: its isolate died, or its client gave up on it 30 s ago
// (waitUntil's limit).
func (w *world) stopped(a *actor) bool {
	stop := w.stops(a)
	if stop {
		w.closeCalls(a)
	}
	return stop
}

func (w *world) stops(a *actor) bool {
	if a.inst != nil && a.gen != a.inst.gen {
		return true // its isolate died
	}
	if !a.clientGone.IsZero() && !w.now().Before(a.clientGone.Add(waitUntilLimit)) {
		w.count("a request cut off waitUntilLimit after its client gave up")
		w.stoppedOn(a, "stopped: waitUntil's 30 s after its client gave up ran out")
		return true
	}
	if a.kind == taskActor && a.request != nil {
		// Work after the response runs under waitUntil, cut off 30 s
		// after the response.
		if at, ok := w.ck.answered[a.request]; ok && !w.now().Before(at.Add(waitUntilLimit)) {
			w.count("work after a response cut off waitUntilLimit after it")
			w.stoppedOn(a, "stopped: waitUntil's 30 s after its response ran out")
			return true
		}
	}
	if !w.faults() || a.kind == driverActor || a.kind == daemonActor {
		return false
	}
	// An actor stops a quarter as often as another fault of its part
	// fires: a client that gives up, or an isolate that dies.
	k := faultOdds[otherPart][w.densities[otherPart]]
	if k == 0 || !w.faultAt(k+2, "stop") {
		return false
	}
	switch w.choose(2, "stop how") {
	case 0:
		// The client goes away; the Worker's request goes on, since the
		// entry runs the whole lifecycle under waitUntil (worker.mjs),
		// which Workers cut off 30 s after a client disconnects.
		if a.kind != requestActor || !a.clientGone.IsZero() {
			return false
		}
		w.count("client gave up")
		w.logf("%s: its client gave up; the request goes on under waitUntil", a.name)
		a.clientGone = w.now()
		return false
	default:
		if a.inst == nil {
			if a.kind == alarmActor {
				// The object was reset mid-alarm: the runtime runs the
				// alarm again.
				w.count("alarm interrupted")
				w.ledger.Alarm = w.now().Add(time.Second)
				return true
			}
			return false
		}
		w.stoppedOn(a, "stopped: its isolate died")
		w.kill(a.inst)
		return true
	}
}

// kill ends inst's isolate: every actor in it stops where it waits, and
// the next event there starts a new isolate with empty memory.
func (w *world) kill(inst *instance) {
	w.count("isolate died")
	w.logf("isolate %d died", inst.id)
	gen := inst.gen
	inst.gen++
	inst.svc = w.newService(inst)
	w.sched.park(func(a *actor) bool {
		if a.inst == inst && a.gen == gen {
			w.stoppedOn(a, "stopped: its isolate died")
			return true
		}
		return false
	})
	for _, c := range w.oms.calls {
		if c.open && c.inst == inst.id && c.gen == gen {
			w.oms.end(c)
		}
	}
}

func (w *world) closeCalls(a *actor) {
	for _, c := range w.oms.calls {
		if c.open && c.by == a {
			w.oms.end(c)
		}
	}
}

// countOp counts one operation against the running invocation: a KV or
// ledger call, a fetch, a queue send.
func (w *world) countOp(op, key string) {
	a := w.sched.running
	if a == nil || a.inv == nil || w.direct {
		return
	}
	inv := a.inv
	inv.kvOps++
	if inv.kvOps == maxOpsPerInvocation+1 {
		w.violate("a %s invocation made more than %d storage operations", inv.kind, maxOpsPerInvocation)
	}
	if inv.kind == "sweep listing" && op != "list" && !strings.HasPrefix(key, "sweep:") {
		w.violate("the sweep's listing made a %s of %s: it costs more than its list pages", op, key)
	}
}

// drive is the clients and the passing of time: a run of random actions
// with faults, then a quiet time for the settler.
func (w *world) drive() {
	steps := 1 + w.choose(30, "steps")
	w.planSwitch(steps)
	for i := range steps {
		k := w.keys[w.choose(len(w.keys), "key")]
		if w.migrationStep(i, k) {
			w.sched.yield()
			w.checkKept()
			continue
		}
		inst := w.instances[w.choose(len(w.instances), "isolate")]
		action := w.uniform(len(actionNames), "action")
		for i, name := range actionNames {
			if i == 0 || name != actionNames[i-1] {
				w.chances["action: "+name]++ // each kind once
			}
		}
		w.count("action: " + actionNames[action])
		switch action {
		case 0, 1, 2:
			w.submit(inst, k, k.order.JSON())
		case 10:
			// A burst past the opened set's 1,024 keys is KV mode's: over
			// the ledger it only costs time.
			size := 3
			switch w.choose(24, "burst") {
			case 1, 2, 3, 4, 5:
				size = 40
			case 6:
				size = 1100
			}
			if w.mode == LedgerMode {
				size = min(size, 40)
			}
			if w.mig != nil {
				// Past the adoption's SweepLimit, not ten times it.
				size = min(size, 3*sweepLimit/2)
			}
			w.burst(inst, size)
		case 11:
			// A client back for a key the settler gave up on: its retry
			// calls the OMS with the key's order id.
			k = w.givenUpKey(k)
			w.submit(inst, k, k.order.JSON())
		case 3:
			w.submit(inst, k, k.other.JSON())
		case 4:
			w.lookup(inst, k)
		case 5:
			w.submit(inst, k, []byte(`{"symbol":"AAPL","side":"hold"}`))
		case 6:
			w.sched.sleep([]time.Duration{0, 10 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second}[w.choose(4, "pause")])
		case 7:
			w.sched.sleep([]time.Duration{pendingTTL + time.Second, sweepEvery, 10 * time.Minute, cacheTTL}[w.choose(4, "wait")])
		case 8:
			w.jumpToEdge()
		case 9:
			if w.faultsOn && w.choose(2, "kill") == 1 {
				w.kill(inst)
			}
		}
		w.sched.yield()
		w.checkKept()
	}
	w.logf("faults stop")
	w.faultsOn = false
	// Time enough for the sweeps to reach every key, however many.
	quiet := max(quietFor, time.Duration(2+2*len(w.keys)/sweepLimit)*sweepEvery)
	quietAt := w.now()
	for range int(quiet / time.Minute) {
		w.sched.sleep(time.Minute)
		w.checkKept()
		w.checkAdoptionBound(quietAt)
	}
	w.retryAnswered()
}

// actionNames name the driver's actions, each drawn as often as another:
// a run prints their realised mix.
var actionNames = [...]string{"submit", "submit", "submit", "submit another order", "lookup", "submit an invalid body",
	"pause", "wait", "time jump", "kill an isolate", "burst", "retry a key given up on"}

// givenUpKey is a key the settler gave up on, chosen among them, or k if
// there is none.
func (w *world) givenUpKey(k *clientKey) *clientKey {
	var given []*clientKey
	for _, c := range w.keys {
		if _, ok := w.unresolved[c.key.String()]; ok {
			given = append(given, c)
		}
	}
	if len(given) == 0 {
		return k
	}
	w.count("retry of a key given up on")
	return given[w.choose(len(given), "key given up on")]
}

// maxFinalRetries bounds the keys retried at a history's end.
const maxFinalRetries = 64

// retryAnswered retries, once the history is quiet, the orders whose
// clients were given an outcome, each from a new isolate with nothing in
// memory, as a client would from anywhere: checkFinalRetries compares
// what they get with what the clients were given.
func (w *world) retryAnswered() {
	inst := &instance{id: len(w.instances), loc: w.uniform(locations, "final retries' location")}
	inst.svc = w.newService(inst)
	seen := make(map[string]bool)
	var retries []*answer
	for _, a := range w.answers {
		if a.lookup || (a.kind != created && a.kind != rejected) || seen[a.key+" "+a.fp] || len(retries) == maxFinalRetries {
			continue
		}
		seen[a.key+" "+a.fp] = true
		for _, k := range w.keys {
			if k.key.String() != a.key {
				continue
			}
			body := k.order.JSON()
			if k.other.Fingerprint() == a.fp {
				body = k.other.JSON()
			}
			w.submit(inst, k, body)
			retries = append(retries, w.answers[len(w.answers)-1])
		}
	}
	for range 10 * 60 {
		if !slices.ContainsFunc(retries, func(a *answer) bool { return a.end.IsZero() }) {
			break
		}
		w.sched.sleep(time.Second)
	}
	w.finalRetries = retries
}

// burst submits n new keys' orders on inst at once, as a busy desk does:
// during an OMS outage it leaves them all open in one isolate.
func (w *world) burst(inst *instance, n int) {
	w.count("burst of new keys")
	for range n {
		i := len(w.keys)
		k := &clientKey{key: intake.Key{Client: "desk-b", ID: "b" + strconv.Itoa(i)},
			order: order.Order{Symbol: "NVDA", Side: order.Buy, Quantity: float64(1 + i)},
			other: order.Order{Symbol: "NVDA", Side: order.Sell, Quantity: float64(1 + i)}}
		w.keys = append(w.keys, k)
		w.submit(inst, k, k.order.JSON())
	}
}

// jumpToEdge moves the clock to just before or just after one of the
// lifecycle's time limits, counted from a key's first gateway call.
func (w *world) jumpToEdge() {
	edges := []struct {
		name string
		d    time.Duration
	}{
		{"lease", pendingTTL},
		{"RESULT_TTL", w.resultTTL},
		{"SETTLE_MAX_AGE", w.settleMaxAge},
		{"KeepUntil", w.settleMaxAge + w.resultTTL},
		{"a day", 24 * time.Hour},
	}
	e := edges[w.choose(len(edges), "edge")]
	from := w.now()
	if len(w.oms.calls) > 0 {
		from = w.oms.calls[w.choose(len(w.oms.calls), "edge from")].acceptedAt
	}
	at := from.Add(e.d).Add([]time.Duration{time.Second, -time.Second}[w.choose(2, "edge side")])
	if at.After(w.now()) {
		w.count("time jump past " + e.name)
		w.logf("time jumps to %s %s", e.name, at.Sub(from))
		w.jumping = at.Sub(w.now()) > time.Hour
		w.sched.sleep(at.Sub(w.now()))
		w.jumping = false
		w.checkKept()
	}
}

// submit starts a request that submits body under k's key on inst.
func (w *world) submit(inst *instance, k *clientKey, body []byte) {
	w.count("submission")
	a := w.request(inst, k, "submit")
	fp := ""
	if o, err := order.Parse(body); err == nil {
		fp = o.Fingerprint()
	}
	ans := &answer{key: k.key.String(), fp: fp, inst: inst.id, start: w.now(), kind: gaveUp}
	w.answers = append(w.answers, ans)
	w.sched.spawn(a, func() {
		out, err := inst.svc.Submit(context.Background(), k.key, body, "192.0.2.1")
		w.answered(a, ans, out, err)
	})
}

// lookup starts a request that looks k's key up on inst.
func (w *world) lookup(inst *instance, k *clientKey) {
	w.count("lookup")
	a := w.request(inst, k, "lookup")
	ans := &answer{lookup: true, key: k.key.String(), inst: inst.id, start: w.now(), kind: gaveUp}
	w.answers = append(w.answers, ans)
	w.sched.spawn(a, func() {
		out, err := inst.svc.Lookup(context.Background(), k.key)
		w.answered(a, ans, out, err)
	})
}

func (w *world) request(inst *instance, k *clientKey, what string) *actor {
	return &actor{name: fmt.Sprintf("%s %s #%d @%d", what, k.key, len(w.answers), inst.id), inst: inst, gen: inst.gen,
		inv: &invocation{kind: "request"}, key: k.key.String(), kind: requestActor}
}

// answered records what a request's client was told: nothing, once it
// gave up, though the Worker answered.
func (w *world) answered(a *actor, ans *answer, out intake.Outcome, err error) {
	w.ck.answered[a] = w.now()
	if !a.clientGone.IsZero() {
		return // the answer stays gaveUp
	}
	ans.end, ans.by = w.now(), a
	var rej *intake.Rejection
	var open *intake.Unsettled
	switch {
	case err == nil && out.Replayed:
		ans.kind, ans.body, ans.orderID = replayed, out.Receipt, out.OrderID
	case err == nil:
		ans.kind, ans.body, ans.orderID = created, out.Receipt, out.OrderID
	case errors.As(err, &rej):
		ans.kind, ans.orderID, ans.replay = rejected, rej.OrderID, rej.Replayed
	case errors.As(err, &open):
		ans.kind, ans.orderID = unknown, open.OrderID
		if open.Unresolved() {
			ans.kind = unresolved
		}
	case errors.Is(err, intake.ErrKeyReused):
		ans.kind = reused
	case errors.Is(err, order.ErrInvalid):
		ans.kind = invalid
	case errors.Is(err, intake.ErrRateLimited):
		ans.kind = limited
	case errors.Is(err, intake.ErrInProgress):
		ans.kind = inProgress
	case errors.Is(err, intake.ErrNotFound):
		ans.kind = notFound
	case errors.Is(err, intake.ErrStorageUnavailable):
		ans.kind = storage
		w.checkNoRow(a.name, err)
	default:
		w.violate("%s: an error that is none of intake's: %v", a.name, err)
		return
	}
	w.count("answer " + string(ans.kind))
	w.logf("%s: %s %s", a.name, ans.kind, ans.orderID)
	w.checkAnswer(ans)
}

// seedLegacyKV writes what the KV namespace holds before a migration to
// the ledger: for each key, nothing, a receipt, a claim left open after an
// unknown outcome, or a claim still held, each with an order id the OMS
// may have.
//
// It was written a while before the history starts, past KV's staleness:
// a migration starts on a namespace the old version has written for long.
func (w *world) seedLegacyKV() {
	w.direct = true
	start := w.sched.now
	w.sched.now = start.Add(-2 * staleMost)
	defer func() { w.direct, w.sched.now = false, start }()
	ctx := context.Background()
	for i, k := range w.keys {
		orderID := "legacy-" + strconv.Itoa(i)
		acceptedAt := w.now()
		claim := intake.Claim{Token: "legacy-token-" + strconv.Itoa(i), Fingerprint: k.order.Fingerprint(), Order: k.order,
			OrderID: orderID, AcceptedAt: acceptedAt, Lease: pendingTTL, KeepUntil: acceptedAt.Add(w.settleMaxAge + w.resultTTL)}
		p := intake.Placement{OrderID: orderID, Client: k.key.Client, Order: k.order, AcceptedAt: acceptedAt}
		legacyCall := func() {
			w.oms.record(&gatewayCall{key: k.key.String(), orderID: orderID, fp: claim.Fingerprint,
				acceptedAt: acceptedAt, inst: -2, start: acceptedAt, end: acceptedAt})
		}
		switch w.uniform(4, "legacy state") {
		case 1:
			legacyCall()
			w.oms.act(k.key.String(), p).accepted = true
			receipt := order.Receipt{OrderID: orderID, Status: order.StatusAccepted, Order: k.order, AcceptedAt: acceptedAt}
			w.kvStore.Commit(ctx, k.key, claim, intake.Result{Body: receipt.JSON(), Fingerprint: claim.Fingerprint, TTL: w.resultTTL})
		case 2:
			legacyCall()
			if w.choose(2, "legacy order reached the OMS") == 1 {
				w.oms.act(k.key.String(), p).accepted = true
			}
			w.kvStore.Begin(ctx, k.key, claim)
			claim.Stage, claim.Attempts, claim.NextAttempt = intake.StageSent, 1, acceptedAt.Add(time.Second)
			w.kvStore.Release(ctx, k.key, claim)
			w.breakChainOf(k.key.String(), breakSeeded, "left open by an old version before the history, its messages long gone")
		case 3:
			w.kvStore.Begin(ctx, k.key, claim)
			w.breakChainOf(k.key.String(), breakSeeded, "held by an old version before the history, which sent no message")
		}
	}
	w.count("migration")
}

// String is the history's log, for a failure's report.
func (w *world) String() string { return strings.Join(w.log, "\n") }
