package intake_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
)

// TestALookupAnsweredAfterAPurgeDoesNotCacheThePurgedReceipt: over the
// ledger, whose reads are exact, a lookup whose read of the stored
// receipt comes back after a purge in the same instance has forgotten it
// must not put it back in the receipt cache: a retry in this instance
// would then replay from memory a receipt the purge erased, instead of
// placing the order anew (Purge: "The instance forgets the receipt at
// once").
func TestALookupAnsweredAfterAPurgeDoesNotCacheThePurgedReceipt(t *testing.T) {
	ctx := context.Background()
	clock, store, g, first, svc, admin := placedElsewhere(t)

	// The lookup's read of the receipt is made, and its answer arrives
	// once the purge in this instance is done.
	read, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	store.RoundTrip = func(_ context.Context, method string, apply func()) error {
		apply()
		if method == "lookup" {
			once.Do(func() { close(read); <-resume })
		}
		return nil
	}
	looked := make(chan error, 1)
	go func() {
		_, err := svc.Lookup(ctx, deskKey)
		looked <- err
	}()
	<-read
	if _, err := admin.Purge(ctx, deskKey, ""); err != nil {
		t.Fatalf("Purge: %v", err)
	}
	close(resume)
	if err := <-looked; err != nil {
		t.Fatalf("the lookup read before the purge: %v", err)
	}

	clock.Advance(time.Second)
	wantANewOrderAfterThePurge(t, svc, g, first)
}

// TestAPurgeThatFailedAfterItsDeleteLandedForgetsTheReceipt: over KV, a
// purge whose delete of the receipt landed although KV reported it
// failed, retried by the operator (who is told ErrNotFound: nothing is
// stored), leaves the receipt in this instance's memory, and a retry here
// replays the purged receipt from memory instead of placing a new order.
func TestAPurgeThatFailedAfterItsDeleteLandedForgetsTheReceipt(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	h := newHarness(t, intake.Options{Now: clock.Now})
	first, err := h.submit("k", validBody)
	if err != nil {
		t.Fatalf("the first submission: %v", err)
	}
	admin := intake.NewAdmin(h.svc, h.store)
	h.now = h.now.Add(2 * time.Second)
	h.faulty.Set(kvtest.Fault{Op: kvtest.OpDelete, Prefix: "result:", Nth: 1, Applied: true})
	if _, err := admin.Purge(ctx, key("k"), ""); err == nil {
		t.Fatal("Purge whose delete failed = nil, want an error")
	}
	h.faulty.Set()
	if _, ok := h.stored(t, "result:k"); ok {
		t.Fatal("result:k still stored; the fault should have let the delete land")
	}
	h.now = h.now.Add(2 * time.Second)
	if _, err := admin.Purge(ctx, key("k"), ""); !errors.Is(err, intake.ErrNotFound) {
		t.Fatalf("the operator's retry of the purge = %v, want ErrNotFound (the receipt is gone)", err)
	}
	clock.Advance(5 * time.Second)
	again, err := h.submit("k", validBody)
	if err != nil {
		t.Fatalf("the retry after the purge: %v", err)
	}
	if again.Replayed || string(again.Receipt) == string(first.Receipt) {
		t.Errorf("the retry after the purge in this instance = replayed %v %s; want a new order, not the purged receipt from memory", again.Replayed, again.Receipt)
	}
}

// TestTheReceiptCacheOutlastsKVsStaleWindowAfterASlowCommit: the receipt
// cache's entry for an outcome this instance committed must outlast
// KV's stale window (cacheTTL) after the write it stands for (cache.go:
// "rounded up, the entry outlasts that, so a retry never reads the key
// stale once its entry is gone and mints a claim with another
// acceptedAt"). commit caches it from a clock read before the write,
// so a write that takes longer than the rounding leaves the entry
// ending inside that window: a retry here that reads result:<key>
// stale (the location's cached not-found of the claim's own read),
// with the claim released beside the receipt, mints a second
// acceptedAt in the instance that stored the first.
func TestTheReceiptCacheOutlastsKVsStaleWindowAfterASlowCommit(t *testing.T) {
	clock := &fakeClock{now: acceptedAt}
	g := &idRecorder{answer: func(int, intake.Placement) error { return nil }}
	h := newHarness(t, intake.Options{Now: clock.Now, Gateway: g}, intake.Lifecycle{ReleaseAfterCommit: true})
	h.now = acceptedAt
	advance := func(d time.Duration) { clock.Advance(d); h.now = h.now.Add(d) }
	var written time.Time
	stale := false
	h.hooks.Before = func(op kvtest.Op, k string) error {
		if op == kvtest.OpPut && k == "result:k" && written.IsZero() {
			advance(1500 * time.Millisecond) // a slow write: it lands 1.5 s after the commit began
			written = clock.Now()
		}
		return nil
	}
	h.hooks.After = func(op kvtest.Op, k string, err error) error {
		if stale && op == kvtest.OpGet && k == "result:k" {
			return kv.ErrNotFound // the location's cached not-found, within KV's 60 s
		}
		return err
	}
	first, err := h.submit("k", validBody)
	if err != nil {
		t.Fatalf("the first submission: %v", err)
	}
	if written.IsZero() {
		t.Fatal("the receipt was never written")
	}
	// 59.5 s after the receipt's write landed: KV may still miss it.
	advance(written.Add(59500 * time.Millisecond).Sub(clock.Now()))
	stale = true
	again, err := h.submit("k", validBody)
	if err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if string(again.Receipt) != string(first.Receipt) {
		t.Errorf("the retry %.1f s after the receipt's write got %s, want the original %s (a second acceptedAt minted by the instance that stored the first)",
			clock.Now().Sub(written).Seconds(), again.Receipt, first.Receipt)
	}
	if n := len(g.orderIDs()); n != 1 {
		t.Errorf("gateway calls = %d, want 1", n)
	}
}

// commitPanicking is a Store whose first Commit panics, as a bug in a
// Store's client would.
type commitPanicking struct {
	intake.Store
	panicked bool
}

func (s *commitPanicking) Commit(ctx context.Context, key intake.Key, c intake.Claim, r intake.Result) error {
	if !s.panicked {
		s.panicked = true
		panic("commit panicked")
	}
	return s.Store.Commit(ctx, key, c, r)
}

// TestACommitThatPanickedAfterTheResponseIsNotReplayedFromMemory: the
// answer precedes its commit (Options.Defer, which the Worker runs under
// waitUntil, recovering a task's panic: workers.runTask). A commit that
// panics has failed as surely as one that returned an error, and the
// memory of the unstored answer must go (keep's forget), or a retry here
// replays for a minute a receipt that is not stored, while the key is
// held and no commit is coming.
func TestACommitThatPanickedAfterTheResponseIsNotReplayedFromMemory(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	store := &commitPanicking{Store: mem}
	g := &idRecorder{answer: func(int, intake.Placement) error { return nil }}
	recovering := func(ctx context.Context, task func(context.Context)) {
		defer func() { _ = recover() }() // as workers.runTask does after the response
		task(ctx)
	}
	svc := intake.New(store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: g, Now: clock.Now, Defer: recovering})
	if _, err := svc.Submit(ctx, deskKey, []byte(validBody), ""); err != nil {
		t.Fatalf("the first submission: %v", err)
	}
	clock.Advance(5 * time.Second)
	out, err := svc.Submit(ctx, deskKey, []byte(validBody), "")
	rec, lerr := mem.Lookup(ctx, deskKey)
	if lerr != nil {
		t.Fatalf("Lookup: %v", lerr)
	}
	if err == nil && out.Replayed && rec.State != intake.Stored {
		t.Errorf("the retry replayed %s from memory, but the Store holds the key %v: a receipt served that was never stored, after its commit failed", out.Receipt, rec.State)
	}
}

// TestAKeyLeftOpenAgainIsRememberedFor1024OtherKeys: an instance
// remembers a key it left open until it has left more than 1,024 other
// keys open since (http.md, "KV mode's limit": "Within one isolate
// neither happens while it remembers its claim: during its call and for
// a minute after, unless it left more than 1,024 other keys open
// since"). A key left open a second time keeps the place in the
// eviction order that its first put gave it, so during an OMS outage,
// when every key is left open, it is forgotten after a single other key:
// its next retry here, whose read of KV misses the key's claim, mints a
// second acceptedAt.
func TestAKeyLeftOpenAgainIsRememberedFor1024OtherKeys(t *testing.T) {
	clock := &fakeClock{now: acceptedAt}
	var mu sync.Mutex
	var kAcceptedAt []time.Time
	outage := true
	g := &idRecorder{answer: func(_ int, p intake.Placement) error {
		mu.Lock()
		defer mu.Unlock()
		if p.OrderID == intake.OrderIDFor(key("K"), fingerprint(t, validBody)) {
			kAcceptedAt = append(kAcceptedAt, p.AcceptedAt)
		}
		if outage {
			return errors.New("oms: timeout")
		}
		return nil
	}}
	h := newHarness(t, intake.Options{Now: clock.Now, Gateway: g})
	stale := false
	h.hooks.After = func(op kvtest.Op, k string, err error) error {
		if stale && op == kvtest.OpGet && (k == "pending:K" || k == "result:K") {
			return kv.ErrNotFound // a read that misses the key's writes, as KV's may for 60 s or more
		}
		return err
	}
	unknown := func(id string) {
		t.Helper()
		if _, err := h.submit(id, validBody); !errors.Is(err, intake.ErrOutcomeUnknown) {
			t.Fatalf("submit %s during the outage = %v, want an unknown outcome", id, err)
		}
	}
	unknown("K")
	for i := range 1023 {
		unknown("other-" + strconv.Itoa(i))
	}
	clock.Advance(time.Second)
	unknown("K") // K's retry, left open again: its memory is renewed
	unknown("one-more")
	clock.Advance(time.Second)
	mu.Lock()
	outage = false
	mu.Unlock()
	stale = true
	if _, err := h.submit("K", validBody); err != nil {
		t.Fatalf("K's retry after the outage: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, at := range kAcceptedAt {
		if !at.Equal(kAcceptedAt[0]) {
			t.Fatalf("K's gateway calls carried acceptedAt %v: a second acceptedAt minted by the instance that left K open 1 s before, with one other key left open since", kAcceptedAt)
		}
	}
}

// TestARetryWaitingOnAPurgeDoesNotCacheThePurgedReceipt: the same as
// TestALookupAnsweredAfterAPurgeDoesNotCacheThePurgedReceipt, through a
// submission's inProgress: a retry that finds the purge in this
// instance's in-flight set reads the Store once, and caches what it read
// once the purge has forgotten it.
func TestARetryWaitingOnAPurgeDoesNotCacheThePurgedReceipt(t *testing.T) {
	ctx := context.Background()
	// Wait 0: a duplicate of a request in flight asks the Store at once.
	clock, store, g, first, svc, admin := placedElsewhere(t)

	purging, read, purged := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var purgeOnce, lookupOnce sync.Once
	store.RoundTrip = func(_ context.Context, method string, apply func()) error {
		switch method {
		case "purge":
			purgeOnce.Do(func() { close(purging); <-read })
			apply()
		case "lookup":
			apply()
			lookupOnce.Do(func() { close(read); <-purged })
		default:
			apply()
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := admin.Purge(ctx, deskKey, "")
		done <- err
	}()
	<-purging // the purge holds the key in this instance's in-flight set
	retried := make(chan error, 1)
	go func() {
		_, err := svc.Submit(ctx, deskKey, []byte(validBody), "")
		retried <- err
	}()
	if err := <-done; err != nil {
		t.Fatalf("Purge: %v", err)
	}
	close(purged)
	if err := <-retried; err != nil {
		t.Fatalf("the retry during the purge: %v", err)
	}

	clock.Advance(time.Second)
	wantANewOrderAfterThePurge(t, svc, g, first)
}

// TestAPurgeThatErasedNothingKeepsTheReceiptInMemory: over KV, a purge
// that deleted nothing (its read of KV missed the receipt, as the
// location's cached not-found of the claim's own read may for 60 s, and
// it answered ErrNotFound; or it named another order id, ErrPrecondition)
// leaves the receipt stored. The instance that stored it a few seconds
// before must still replay it: its receipt cache is what keeps a retry
// here from reading the key stale within KV's window (cache.go: "so a
// retry never reads the key stale once its entry is gone and mints a
// claim with another acceptedAt"). Purge forgetting the entry "whatever
// the Store answered" drops it, and the retry calls the gateway again and
// stores a second receipt, with another acceptedAt, for the same order.
func TestAPurgeThatErasedNothingKeepsTheReceiptInMemory(t *testing.T) {
	for _, tc := range []struct {
		name       string
		staleFirst bool   // the purge's own read misses the receipt
		orderID    string // the order id the operator names
		want       error
	}{
		{name: "a purge whose read of KV missed the receipt", staleFirst: true, want: intake.ErrNotFound},
		{name: "a purge naming another order id", orderID: "not-the-keys-order-id", want: intake.ErrPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := &fakeClock{now: acceptedAt}
			g := &idRecorder{answer: func(int, intake.Placement) error { return nil }}
			h := newHarness(t, intake.Options{Now: clock.Now, Gateway: g}, intake.Lifecycle{ReleaseAfterCommit: true})
			h.now = acceptedAt
			advance := func(d time.Duration) { clock.Advance(d); h.now = h.now.Add(d) }
			stale := false
			h.hooks.After = func(op kvtest.Op, k string, err error) error {
				if stale && op == kvtest.OpGet && k == "result:k" {
					return kv.ErrNotFound // the location's cached not-found, within KV's 60 s
				}
				return err
			}
			first, err := h.submit("k", validBody)
			if err != nil {
				t.Fatalf("the first submission: %v", err)
			}
			admin := intake.NewAdmin(h.svc, h.store)
			advance(2 * time.Second)
			stale = tc.staleFirst
			if _, err := admin.Purge(ctx, key("k"), tc.orderID); !errors.Is(err, tc.want) {
				t.Fatalf("Purge = %v, want %v", err, tc.want)
			}
			h.wantReceiptStored(t, "k", first.Receipt) // the purge erased nothing
			stale = true
			advance(2 * time.Second)
			again, err := h.submit("k", validBody)
			if err != nil {
				t.Fatalf("the retry: %v", err)
			}
			if string(again.Receipt) != string(first.Receipt) {
				t.Errorf("the retry 4 s after the commit, in the instance that stored it, got %s, want the stored %s: a purge that erased nothing dropped it from memory, and a stale read minted a second acceptedAt", again.Receipt, first.Receipt)
			}
			if n := len(g.orderIDs()); n != 1 {
				t.Errorf("gateway calls = %d, want 1", n)
			}
		})
	}
}

// TestACommitAnsweredAfterAPurgeDoesNotCacheThePurgedReceipt: as a
// lookup's read, a commit's: over the ledger, an answer's commit follows
// the response (Options.Defer, waitUntil), outside the in-flight set, so
// a purge in this instance may run while it is under way. Its answer,
// coming back once the purge has erased the receipt and forgotten it,
// must not be cached: a retry here would replay for a minute a receipt
// the purge erased instead of placing the order anew (Purge: "The
// instance forgets the receipt at once").
func TestACommitAnsweredAfterAPurgeDoesNotCacheThePurgedReceipt(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	store := ledger.NewMemoryStore()
	store.Now = clock.Now
	g := &idRecorder{answer: func(int, intake.Placement) error { return nil }}
	var tasks []func()
	after := func(ctx context.Context, task func(context.Context)) { // waitUntil: after the response
		tasks = append(tasks, func() { task(ctx) })
	}
	svc := intake.New(store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: g, Now: clock.Now, Defer: after})
	admin := intake.NewAdmin(svc, store)
	first, err := svc.Submit(ctx, deskKey, []byte(validBody), "")
	if err != nil {
		t.Fatalf("the first submission: %v", err)
	}
	if len(tasks) == 0 {
		t.Fatal("no task after the response; want the commit")
	}

	// The commit lands in the object; its answer arrives once the purge
	// in this instance is done.
	committed, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	store.RoundTrip = func(_ context.Context, method string, apply func()) error {
		apply()
		if method == "commit" {
			once.Do(func() { close(committed); <-resume })
		}
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, task := range tasks {
			task()
		}
	}()
	<-committed
	if _, err := admin.Purge(ctx, deskKey, ""); err != nil {
		t.Fatalf("Purge of the committed receipt: %v", err)
	}
	close(resume)
	<-done

	clock.Advance(time.Second)
	wantANewOrderAfterThePurge(t, svc, g, first)
}

// TestACommitDuringAPurgeOfAnotherKeyIsCached: purges of other keys in
// the instance while a commit is under way keep nothing from memory, one
// or more than the purges a call is checked against held once (16): an
// operator's bulk purge landing on this isolate while a commit waits out
// KV's write limit. The commit's entry is what keeps a retry here from
// reading KV stale, 30 s later, and minting another acceptedAt. (The
// stand-in commits before it answers: no answer in memory stands in for
// the commit's entry.)
func TestACommitDuringAPurgeOfAnotherKeyIsCached(t *testing.T) {
	for _, purges := range []int{1, 17} {
		t.Run(strconv.Itoa(purges), func(t *testing.T) { commitDuringPurgesOfOtherKeys(t, purges) })
	}
}

func commitDuringPurgesOfOtherKeys(t *testing.T, purges int) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	h := newHarness(t, intake.Options{Now: clock.Now}, intake.Lifecycle{ReleaseAfterCommit: true})
	h.now = acceptedAt
	advance := func(d time.Duration) { clock.Advance(d); h.now = h.now.Add(d) }
	others := make([]string, purges)
	for i := range others {
		others[i] = "other-" + string(rune('a'+i))
		if _, err := h.submit(others[i], validBody); err != nil {
			t.Fatalf("the other key %s: %v", others[i], err)
		}
	}
	advance(2 * time.Second)
	admin := intake.NewAdmin(h.svc, h.store)
	purged, stale := false, false
	h.hooks.Before = func(op kvtest.Op, k string) error {
		if op == kvtest.OpPut && k == "result:k" && !purged {
			purged = true
			for _, o := range others {
				if _, err := admin.Purge(ctx, key(o), ""); err != nil {
					t.Errorf("Purge of %s: %v", o, err)
				}
			}
		}
		return nil
	}
	h.hooks.After = func(op kvtest.Op, k string, err error) error {
		if stale && op == kvtest.OpGet && k == "result:k" {
			return kv.ErrNotFound // the location's cached not-found, within KV's 60 s
		}
		return err
	}
	first, err := h.submit("k", validBody)
	if err != nil || !purged {
		t.Fatalf("the submission = %v, purged during its commit %v", err, purged)
	}
	advance(30 * time.Second)
	stale = true
	again, err := h.submit("k", validBody)
	if err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if string(again.Receipt) != string(first.Receipt) {
		t.Errorf("the retry got %s, want the original %s: %d purges of other keys kept the commit from memory, and a stale read minted another acceptedAt", again.Receipt, first.Receipt, purges)
	}
}

// wantANewOrderAfterThePurge: a retry of deskKey in svc, whose first
// order came back as first, after a purge of it in svc, is a new order:
// not the purged receipt from memory, and a second call of g.
func wantANewOrderAfterThePurge(t *testing.T, svc *intake.Service, g *idRecorder, first intake.Outcome) {
	t.Helper()
	again, err := svc.Submit(context.Background(), deskKey, []byte(validBody), "")
	if err != nil {
		t.Fatalf("the retry after the purge: %v", err)
	}
	if again.Replayed || string(again.Receipt) == string(first.Receipt) {
		t.Errorf("the retry after the purge in this instance = replayed %v %s; want a new order, not the purged receipt from memory", again.Replayed, again.Receipt)
	}
	if n := len(g.orderIDs()); n != 2 {
		t.Errorf("gateway calls = %d, want 2: the purged key's retry is a new order", n)
	}
}

// TestAMigratingPurgeThatErasedKVsCopyForgetsItEvenWhenTheLedgerAnswersHeld:
// during a migration the receipt is held only in KV, and this instance
// has it in memory (its lookup read KV while another isolate's request
// held the ledger's key, and could not copy it). The operator's purge
// here erases KV's copy first (purgeFallback), and then finds the
// ledger's key held by another isolate's retry, which has just claimed
// it: it answers in progress. It erased the receipt, KV's only copy, and
// the instance must forget it (invariants: a receipt is never served that
// was not stored; a receipt is never replayed from memory after a purge in
// the same instance).
func TestAMigratingPurgeThatErasedKVsCopyForgetsItEvenWhenTheLedgerAnswersHeld(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ledge func(t *testing.T, ctx context.Context, mem *ledger.MemoryStore) // what another isolate does to the ledger's key as the purge reaches KV
	}{
		{name: "the ledger's key held by another isolate's retry", ledge: func(t *testing.T, ctx context.Context, mem *ledger.MemoryStore) {
			if rec, err := mem.Begin(ctx, key("kept"), intake.Claim{Token: "retry elsewhere", Lease: time.Minute}); err != nil || rec.Took != intake.EventClaim {
				t.Fatalf("the other isolate's claim = %v, %v", rec.State, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := &fakeClock{now: acceptedAt}
			old := kv.NewMemoryNamespace()
			old.Now = clock.Now
			o, err := order.Parse([]byte(validBody))
			if err != nil {
				t.Fatal(err)
			}
			receipt := order.Receipt{OrderID: "order-x", Status: order.StatusAccepted, Order: o, AcceptedAt: acceptedAt}.JSON()
			if err := old.Put(ctx, "result:kept", kv.Entry{Value: string(receipt)}, kv.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			mem := ledger.NewMemoryStore()
			mem.Now = clock.Now
			hooked := &hookedFallback{Store: kv.NewStore(old, clock.Now)}
			svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
				Now: clock.Now, Fallback: hooked, FallbackUntil: acceptedAt.Add(48 * time.Hour)})

			// The lookup reads KV's receipt; another isolate's request
			// claims the ledger's key before the copy's claim, so the
			// lookup answers (and caches) the receipt as found.
			copying := intake.Claim{Token: "copying elsewhere", Lease: time.Minute}
			hooked.afterLookup = func() {
				if rec, err := mem.Begin(ctx, key("kept"), copying); err != nil || rec.Took != intake.EventClaim {
					t.Fatalf("the other isolate's claim = %v, %v", rec.State, err)
				}
			}
			if out, err := svc.Lookup(ctx, key("kept")); err != nil || string(out.Receipt) != string(receipt) {
				t.Fatalf("Lookup = %s, %v; want KV's receipt", out.Receipt, err)
			}
			if err := mem.Release(ctx, key("kept"), copying); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Second)

			// The purge: the ledger has nothing; KV's copy goes, and by then
			// another isolate's retry holds the ledger's key.
			hooked.beforePurge = func() { tc.ledge(t, ctx, mem) }
			if _, err := intake.NewAdmin(svc, mem).Purge(ctx, key("kept"), ""); !errors.Is(err, intake.ErrInProgress) {
				t.Fatalf("Purge = %v, want ErrInProgress (the ledger's key held)", err)
			}
			if _, err := old.Get(ctx, "result:kept"); !errors.Is(err, kv.ErrNotFound) {
				t.Fatalf("KV's receipt after the purge: %v; want it erased (the scenario needs it)", err)
			}
			// The other isolate's retry read KV after the purge, found
			// nothing, and let the key go (or placed a new order).
			if err := mem.Release(ctx, key("kept"), intake.Claim{Token: "retry elsewhere", Lease: time.Minute}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
			if rec, err := mem.Lookup(ctx, key("kept")); err != nil || rec.State == intake.Stored {
				t.Fatalf("the ledger holds %v, %v; want no receipt", rec.State, err)
			}
			if out, err := svc.Lookup(ctx, key("kept")); !errors.Is(err, intake.ErrNotFound) {
				t.Errorf("Lookup in the purging instance after the purge erased KV's only copy = %s, %v; want ErrNotFound: the receipt is stored nowhere, and was served from memory", out.Receipt, err)
			}
		})
	}
}

// placedElsewhere is a Service over the ledger, with nothing in memory,
// and its Admin, for deskKey, whose order (first) another instance placed
// through g.
func placedElsewhere(t *testing.T) (*fakeClock, *ledger.MemoryStore, *idRecorder, intake.Outcome, *intake.Service, *intake.Admin) {
	t.Helper()
	clock := &fakeClock{now: acceptedAt}
	store := ledger.NewMemoryStore()
	store.Now = clock.Now
	g := &idRecorder{answer: func(int, intake.Placement) error { return nil }}
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g, Now: clock.Now}
	first, err := intake.New(store, opts).Submit(context.Background(), deskKey, []byte(validBody), "")
	if err != nil {
		t.Fatalf("the first submission: %v", err)
	}
	svc := intake.New(store, opts)
	return clock, store, g, first, svc, intake.NewAdmin(svc, store)
}
