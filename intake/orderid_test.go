package intake_test

// A key keeps one order id: every gateway call for it carries the same
// one, whichever instance, Store or takeover makes the call, and no other
// order ever takes it.

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
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

// TestARetryKeepsItsOrderIDWhateverTheStoreForgot: a retry whose read of
// KV misses the key's open claim (KV promises no read-after-write, within
// a location or across them) sends the order id the first call sent, from
// another instance with no memory of the key, and from the same instance
// after more keys were left open than it remembers.
func TestARetryKeepsItsOrderIDWhateverTheStoreForgot(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// others is how many other keys the first instance leaves open
		// after k; retryOnFirst sends the retry to it.
		others       int
		retryOnFirst bool
	}{
		{"on another instance", 0, false},
		{"on the same instance, after 1,100 other keys were left open", 1100, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemoryNamespace()
			// stale hides every claim from reads, as a stale read of KV
			// may: the key looks free.
			stale := false
			ns := &kvtest.Hooked{Namespace: mem, After: func(op kvtest.Op, k string, err error) error {
				if stale && op == kvtest.OpGet && strings.HasPrefix(k, "pending:") {
					return kv.ErrNotFound
				}
				return err
			}}
			g := &idRecorder{answer: func(n int, _ intake.Placement) error { return errLost }}
			opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g}
			first := intake.New(kv.NewStore(ns, nil), opts)
			if _, err := first.Submit(ctx, key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
				t.Fatalf("first Submit = %v, want an unknown outcome", err)
			}
			for i := range tc.others {
				first.Submit(ctx, key("other-"+strconv.Itoa(i)), []byte(validBody), "")
			}
			retry := intake.New(kv.NewStore(ns, nil), opts)
			if tc.retryOnFirst {
				retry = first
			}
			stale = true
			retry.Submit(ctx, key("k"), []byte(validBody), "")
			ids := g.orderIDs()
			if got, want := ids[len(ids)-1], ids[0]; got != want {
				t.Fatalf("the retry sent order id %s, want %s, the key's first", got, want)
			}
		})
	}
}

// TestOrderIDForIsOnePerKeyAndOrder: the order id names the key and the
// order, and nothing else, in the form of a version 4 UUID.
func TestOrderIDForIsOnePerKeyAndOrder(t *testing.T) {
	a := intake.OrderIDFor(intake.Key{Client: "desk-a", ID: "k"}, "fp1")
	for _, tc := range []struct {
		name string
		key  intake.Key
		fp   string
		same bool
	}{
		{"the same key and order", intake.Key{Client: "desk-a", ID: "k"}, "fp1", true},
		{"another order", intake.Key{Client: "desk-a", ID: "k"}, "fp2", false},
		{"another key", intake.Key{Client: "desk-a", ID: "k2"}, "fp1", false},
		{"another client", intake.Key{Client: "desk-b", ID: "k"}, "fp1", false},
		{"the open Worker's key that reads the same", intake.Key{ID: "desk-a:k"}, "fp1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := intake.OrderIDFor(tc.key, tc.fp); (got == a) != tc.same {
				t.Errorf("OrderIDFor = %s beside %s, want same %v", got, a, tc.same)
			}
		})
	}
	const v4 = `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`
	if !regexp.MustCompile(v4).MatchString(a) {
		t.Errorf("OrderIDFor = %s, want the form %s", a, v4)
	}
}

// TestTakeoverNearTheEndOfTheKeepWindowOutlivesTheRow: a takeover of an
// open ledger key late in its keep window holds the key for its whole
// lease, past the first claim's keep window, so a request arriving then is
// in progress, never a new order id.
func TestTakeoverNearTheEndOfTheKeepWindowOutlivesTheRow(t *testing.T) {
	ctx := context.Background()

	t.Run("through the Service, the gateway sees one order id", func(t *testing.T) {
		clock := &fakeClock{now: acceptedAt}
		mem := ledger.NewMemoryStore()
		mem.Now = clock.Now
		entered, release := make(chan struct{}), make(chan struct{})
		g := &idRecorder{answer: func(n int, _ intake.Placement) error {
			switch n {
			case 1:
				return errLost
			case 2: // the takeover near the end of the keep window
				close(entered)
				<-release
				return errLost
			}
			return nil
		}}
		// Each request reaches another instance: no memory helps.
		instance := func() *intake.Service {
			return intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
				Gateway: g, Now: clock.Now})
		}
		if _, err := instance().Submit(ctx, key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
			t.Fatalf("first Submit = %v, want ErrOutcomeUnknown", err)
		}

		clock.Advance(keepWindow - 30*time.Second)
		retried := make(chan error, 1)
		go func() {
			_, err := instance().Submit(ctx, key("k"), []byte(validBody), "")
			retried <- err
		}()
		<-entered
		// Past the first claim's keep window, within the takeover's lease.
		clock.Advance(40 * time.Second)
		_, lookupErr := instance().Lookup(ctx, key("k"))
		_, dupErr := instance().Submit(ctx, key("k"), []byte(validBody), "")
		close(release)
		if err := <-retried; !errors.Is(err, intake.ErrOutcomeUnknown) {
			t.Errorf("the takeover = %v, want ErrOutcomeUnknown", err)
		}
		if !errors.Is(lookupErr, intake.ErrInProgress) {
			t.Errorf("Lookup during the takeover's lease = %v, want ErrInProgress", lookupErr)
		}
		if !errors.Is(dupErr, intake.ErrInProgress) {
			t.Errorf("a duplicate during the takeover's lease = %v, want ErrInProgress", dupErr)
		}

		clock.Advance(10 * time.Second)
		out, err := instance().Submit(ctx, key("k"), []byte(validBody), "")
		if err != nil {
			t.Fatalf("the last retry = %v, want the receipt", err)
		}
		id := wantOneOrderID(t, g.orderIDs(), 3)
		if out.OrderID != id {
			t.Fatalf("receipt names %s, want the key's order id %s", out.OrderID, id)
		}
	})

	t.Run("in the ledger, a takeover that keeps nothing more holds for its lease", func(t *testing.T) {
		clock := &fakeClock{now: acceptedAt}
		mem := ledger.NewMemoryStore()
		mem.Now = clock.Now
		o, err := order.Parse([]byte(validBody))
		if err != nil {
			t.Fatal(err)
		}
		first := intake.Claim{Token: "first", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-x", AcceptedAt: acceptedAt,
			Lease: config.DefaultPendingTTL, KeepUntil: acceptedAt.Add(keepWindow)}
		if rec, err := mem.Begin(ctx, key("k"), first); err != nil || rec.Took != intake.EventClaim {
			t.Fatalf("first Begin = %+v, %v; want a claim", rec, err)
		}
		first.Stage = intake.StageSent
		if err := mem.Release(ctx, key("k"), first); err != nil {
			t.Fatal(err)
		}
		clock.Advance(keepWindow - 30*time.Second)
		// The settler's claim: no KeepUntil of its own.
		takeover := intake.Claim{Token: "takeover", Lease: config.DefaultPendingTTL, By: intake.RoleSettler}
		if rec, err := mem.Begin(ctx, key("k"), takeover); err != nil || rec.Took != intake.EventTakeOver || rec.OrderID != "order-x" {
			t.Fatalf("takeover = %+v, %v; want a takeover with order-x", rec, err)
		}
		clock.Advance(40 * time.Second)
		if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Held || rec.OrderID != "order-x" {
			t.Errorf("Lookup within the takeover's lease = state %v order %q, %v; want Held with order-x", rec.State, rec.OrderID, err)
		}
		late := intake.Claim{Token: "late", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-y", AcceptedAt: clock.Now(),
			Lease: config.DefaultPendingTTL, KeepUntil: clock.Now().Add(keepWindow)}
		if rec, err := mem.Begin(ctx, key("k"), late); err != nil || rec.State != intake.Held {
			t.Errorf("a new claim within the takeover's lease = state %v order %q, %v; want Held", rec.State, rec.OrderID, err)
		}
	})
}

// TestKVClaimCarriesItsOrderWhenTheOpenReleaseFails: in KV mode the
// claim's one write names its order, so when the release that leaves the
// key open fails after an unknown outcome, a retry carrying a different
// order is refused, never sent under the key's order id.
func TestKVClaimCarriesItsOrderWhenTheOpenReleaseFails(t *testing.T) {
	ctx := context.Background()
	g := &gatewayDouble{answers: []error{errLost}}
	h := newHarness(t, intake.Options{Gateway: g})
	// The claim write lands; both tries of the open release fail.
	h.faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "pending:", Nth: 2}, kvtest.Fault{Op: kvtest.OpPut, Prefix: "pending:", Nth: 3})
	if _, err := h.submit("k", validBody); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
	}
	if got := len(h.releaseErrors()); got != 1 {
		t.Fatalf("OnReleaseError calls = %d, want 1: the open release must have failed for this test", got)
	}
	h.faulty.Set()

	// The lease passes; the retry reaches another instance.
	h.now = h.now.Add(config.DefaultPendingTTL + time.Second)
	later := acceptedAt.Add(config.DefaultPendingTTL + time.Second)
	other := intake.New(h.store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: g, Now: func() time.Time { return later }})
	if _, err := other.Submit(ctx, key("k"), []byte(otherBody), ""); !errors.Is(err, intake.ErrKeyReused) {
		t.Errorf("a different order after the lease = %v, want ErrKeyReused", err)
	}
	for _, p := range g.placements() {
		if p.Order.Side == order.Sell {
			t.Errorf("the gateway was sent the different order %+v", p)
		}
	}
	out, err := other.Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil {
		t.Fatalf("the same order after the lease = %v, want its receipt", err)
	}
	ids := make([]string, 0, 2)
	for _, p := range g.placements() {
		ids = append(ids, p.OrderID)
	}
	if id := wantOneOrderID(t, ids, 2); out.OrderID != id {
		t.Fatalf("receipt names %s, want the key's order id %s", out.OrderID, id)
	}
}

// staleNamespace is a kv.Namespace whose Gets of a pending: key miss for
// staleFor after each Put of it, as a KV read may miss a write even in
// the location that made it.
type staleNamespace struct {
	kv.Namespace
	now      func() time.Time
	staleFor time.Duration

	mu      sync.Mutex
	written map[string]time.Time
	misses  int
}

func (s *staleNamespace) Get(ctx context.Context, k string) (kv.Entry, error) {
	s.mu.Lock()
	at, ok := s.written[k]
	stale := ok && strings.HasPrefix(k, "pending:") && s.now().Sub(at) < s.staleFor
	if stale {
		s.misses++
	}
	s.mu.Unlock()
	if stale {
		return kv.Entry{}, kv.ErrNotFound
	}
	return s.Namespace.Get(ctx, k)
}

func (s *staleNamespace) Put(ctx context.Context, k string, e kv.Entry, opts kv.PutOptions) error {
	s.mu.Lock()
	if s.written == nil {
		s.written = make(map[string]time.Time)
	}
	s.written[k] = s.now()
	s.mu.Unlock()
	return s.Namespace.Put(ctx, k, e, opts)
}

func (s *staleNamespace) staleReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.misses
}

// TestStaleReadKeepsTheOrderIDWithinAnInstance: a retry on the instance
// that left a key open keeps the key's order id, and refuses another
// order, even when its read of KV misses the claim that instance wrote.
func TestStaleReadKeepsTheOrderIDWithinAnInstance(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	mem := kv.NewMemoryNamespace()
	mem.Now = clock.Now
	ns := &staleNamespace{Namespace: mem, now: clock.Now, staleFor: 30 * time.Second}
	g := &gatewayDouble{answers: []error{errLost}}
	store := kv.NewStore(ns, clock.Now)
	store.ReleaseClaims = true
	svc := intake.New(store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: g, Now: clock.Now})
	if _, err := svc.Submit(ctx, key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
	}
	clock.Advance(time.Second)
	if _, err := svc.Submit(ctx, key("k"), []byte(otherBody), ""); !errors.Is(err, intake.ErrKeyReused) {
		t.Errorf("a different order during the stale read = %v, want ErrKeyReused", err)
	}
	out, err := svc.Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil {
		t.Fatalf("the retry = %v, want the receipt", err)
	}
	if ns.staleReads() == 0 {
		t.Fatal("no read of pending:k missed: the test stages no stale read")
	}
	ids := make([]string, 0, 2)
	for _, p := range g.placements() {
		ids = append(ids, p.OrderID)
	}
	if id := wantOneOrderID(t, ids, 2); out.OrderID != id {
		t.Fatalf("receipt names %s, want the key's order id %s", out.OrderID, id)
	}
}

// TestStaleReadKeepsTheAcceptedAtAMinuteAfterAReleaseThatWaitedLanded: an
// instance remembers the claim it left open for KV's stale window after
// its release landed, not after it began: the release, refused within a
// second of the claim's write, waits out KV's write limit, and a retry
// a minute after it began, whose read still misses that write, keeps the
// key's acceptedAt instead of minting another.
//
// Both ways an instance leaves a key open: after a gateway call without an
// answer, and after a claim's write that failed once it had landed.
func TestStaleReadKeepsTheAcceptedAtAMinuteAfterAReleaseThatWaitedLanded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answers   []error
		failClaim bool
		want      error
	}{
		{"an unknown outcome", []error{errLost}, false, intake.ErrOutcomeUnknown},
		{"a claim's write that failed once landed", nil, true, intake.ErrStorageUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testStaleReadAfterALateRelease(t, tc.answers, tc.failClaim, tc.want)
		})
	}
}

// failingAfterPut fails its first Put once the write has landed.
type failingAfterPut struct {
	kv.Namespace
	failed bool
}

func (f *failingAfterPut) Put(ctx context.Context, k string, e kv.Entry, opts kv.PutOptions) error {
	err := f.Namespace.Put(ctx, k, e, opts)
	if err == nil && !f.failed {
		f.failed = true
		return errors.New("kv: PUT failed after it landed")
	}
	return err
}

func testStaleReadAfterALateRelease(t *testing.T, answers []error, failClaim bool, want error) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	mem := kv.NewMemoryNamespace()
	mem.Now, mem.LimitWrites = clock.Now, true
	var under kv.Namespace = mem
	if failClaim {
		under = &failingAfterPut{Namespace: mem}
	}
	ns := &staleNamespace{Namespace: under, now: clock.Now, staleFor: kv.ReadsLag}
	g := &gatewayDouble{answers: answers}
	store := kv.NewStore(ns, clock.Now)
	store.Sleep = func(ctx context.Context, d time.Duration) error {
		clock.Advance(d)
		return nil
	}
	svc := intake.New(store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: g, Now: clock.Now})
	if _, err := svc.Submit(ctx, key("k"), []byte(validBody), ""); !errors.Is(err, want) {
		t.Fatalf("Submit = %v, want %v", err, want)
	}
	released := clock.Now()
	if !released.After(acceptedAt) {
		t.Fatal("the release did not wait out the write limit: the test stages no late release")
	}
	// Past a minute after the release began, within one after it landed.
	clock.Advance(kv.ReadsLag - 300*time.Millisecond)
	out, err := svc.Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil {
		t.Fatalf("the retry = %v, want the receipt", err)
	}
	if ns.staleReads() == 0 {
		t.Fatal("no read of pending:k missed: the test stages no stale read")
	}
	if got := order.ReceiptAcceptedAt(out.Receipt); !got.Equal(acceptedAt) {
		t.Errorf("the retry's receipt is accepted at %s, want the key's %s: the instance forgot its claim %s after the release landed",
			got.Format(time.RFC3339Nano), acceptedAt.Format(time.RFC3339Nano), clock.Now().Sub(released))
	}
}

// TestTwoKVInstancesRacingForAKeySendOneOrderID documents the limit of the
// claim over KV: it is exclusive within one Service, but two instances
// (two isolates) that both check the claim before either writes it both
// claim the key and pass the order on, as KV has no compare-and-swap. Both
// carry the order's one order id (intake.OrderIDFor), so the OMS, which
// answers a repeated order id with its first outcome, places it once. If
// this test starts failing on the first check, the claim has become
// atomic across instances: update it and the package docs.
func TestTwoKVInstancesRacingForAKeySendOneOrderID(t *testing.T) {
	mem := kv.NewMemoryNamespace()
	// Each instance holds its claim until the other has reached its claim
	// too, that is until both have looked the key up and found it free.
	gate := func(mine, theirs chan struct{}) kv.Namespace {
		return &kvtest.Hooked{Namespace: mem, Before: func(op kvtest.Op, k string) error {
			if op == kvtest.OpPut && strings.HasPrefix(k, "pending:") {
				close(mine)
				<-theirs
			}
			return nil
		}}
	}
	a, b := make(chan struct{}), make(chan struct{})
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL}
	svcA := intake.New(kv.NewStore(gate(a, b), nil), opts)
	svcB := intake.New(kv.NewStore(gate(b, a), nil), opts)
	var outA, outB intake.Outcome
	var errA, errB error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		outA, errA = svcA.Submit(context.Background(), key("k"), []byte(validBody), "")
	}()
	go func() {
		defer wg.Done()
		outB, errB = svcB.Submit(context.Background(), key("k"), []byte(validBody), "")
	}()
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("Submit errors = %v, %v; want both to place", errA, errB)
	}
	if outA.Replayed || outB.Replayed {
		t.Fatalf("receipts %s (replayed %v) and %s (replayed %v); want both placed by their own claim", outA.Receipt, outA.Replayed, outB.Receipt, outB.Replayed)
	}
	if outA.OrderID != outB.OrderID {
		t.Fatalf("order ids %s and %s; want the order's one order id", outA.OrderID, outB.OrderID)
	}
}

// TestATakeoverWhoseAnswerWasLostKeepsTheTimeAClientWasGiven: over the
// ledger, a client is answered and the commit after the response never
// runs (its instance died). Another instance, whose own claim failed
// earlier and which remembers that claim's time, takes the key over once
// the lease ends, but the ledger's answer is lost, so it never learns the
// key's time and releases the key with its own. The settler must still
// store the receipt the client was given, byte for byte.
func TestATakeoverWhoseAnswerWasLostKeepsTheTimeAClientWasGiven(t *testing.T) {
	now := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := ledger.NewMemoryStore()
	mem.Now = clock
	var fail string // "before" or "after" the next call to the object
	mem.RoundTrip = func(_ context.Context, _ string, apply func()) error {
		f := fail
		fail = ""
		switch f {
		case "before":
			return errors.New("ledger: injected before")
		case "after":
			apply()
			return errors.New("ledger: injected after")
		}
		apply()
		return nil
	}
	gateway := &gatewayDouble{}
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Now: clock, Gateway: gateway,
		Defer: func(context.Context, func(context.Context)) {}} // the instance dies before its commit
	first, err := intake.New(mem, opts).Submit(context.Background(), key("k"), []byte(validBody), "")
	if err != nil {
		t.Fatalf("first Submit: %v", err)
	}
	other := intake.New(mem, opts)
	now = now.Add(30 * time.Second)
	fail = "before"
	if _, err := other.Submit(context.Background(), key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("Submit with its claim failing = %v, want ErrStorageUnavailable", err)
	}
	now = now.Add(config.DefaultPendingTTL - 30*time.Second) // the first claim's lease is over
	fail = "after"
	if _, err := other.Submit(context.Background(), key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("Submit with its claim's answer lost = %v, want ErrStorageUnavailable", err)
	}
	settlerOpts := opts
	settlerOpts.CachedReceipts = -1
	settler := intake.New(mem, settlerOpts)
	for _, k := range mem.DueKeys(10) {
		if _, err := settler.Settle(context.Background(), k); err != nil {
			t.Fatalf("Settle(%v): %v", k, err)
		}
	}
	out, err := settler.Lookup(context.Background(), key("k"))
	if err != nil || string(out.Receipt) != string(first.Receipt) {
		t.Fatalf("stored receipt = %s, %v; want the one the client was given: %s", out.Receipt, err, first.Receipt)
	}
	for _, p := range gateway.placements() {
		if !p.AcceptedAt.Equal(now.Add(-config.DefaultPendingTTL)) {
			t.Errorf("a gateway call carried acceptedAt %v, want the first's", p.AcceptedAt)
		}
	}
}

// TestATakeoverWhoseClaimWasSentTwiceKeepsTheTimeAClientWasGiven: over the
// ledger, a client is answered and its commit never runs. A retry takes
// the key over once the lease ends, but its claim's RPC is sent again
// after its answer was lost (the first try had run), and the object finds
// the retry's own claim. Its order id, derived from the key and the
// order, is the key's, so only the answer can say the key keeps another
// time: the retry must store the receipt the client was given, byte for
// byte (found by a review).
func TestATakeoverWhoseClaimWasSentTwiceKeepsTheTimeAClientWasGiven(t *testing.T) {
	now := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := ledger.NewMemoryStore()
	mem.Now = clock
	sendTwice := false
	mem.RoundTrip = func(_ context.Context, method string, apply func()) error {
		if method == "claim" && sendTwice {
			sendTwice = false
			apply() // the first try ran; its answer was lost
		}
		apply()
		return nil
	}
	gateway := &gatewayDouble{}
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Now: clock, Gateway: gateway,
		Defer: func(context.Context, func(context.Context)) {}} // the instance dies before its commit
	first, err := intake.New(mem, opts).Submit(context.Background(), key("k"), []byte(validBody), "")
	if err != nil {
		t.Fatalf("first Submit: %v", err)
	}
	now = now.Add(config.DefaultPendingTTL + time.Second) // its lease is over: the key is open
	opts.Defer = nil
	sendTwice = true
	retry, err := intake.New(mem, opts).Submit(context.Background(), key("k"), []byte(validBody), "")
	if err != nil || string(retry.Receipt) != string(first.Receipt) {
		t.Errorf("the retry = %s, %v; want the receipt the client was given: %s", retry.Receipt, err, first.Receipt)
	}
	if out, err := intake.New(mem, opts).Lookup(context.Background(), key("k")); err != nil || string(out.Receipt) != string(first.Receipt) {
		t.Errorf("stored receipt = %s, %v; want the one the client was given: %s", out.Receipt, err, first.Receipt)
	}
}
