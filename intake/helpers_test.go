package intake_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/order"
)

// validBody is an order every test accepts unless it says otherwise.
const validBody = `{"symbol":"AAPL","side":"buy","quantity":10}`

// acceptedAt is the fixed clock stamped on every receipt.
var acceptedAt = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// errStorage is what a failing store returns. Its text stands for the
// details a real KV error carries and clients must never see.
var errStorage = errors.New("kv: upstream 500 from 10.0.0.7 (secret detail)")

// key is the open Worker's key id, as the reference stores it.
func key(id string) intake.Key { return intake.Key{ID: id} }

// fingerprint is the fingerprint of the order in body.
func fingerprint(t *testing.T, body string) string {
	t.Helper()
	o, err := order.Parse([]byte(body))
	if err != nil {
		t.Fatalf("order.Parse(%s): %v", body, err)
	}
	return o.Fingerprint()
}

// releaseError is one call of an OnReleaseError hook.
type releaseError struct {
	key intake.Key
	err error
}

// harness is a Service over a kv.Store over faulty → hooks → recording →
// Memory, on fixed clocks, with the Worker's defaults.
type harness struct {
	mem    *kv.MemoryNamespace
	now    time.Time // the Memory's clock, for expiring entries
	rec    *kvtest.Recording
	hooks  *kvtest.Hooked // set its hooks before the first call
	faulty *kvtest.Faulty
	store  *kv.Store
	svc    *intake.Service

	mu          sync.Mutex
	releaseErrs []releaseError
}

// newHarness returns a harness whose Service has opts. Zero TTLs take
// config's defaults; Now, unless set, is fixed at acceptedAt; OnReleaseError
// is recorded. The Service runs the kv.Store's own Lifecycle, claims left
// to expire, unless life is given: then ReleaseAfterCommit sets the
// Store's ReleaseClaims, as the Worker does, and ValidateFirst has the
// Service see the Store through validatingFirst.
func newHarness(t *testing.T, opts intake.Options, life ...intake.Lifecycle) *harness {
	t.Helper()
	h := &harness{mem: kv.NewMemoryNamespace(), now: time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)}
	h.mem.Now = func() time.Time { return h.now }
	h.rec = &kvtest.Recording{Namespace: h.mem}
	h.hooks = &kvtest.Hooked{Namespace: h.rec}
	h.faulty = &kvtest.Faulty{Namespace: h.hooks, Err: errStorage}
	if opts.ResultTTL == 0 {
		opts.ResultTTL = config.DefaultResultTTL
	}
	if opts.PendingTTL == 0 {
		opts.PendingTTL = config.DefaultPendingTTL
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return acceptedAt }
	}
	opts.OnReleaseError = h.recordReleaseError
	h.store = kv.NewStore(h.faulty, h.mem.Now)
	var store intake.Store = h.store
	for _, l := range life {
		if l.ReleaseAfterCommit {
			h.store.ReleaseClaims = true
		}
		if l.ValidateFirst {
			store = validatingFirst{h.store}
		}
	}
	h.svc = intake.New(store, opts)
	return h
}

// validatingFirst is a Store that declares ValidateFirst over one that does
// not, such as a kv.Store: the ledger's answer to an invalid body, over a
// Store whose calls the tests can watch.
type validatingFirst struct{ intake.Store }

func (s validatingFirst) Lifecycle() intake.Lifecycle {
	l := s.Store.Lifecycle()
	l.ValidateFirst = true
	return l
}

func (h *harness) recordReleaseError(key intake.Key, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.releaseErrs = append(h.releaseErrs, releaseError{key, err})
}

// submit submits body under the open Worker's key id.
func (h *harness) submit(id, body string) (intake.Outcome, error) {
	return h.svc.Submit(context.Background(), key(id), []byte(body), "")
}

// releaseErrors returns the OnReleaseError calls so far.
func (h *harness) releaseErrors() []releaseError {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]releaseError(nil), h.releaseErrs...)
}

// stored returns the entry under kvKey in the Memory, bypassing the
// wrappers.
func (h *harness) stored(t *testing.T, kvKey string) (kv.Entry, bool) {
	t.Helper()
	e, err := h.mem.Get(context.Background(), kvKey)
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return kv.Entry{}, false
	case err != nil:
		t.Fatalf("Memory.Get(%q): %v", kvKey, err)
	}
	return e, true
}

// put stores e under kvKey in the Memory, as another Worker would.
func (h *harness) put(t *testing.T, kvKey string, e kv.Entry, ttl time.Duration) {
	t.Helper()
	if err := h.mem.Put(context.Background(), kvKey, e, kv.PutOptions{TTL: ttl}); err != nil {
		t.Fatalf("Memory.Put(%q): %v", kvKey, err)
	}
}

// putClaim stores a claim on pending:<kvKey>, as a request in progress on
// another instance (or the reference Worker) does.
func (h *harness) putClaim(t *testing.T, kvKey string) {
	t.Helper()
	h.put(t, "pending:"+kvKey, kv.Entry{Value: "1"}, kv.MinTTL)
}

// wantReceiptStored fails unless receipt is exactly what result:<kvKey>
// holds.
func (h *harness) wantReceiptStored(t *testing.T, kvKey string, receipt []byte) {
	t.Helper()
	got, ok := h.stored(t, "result:"+kvKey)
	if !ok {
		t.Fatalf("result:%s missing; a receipt %s was handed out without being stored", kvKey, receipt)
	}
	if got.Value != string(receipt) {
		t.Fatalf("result:%s = %s, want the handed-out receipt %s", kvKey, got.Value, receipt)
	}
}

// wantNoWrites fails if a Put or Delete reached the Memory after the first
// before writes.
func (h *harness) wantNoWrites(t *testing.T, what string, before int) {
	t.Helper()
	if got := h.rec.Writes()[before:]; len(got) != 0 {
		t.Errorf("%s wrote %v, want no writes", what, got)
	}
}

// storeSpy is an intake.Store that counts the calls of each method that
// reach the Store it wraps. commitErr, if set, is what every Commit returns
// instead of committing.
type storeSpy struct {
	intake.Store
	commitErr error

	mu    sync.Mutex
	calls map[string]int
}

func (s *storeSpy) count(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = make(map[string]int)
	}
	s.calls[method]++
}

// Calls returns how many calls of each method were made.
func (s *storeSpy) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for m, n := range s.calls {
		out[m] = n
	}
	return out
}

func (s *storeSpy) Begin(ctx context.Context, key intake.Key, c intake.Claim) (intake.Record, error) {
	s.count("Begin")
	return s.Store.Begin(ctx, key, c)
}

func (s *storeSpy) Commit(ctx context.Context, key intake.Key, c intake.Claim, r intake.Result) error {
	s.count("Commit")
	if s.commitErr != nil {
		return s.commitErr
	}
	return s.Store.Commit(ctx, key, c, r)
}

func (s *storeSpy) Release(ctx context.Context, key intake.Key, c intake.Claim) error {
	s.count("Release")
	return s.Store.Release(ctx, key, c)
}

func (s *storeSpy) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	s.count("Lookup")
	return s.Store.Lookup(ctx, key)
}

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

// withoutExpiry is r without Expires, which only a lookup over a Store
// that tells it sets (TestLookupTellsExpiry checks it).
func withoutExpiry(r intake.Rejection) intake.Rejection {
	r.Expires = time.Time{}
	return r
}
