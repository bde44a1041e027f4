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
	"github.com/edge-orders/edge-orders/ledger"
)

// budget is a rate limit of n new orders per caller, recording who asked.
type budget struct {
	mu   sync.Mutex
	left map[string]int
	n    int
	asks []string
}

func newBudget(n int) *budget { return &budget{left: map[string]int{}, n: n} }

func (b *budget) limit(_ context.Context, who string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asks = append(b.asks, who)
	if _, ok := b.left[who]; !ok {
		b.left[who] = b.n
	}
	if b.left[who] == 0 {
		return false, nil
	}
	b.left[who]--
	return true, nil
}

// TestRateLimitKV checks, over KV, that the budget counts new orders only,
// per client or per caller address, and that a refused order writes
// nothing.
func TestRateLimitKV(t *testing.T) {
	b := newBudget(1)
	h := newHarness(t, intake.Options{Limit: b.limit})
	ctx := context.Background()
	const addr = "198.51.100.7"

	if _, err := h.svc.Submit(ctx, key("first"), []byte(validBody), addr); err != nil {
		t.Fatalf("first order: %v", err)
	}
	t.Run("a replay does not count", func(t *testing.T) {
		out, err := h.svc.Submit(ctx, key("first"), []byte(validBody), addr)
		if err != nil || !out.Replayed {
			t.Fatalf("replay = %+v, %v", out, err)
		}
		if _, err := h.svc.Lookup(ctx, key("first")); err != nil {
			t.Fatalf("lookup: %v", err)
		}
	})
	t.Run("over the budget is ErrRateLimited and writes nothing", func(t *testing.T) {
		before := len(h.rec.Writes())
		if _, err := h.svc.Submit(ctx, key("second"), []byte(validBody), addr); !errors.Is(err, intake.ErrRateLimited) {
			t.Fatalf("second order = %v, want ErrRateLimited", err)
		}
		h.wantNoWrites(t, "a refused order", before)
	})
	t.Run("another address and another client have budgets of their own", func(t *testing.T) {
		if _, err := h.svc.Submit(ctx, key("third"), []byte(validBody), "203.0.113.9"); err != nil {
			t.Fatalf("another address: %v", err)
		}
		// A client's key counts against the client, whatever its address.
		if _, err := h.svc.Submit(ctx, intake.Key{Client: "desk-a", ID: "fourth"}, []byte(validBody), addr); err != nil {
			t.Fatalf("a client: %v", err)
		}
	})
	want := []string{"addr:" + addr, "addr:" + addr, "addr:203.0.113.9", "desk-a"}
	if len(b.asks) != len(want) {
		t.Fatalf("the limit was asked for %v, want %v", b.asks, want)
	}
	for i := range want {
		if b.asks[i] != want[i] {
			t.Fatalf("the limit was asked for %v, want %v", b.asks, want)
		}
	}
}

// TestRateLimitLedger checks, over the ledger, that a refused order leaves
// no claim behind: the key is free once the budget allows again.
func TestRateLimitLedger(t *testing.T) {
	b := newBudget(0)
	store := ledger.NewMemoryStore()
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Limit: b.limit}
	svc := intake.New(store, opts)
	if _, err := svc.Submit(context.Background(), key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrRateLimited) {
		t.Fatalf("Submit = %v, want ErrRateLimited", err)
	}
	if rec, err := store.Lookup(context.Background(), key("k")); err != nil || rec.State != intake.Absent {
		t.Fatalf("after the refusal the key is %v (%v), want Absent", rec.State, err)
	}
	b.n, b.left = 1, map[string]int{}
	if _, err := svc.Submit(context.Background(), key("k"), []byte(validBody), ""); err != nil {
		t.Fatalf("with budget again: %v", err)
	}
}

// TestARefusalIsAnsweredOnlyOnceItsClaimIsGone: over the ledger the rate
// limit is asked right after the claim, which the refusal then releases.
// If that release fails, the claim stays and its settler places the order
// once its lease ends, so the client must not be told 429, which clients
// never retry, but 503: a refusal never leads to a placement.
func TestARefusalIsAnsweredOnlyOnceItsClaimIsGone(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		releaseFail bool
		want        error
		wantRows    int
	}{
		{"released: 429, and nothing stays", false, intake.ErrRateLimited, 0},
		{"not released: 503, never 429", true, intake.ErrStorageUnavailable, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{now: acceptedAt}
			mem := ledger.NewMemoryStore()
			mem.Now = clock.Now
			mem.RoundTrip = func(_ context.Context, method string, apply func()) error {
				if tc.releaseFail && method == "release" {
					return errStorage
				}
				apply()
				return nil
			}
			svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
				Gateway: &gatewayDouble{}, Now: clock.Now, Limit: newBudget(0).limit})
			_, err := svc.Submit(ctx, intake.Key{Client: "desk-a", ID: "k"}, []byte(validBody), "")
			if !errors.Is(err, tc.want) || (tc.releaseFail && errors.Is(err, intake.ErrRateLimited)) {
				t.Fatalf("Submit = %v, want %v", err, tc.want)
			}
			if n := mem.Rows(); n != tc.wantRows {
				t.Errorf("rows = %d, want %d", n, tc.wantRows)
			}
		})
	}
}

// slowLimitOverTheLedger is a Service over the ledger whose rate limit
// answers admit once its claim's lease has ended, after the object's
// alarm ran the settler on every key due meanwhile; and the gateway both
// call.
func slowLimitOverTheLedger(t *testing.T, admit bool) (*intake.Service, *gatewayDouble) {
	clock := &fakeClock{now: acceptedAt}
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	gateway := &gatewayDouble{}
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Now: clock.Now, Gateway: gateway}
	settler := intake.New(mem, opts)
	opts.Limit = func(ctx context.Context, who string) (bool, error) {
		clock.Advance(config.DefaultPendingTTL + time.Second) // a slow answer
		for _, k := range mem.DueKeys(10) {                   // the object's alarm
			if _, err := settler.Settle(ctx, k); err != nil {
				t.Errorf("Settle: %v", err)
			}
		}
		return admit, nil
	}
	return intake.New(mem, opts), gateway
}

// TestARefusalThatOutlastedItsClaimIsNotTold: over the ledger the claim
// holds the key while the rate limit is asked. If the answer comes once
// the claim's lease has ended, the object's alarm may have taken the key
// over and placed the order meanwhile: the client is told 503, never 429,
// and its retry finds the order (found by a review).
func TestARefusalThatOutlastedItsClaimIsNotTold(t *testing.T) {
	svc, gateway := slowLimitOverTheLedger(t, false)
	_, err := svc.Submit(context.Background(), key("k"), []byte(validBody), "")
	if !errors.Is(err, intake.ErrStorageUnavailable) || errors.Is(err, intake.ErrRateLimited) {
		t.Fatalf("Submit whose refusal outlasted its claim = %v, want ErrStorageUnavailable (the settler placed %d)", err, len(gateway.placements()))
	}
	if len(gateway.placements()) != 1 {
		t.Fatalf("the settler placed %d orders, want the one its alarm found", len(gateway.placements()))
	}
}

// TestASlowRefusalOverKVIsToldAsOne: KV asks the limit before it writes
// the claim, so a refusal, however slow, left nothing that could place
// the order: it is 429 (found by a review).
func TestASlowRefusalOverKVIsToldAsOne(t *testing.T) {
	clock := &fakeClock{now: acceptedAt}
	ns := kv.NewMemoryNamespace()
	ns.Now = clock.Now
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Now: clock.Now, Gateway: &gatewayDouble{},
		Limit: func(ctx context.Context, who string) (bool, error) {
			clock.Advance(config.DefaultPendingTTL + time.Second)
			return false, nil
		}}
	if _, err := intake.New(kv.NewStore(ns, clock.Now), opts).Submit(context.Background(), key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrRateLimited) {
		t.Fatalf("a slow refusal over KV = %v, want ErrRateLimited", err)
	}
}

// TestAClaimWhoseAdmissionOutlastedItsLeaseHoldsTheKeyBeforeItsCall: the
// same slow answer, admitting the order: the client's claim may have lost
// the key meanwhile, and the alarm's settler placed the order. The client
// holds the key again before it calls the gateway, or finds it another's:
// it never calls while the settler may, and its retry replays the
// settler's receipt (found by the simulator's stalled calls).
func TestAClaimWhoseAdmissionOutlastedItsLeaseHoldsTheKeyBeforeItsCall(t *testing.T) {
	ctx := context.Background()
	svc, gateway := slowLimitOverTheLedger(t, true)
	if _, err := svc.Submit(ctx, key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("Submit whose admission outlasted its claim = %v, want ErrInProgress", err)
	}
	if n := len(gateway.placements()); n != 1 {
		t.Fatalf("the gateway was called %d times, want once, by the settler", n)
	}
	if out, err := svc.Submit(ctx, key("k"), []byte(validBody), ""); err != nil || !out.Replayed {
		t.Fatalf("the retry = %+v, %v; want the settler's receipt replayed", out, err)
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

// TestARetryAfterABeginThatWroteNothingAsksTheLimit: a claim whose Begin
// failed before it wrote anything (its read of KV failed) never landed,
// so its retry is a new order, which asks the limit, not one taken over
// from this isolate's memory of a claim that may have reached the OMS
// (found by a review: a client past its budget placed an order).
func TestARetryAfterABeginThatWroteNothingAsksTheLimit(t *testing.T) {
	g := &idRecorder{answer: func(int, intake.Placement) error { return nil }}
	h := newHarness(t, intake.Options{Gateway: g, Limit: newBudget(0).limit})
	h.faulty.Set(kvtest.Fault{Op: kvtest.OpGet, Prefix: "result:", Nth: 1})
	if _, err := h.submit("k", validBody); !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("Submit whose read failed = %v, want ErrStorageUnavailable", err)
	}
	h.faulty.Set()
	if out, err := h.submit("k", validBody); !errors.Is(err, intake.ErrRateLimited) {
		t.Fatalf("the retry past its budget = %s, %v (gateway calls %d); want ErrRateLimited", out.Receipt, err, len(g.orderIDs()))
	}
}
