package intake_test

// One test per finding of issue 21, each named after the behaviour that
// keeps one order id per key. Each failed on the code before the settler
// (707df15).

import (
	"context"
	"errors"
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

// otherBody is an order that validBody's key must never be used for.
const otherBody = `{"symbol":"AAPL","side":"sell","quantity":10}`

// keepWindow is how long from its acceptance a key keeps its order id at
// least: the settler's attempts, then a receipt's TTL.
const keepWindow = intake.DefaultSettleMaxAge + config.DefaultResultTTL

// idRecorder is a gateway that records the order id of every call and
// answers each with answer(n), n counting calls from 1. answer runs
// outside the lock, so it may block.
type idRecorder struct {
	answer func(n int, p intake.Placement) error

	mu  sync.Mutex
	ids []string
}

func (g *idRecorder) Place(_ context.Context, p intake.Placement) error {
	g.mu.Lock()
	g.ids = append(g.ids, p.OrderID)
	n := len(g.ids)
	g.mu.Unlock()
	return g.answer(n, p)
}

// orderIDs returns the order ids the gateway saw, in order.
func (g *idRecorder) orderIDs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.ids...)
}

// wantOneOrderID fails unless the gateway saw want calls, all carrying one
// order id, and returns it.
func wantOneOrderID(t *testing.T, ids []string, want int) string {
	t.Helper()
	if len(ids) != want {
		t.Fatalf("gateway calls carried %v, want %d calls", ids, want)
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("gateway calls carried order ids %v, want one order id for the key", ids)
		}
	}
	return ids[0]
}

// dies runs f as an isolate that is killed inside it: a panic ends it with
// nothing after, not even deferred releases of the Service's own. It
// reports whether f died.
func dies(f func()) (died bool) {
	defer func() {
		if recover() != nil {
			died = true
		}
	}()
	f()
	return false
}

// isolateKilled is what a gateway double panics with to end its caller.
type isolateKilled struct{}

// TestTakeoverNearTheEndOfTheKeepWindowOutlivesTheRow is finding 1: a
// takeover of an open ledger key late in its keep window holds the key
// for its whole lease, past the first claim's keep window, so a request
// arriving then is in progress, never a new order id.
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
		if rec, err := mem.Begin(ctx, key("k"), first); err != nil || rec.State != intake.Claimed {
			t.Fatalf("first Begin = %+v, %v; want Claimed", rec, err)
		}
		first.Sent = true
		if err := mem.Release(ctx, key("k"), first); err != nil {
			t.Fatal(err)
		}
		clock.Advance(keepWindow - 30*time.Second)
		// The settler's claim: no KeepUntil of its own.
		takeover := intake.Claim{Token: "takeover", Lease: config.DefaultPendingTTL, Settling: true}
		if rec, err := mem.Begin(ctx, key("k"), takeover); err != nil || rec.State != intake.Claimed || rec.OrderID != "order-x" {
			t.Fatalf("takeover = %+v, %v; want Claimed with order-x", rec, err)
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

// TestKVClaimCarriesItsOrderWhenTheOpenReleaseFails is finding 2: in KV
// mode the claim's one write names its order, so when the release that
// leaves the key open fails after an unknown outcome, a retry carrying a
// different order is refused, never sent under the key's order id.
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

// migrating is a migration from KV to the ledger on a fake clock: the old
// namespace keeps key "k" open with order id order-x for validBody, and the
// ledger is empty.
func migrating(t *testing.T) (*fakeClock, *kv.MemoryNamespace, *ledger.MemoryStore) {
	t.Helper()
	clock := &fakeClock{now: acceptedAt}
	old := kv.NewMemoryNamespace()
	old.Now = clock.Now
	openInOldNamespace(t, old, clock.Now, key("k"), validBody, "order-x")
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	return clock, old, mem
}

// openInOldNamespace leaves key open in a KV namespace with orderID for
// the order in body, as KV mode does after an unknown outcome, before a
// migration to the ledger.
func openInOldNamespace(t *testing.T, ns kv.Namespace, now func() time.Time, k intake.Key, body, orderID string) {
	t.Helper()
	ctx := context.Background()
	o, err := order.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	store := kv.NewStore(ns, now)
	c := intake.Claim{Token: "old", Fingerprint: o.Fingerprint(), Order: o, OrderID: orderID, AcceptedAt: now(),
		Lease: config.DefaultPendingTTL, KeepUntil: now().Add(keepWindow)}
	if rec, err := store.Begin(ctx, k, c); err != nil || rec.State != intake.Claimed {
		t.Fatalf("old Begin = %+v, %v; want Claimed", rec, err)
	}
	c.Sent = true
	if err := store.Release(ctx, k, c); err != nil {
		t.Fatal(err)
	}
	if rec, err := store.Lookup(ctx, k); err != nil || rec.State != intake.Open || rec.OrderID != orderID {
		t.Fatalf("old Lookup = %+v, %v; want Open with %s", rec, err, orderID)
	}
}

// TestFallbackOrderIDIsNotAdoptedByAnotherOrder is finding 3: during a
// migration, an order id the old KV namespace keeps open for one order is
// never taken by a different order under the same key.
func TestFallbackOrderIDIsNotAdoptedByAnotherOrder(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	g := &gatewayDouble{}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: g, Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(time.Hour)})
	if _, err := svc.Submit(ctx, key("k"), []byte(otherBody), ""); !errors.Is(err, intake.ErrKeyReused) {
		t.Errorf("a different order = %v, want ErrKeyReused", err)
	}
	if calls := g.placements(); len(calls) != 0 {
		t.Fatalf("gateway calls %+v, want none for a different order", calls)
	}
	out, err := svc.Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil || out.OrderID != "order-x" {
		t.Fatalf("the order the old namespace kept = %s, %v; want the receipt of order-x", out.OrderID, err)
	}
}

// TestFallbackOrderIDReachesTheLedgerBeforeTheGateway is finding 4: an
// order id adopted from the old KV namespace is the ledger's before the
// first gateway call, so a retry after the isolate died at the gateway
// sends it again, not the ledger's own.
func TestFallbackOrderIDReachesTheLedgerBeforeTheGateway(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	g := &idRecorder{answer: func(n int, _ intake.Placement) error {
		if n == 1 {
			panic(isolateKilled{}) // nothing after the call runs: no release
		}
		return nil
	}}
	// Each request reaches a new instance, with no memory of the last.
	instance := func() *intake.Service {
		return intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
			Gateway: g, Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(time.Hour)})
	}
	if !dies(func() { instance().Submit(ctx, key("k"), []byte(validBody), "") }) {
		t.Fatal("the first Submit returned; want the isolate killed at the gateway")
	}
	clock.Advance(config.DefaultPendingTTL + time.Second) // the dead request's lease
	out, err := instance().Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil {
		t.Fatalf("the retry = %v, want the receipt", err)
	}
	ids := g.orderIDs()
	if id := wantOneOrderID(t, ids, 2); id != "order-x" || out.OrderID != "order-x" {
		t.Fatalf("gateway calls carried %v and the receipt %s, want order-x, the id the old namespace kept", ids, out.OrderID)
	}
}

// TestRetryAfterAnUnknownOutcomeIsNotRateLimited: a retry after an unknown
// outcome is the same order again, so it never asks Options.Limit, in
// either storage mode, from this instance or another.
func TestRetryAfterAnUnknownOutcomeIsNotRateLimited(t *testing.T) {
	ctx := context.Background()
	desk := intake.Key{Client: "desk-a", ID: "k"}
	stores := []struct {
		name string
		new  func(now func() time.Time) intake.Store
	}{
		{"kv", func(now func() time.Time) intake.Store {
			mem := kv.NewMemoryNamespace()
			mem.Now = now
			store := kv.NewStore(mem, now)
			store.ReleaseClaims = true
			return store
		}},
		{"ledger", func(now func() time.Time) intake.Store {
			mem := ledger.NewMemoryStore()
			mem.Now = now
			return mem
		}},
	}
	for _, st := range stores {
		for _, retryOn := range []string{"this instance", "another instance"} {
			t.Run(st.name+", retried on "+retryOn, func(t *testing.T) {
				clock := &fakeClock{now: acceptedAt}
				store := st.new(clock.Now)
				b := newBudget(1) // the order itself takes the budget
				opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Now: clock.Now,
					Limit: b.limit, Gateway: &gatewayDouble{answers: []error{errLost}}}
				first := intake.New(store, opts)
				if _, err := first.Submit(ctx, desk, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
					t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
				}
				retry := first
				if retryOn == "another instance" {
					retry = intake.New(store, opts)
				}
				clock.Advance(time.Second)
				if _, err := retry.Submit(ctx, desk, []byte(validBody), ""); err != nil {
					t.Errorf("the retry = %v, want the receipt", err)
				}
				if got, want := len(b.asks), 1; got != want {
					t.Errorf("the limit was asked %d times (%v), want %d: only the new order counts", got, b.asks, want)
				}
			})
		}
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
