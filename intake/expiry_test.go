package intake_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
)

// fakeClock is a clock tests move by hand, safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// stallingStore never answers its first Begin, as a request whose promises
// the runtime dropped never does.
type stallingStore struct {
	intake.Store
	once    sync.Once
	stalled chan struct{}
}

func (s *stallingStore) Begin(ctx context.Context, key intake.Key, c intake.Claim) (intake.Record, error) {
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.stalled)
		select {} // never answers
	}
	return s.Store.Begin(ctx, key, c)
}

// TestInFlightEntryExpiresWithTheLease checks that a request that never
// finishes blocks its key on this instance for the claim lease, not for
// the instance's life.
func TestInFlightEntryExpiresWithTheLease(t *testing.T) {
	clock := &fakeClock{now: acceptedAt}
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	store := &stallingStore{Store: mem, stalled: make(chan struct{})}
	svc := intake.New(store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Now: clock.Now})
	go svc.Submit(context.Background(), key("k"), []byte(validBody), "")
	<-store.stalled

	if _, err := svc.Submit(context.Background(), key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("within the lease = %v, want ErrInProgress", err)
	}
	clock.Advance(config.DefaultPendingTTL)
	if out, err := svc.Submit(context.Background(), key("k"), []byte(validBody), ""); err != nil || out.Replayed {
		t.Fatalf("after the lease = %+v, %v; want a new order", out, err)
	}
}

// TestCachedReceiptNeverOutlivesItsExpiry checks that a receipt the ledger
// would no longer serve is not served from memory either.
func TestCachedReceiptNeverOutlivesItsExpiry(t *testing.T) {
	clock := &fakeClock{now: acceptedAt}
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	svc := intake.New(mem, intake.Options{ResultTTL: 10 * time.Second, PendingTTL: config.DefaultPendingTTL, Now: clock.Now})
	first, err := svc.Submit(context.Background(), key("k"), []byte(validBody), "")
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(11 * time.Second) // past the receipt, within the cache's 60 s
	again, err := svc.Submit(context.Background(), key("k"), []byte(validBody), "")
	if err != nil || again.Replayed || bytes.Equal(again.Receipt, first.Receipt) {
		t.Fatalf("after the receipt expired = %s (replayed %v), %v; want a new receipt, not the expired %s", again.Receipt, again.Replayed, err, first.Receipt)
	}
}

// TestMigrationReplaysAreNotRateLimited checks that a receipt found in the
// Fallback replays even with no budget left, and that a claim there is a
// request in progress, not a free key.
func TestMigrationReplaysAreNotRateLimited(t *testing.T) {
	ctx := context.Background()
	old := kv.NewMemoryNamespace()
	const receipt = `{"orderId":"r1","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`
	if err := old.Put(ctx, "result:k", kv.Entry{Value: receipt}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := old.Put(ctx, "pending:busy", kv.Entry{Value: "1"}, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
		t.Fatal(err)
	}
	b := newBudget(0)
	mem := ledger.NewMemoryStore()
	svc := intake.New(mem, intake.Options{
		ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Fallback: kv.NewStore(old, nil), FallbackUntil: time.Now().Add(time.Hour), Limit: b.limit,
	})
	if out, err := svc.Submit(ctx, key("k"), []byte(validBody), ""); err != nil || !out.Replayed || string(out.Receipt) != receipt {
		t.Fatalf("a migrated receipt with no budget = %+v, %v; want its replay", out, err)
	}
	if _, err := svc.Submit(ctx, key("busy"), []byte(validBody), ""); !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("a key held in the old namespace = %v, want ErrInProgress", err)
	}
	if rec, _ := mem.Lookup(ctx, key("busy")); rec.State != intake.Absent {
		t.Fatalf("the ledger kept a claim on the held key: %v", rec.State)
	}
	if _, err := svc.Submit(ctx, key("new"), []byte(validBody), ""); !errors.Is(err, intake.ErrRateLimited) {
		t.Fatalf("a new key with no budget = %v, want ErrRateLimited", err)
	}
	if rec, _ := mem.Lookup(ctx, key("new")); rec.State != intake.Absent {
		t.Fatalf("the refused key keeps a claim: %v", rec.State)
	}
}

// TestLookupTellsExpiry checks that a lookup says when a stored outcome
// expires where the Store tells it (the ledger), the same from memory as
// from the Store, and never where it does not (KV).
func TestLookupTellsExpiry(t *testing.T) {
	ctx := context.Background()
	const ttl, settleMaxAge = time.Hour, 3 * time.Hour
	later := 5 * time.Second // the lookup comes this long after the order
	tests := []struct {
		name    string
		ledger  bool
		gateway bool
		reject  bool
		// want is the expiry from acceptance; zero: none told.
		want time.Duration
	}{
		{"ledger, stand-in: the receipt's TTL from when it was stored", true, false, false, ttl},
		{"ledger, gateway: past every settle attempt and a TTL", true, true, false, settleMaxAge + ttl},
		{"ledger, a rejection: the same", true, true, true, settleMaxAge + ttl},
		{"KV, stand-in: not told", false, false, false, 0},
		{"KV, gateway: not told", false, true, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{now: acceptedAt}
			var store intake.Store
			if tc.ledger {
				mem := ledger.NewMemoryStore()
				mem.Now = clock.Now
				store = mem
			} else {
				mem := kv.NewMemoryNamespace()
				mem.Now = clock.Now
				store = kv.NewStore(mem, clock.Now)
			}
			opts := intake.Options{ResultTTL: ttl, PendingTTL: config.DefaultPendingTTL, SettleMaxAge: settleMaxAge, Now: clock.Now}
			if tc.gateway {
				g := &scriptedGateway{clock: clock}
				if tc.reject {
					g.answer(&intake.Rejection{Reason: "halted"})
				}
				opts.Gateway = g
			}
			placing := intake.New(store, opts)
			if _, err := placing.Submit(ctx, key("k"), []byte(validBody), ""); err != nil && !tc.reject {
				t.Fatal(err)
			}
			clock.Advance(later)
			var want time.Time
			if tc.want != 0 {
				want = acceptedAt.Add(tc.want)
			}
			// The placing instance answers from memory; another asks the Store.
			for name, svc := range map[string]*intake.Service{"from memory": placing, "from the Store": intake.New(store, opts)} {
				out, err := svc.Lookup(ctx, key("k"))
				got := out.Expires
				var rejection *intake.Rejection
				if errors.As(err, &rejection) {
					got = rejection.Expires
				} else if err != nil {
					t.Fatalf("%s: Lookup: %v", name, err)
				}
				if !got.Equal(want) {
					t.Errorf("%s: expires %v, want %v", name, got, want)
				}
			}
			// A replay of a submission does not say: only a lookup does.
			if out, _ := placing.Submit(ctx, key("k"), []byte(validBody), ""); !out.Expires.IsZero() {
				t.Errorf("a replayed submission says it expires %v, want nothing", out.Expires)
			}
		})
	}
}

// TestPolicy checks that Policy says what the Service runs with: its
// options, the default SettleMaxAge, whether it settles, and whether its
// Store tells an outcome's expiry, and how long its reads may lag.
func TestPolicy(t *testing.T) {
	base := intake.Options{ResultTTL: time.Hour, PendingTTL: 2 * time.Minute, Wait: 300 * time.Millisecond}
	withGateway := base
	withGateway.Gateway, withGateway.SettleMaxAge = &scriptedGateway{clock: &fakeClock{}}, 5*time.Hour
	withSchedule := withGateway
	withSchedule.Schedule = func(context.Context, intake.Key, time.Time) error { return nil }
	tests := []struct {
		name  string
		store intake.Store
		opts  intake.Options
		want  intake.Policy
	}{
		{"KV, stand-in", kv.NewStore(kv.NewMemoryNamespace(), nil), base,
			intake.Policy{ResultTTL: time.Hour, PendingTTL: 2 * time.Minute, Wait: 300 * time.Millisecond, SettleMaxAge: intake.DefaultSettleMaxAge, ReadsLag: kv.ReadsLag}},
		{"the ledger, a gateway", ledger.NewMemoryStore(), withGateway,
			intake.Policy{ResultTTL: time.Hour, PendingTTL: 2 * time.Minute, Wait: 300 * time.Millisecond, Settles: true, SettleMaxAge: 5 * time.Hour, TellsExpiry: true, SettlerRuns: true}},
		{"KV, a gateway, no settle queue", kv.NewStore(kv.NewMemoryNamespace(), nil), withGateway,
			intake.Policy{ResultTTL: time.Hour, PendingTTL: 2 * time.Minute, Wait: 300 * time.Millisecond, Settles: true, SettleMaxAge: 5 * time.Hour, ReadsLag: kv.ReadsLag}},
		{"KV, a gateway, a settle queue", kv.NewStore(kv.NewMemoryNamespace(), nil), withSchedule,
			intake.Policy{ResultTTL: time.Hour, PendingTTL: 2 * time.Minute, Wait: 300 * time.Millisecond, Settles: true, SettleMaxAge: 5 * time.Hour, SettlerRuns: true, ReadsLag: kv.ReadsLag}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := intake.New(tc.store, tc.opts).Policy(); got != tc.want {
				t.Errorf("Policy() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
