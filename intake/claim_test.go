package intake_test

// The claim over KV, through the Service: its lease as KV's TTL, its
// expiry, and its release after the response.

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/order"
)

// TestKVLifecycleClaimTTL checks that PendingTTL is the claim's TTL in KV:
// one under KV's minimum is refused by KV and answered as storage being
// unavailable, with nothing stored; one KV accepts is what RetryAfter says.
func TestKVLifecycleClaimTTL(t *testing.T) {
	tests := []struct {
		name       string
		pendingTTL time.Duration
		wantErr    error
		wantTTL    time.Duration // the TTL the claim was put with
	}{
		{"default is KV's minimum", config.DefaultPendingTTL, nil, kv.MinTTL},
		{"ninety seconds is accepted", 90 * time.Second, nil, 90 * time.Second},
		{"reference's thirty seconds is refused", 30 * time.Second, intake.ErrStorageUnavailable, 30 * time.Second},
		{"one second under the minimum is refused", kv.MinTTL - time.Second, intake.ErrStorageUnavailable, kv.MinTTL - time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, intake.Options{PendingTTL: tc.pendingTTL})
			out, err := h.submit("k", validBody)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Submit error = %v, want %v", err, tc.wantErr)
			}
			claims := h.rec.Filter(kvtest.OpPut, "pending:k")
			if len(claims) != 1 {
				t.Fatalf("claim Puts = %v, want exactly one", claims)
			}
			c := claims[0]
			if c.Options.TTL != tc.wantTTL {
				t.Errorf("claim TTL = %v, want %v", c.Options.TTL, tc.wantTTL)
			}
			if tc.wantErr != nil {
				if !errors.Is(c.Err, kv.ErrInvalid) {
					t.Errorf("Memory claim Put error = %v, want kv.ErrInvalid as KV would answer", c.Err)
				}
				if out.Receipt != nil || h.mem.Len() != 0 {
					t.Errorf("Receipt = %s, Memory.Len() = %d; want no receipt and nothing stored", out.Receipt, h.mem.Len())
				}
				return
			}
			if c.Err != nil {
				t.Errorf("Memory refused the claim Put: %v", c.Err)
			}
			if c.Options.TTL < kv.MinTTL {
				t.Errorf("claim TTL %v is under KV's minimum %v", c.Options.TTL, kv.MinTTL)
			}
			if got, want := h.svc.RetryAfter(), tc.wantTTL; got != want {
				t.Errorf("RetryAfter() = %v, want the claim TTL %v", got, want)
			}
			h.wantReceiptStored(t, "k", out.Receipt)
		})
	}
}

// TestKVLifecycleClaimExpires shows the claim really carries its TTL: a request
// that died after claiming blocks its key for PendingTTL and no longer.
func TestKVLifecycleClaimExpires(t *testing.T) {
	// The receipt is deleted below, from KV only; the claim stays.
	h := newHarness(t, intake.Options{CachedReceipts: -1})
	if _, err := h.submit("k", validBody); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if err := h.mem.Delete(context.Background(), "result:k"); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(kv.MinTTL - time.Second)
	if _, err := h.submit("k", validBody); !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("Submit 59s after the claim: error = %v, want ErrInProgress", err)
	}
	h.now = h.now.Add(time.Second)
	if out, err := h.submit("k", validBody); err != nil || out.Replayed {
		t.Fatalf("Submit 60s after the claim = replayed %v, %v; want a new order", out.Replayed, err)
	}
}

// TestKVLifecycleReleasesAfterCommit checks the reference's check, claim,
// write, release, with the write and the release after the response: the
// receipt is committed through Options.Defer, with the request's context,
// and with ReleaseAfterCommit, which kv.Store declares under ReleaseClaims,
// the claim is deleted in the same task; every other release happens
// before Submit returns; and without it the claim is left to expire.
func TestKVLifecycleReleasesAfterCommit(t *testing.T) {
	type deferred struct {
		ctx  context.Context
		task func(context.Context)
	}
	var tasks []deferred
	deferTask := func(ctx context.Context, task func(context.Context)) {
		tasks = append(tasks, deferred{ctx, task})
	}
	// With a gateway: the stand-in commits before it answers (below).
	h := newHarness(t, intake.Options{Defer: deferTask, Gateway: &gatewayDouble{}}, intake.Lifecycle{ReleaseAfterCommit: true})
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "request")

	t.Run("success commits and releases the claim after the response", func(t *testing.T) {
		out, err := h.svc.Submit(ctx, key("ok"), []byte(validBody), "")
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if got, want := len(tasks), 1; got != want {
			t.Fatalf("deferred tasks = %d, want %d", got, want)
		}
		if got := tasks[0].ctx.Value(ctxKey{}); got != "request" {
			t.Errorf("Defer ctx value = %v, want the request's context", got)
		}
		if _, ok := h.stored(t, "result:ok"); ok {
			t.Errorf("result:ok stored before the deferred task ran; want the commit after the response")
		}
		if _, ok := h.stored(t, "pending:ok"); !ok {
			t.Fatalf("pending:ok gone before the deferred task ran; want the claim to hold the key until the commit")
		}
		if got, err := h.svc.Lookup(ctx, key("ok")); !errors.Is(err, intake.ErrInProgress) {
			t.Errorf("Lookup before the commit = %s, %v; want ErrInProgress, never a receipt that is not stored", got.Receipt, err)
		}
		if got, err := h.svc.Submit(ctx, key("ok"), []byte(validBody), ""); err != nil || !got.Replayed || !bytes.Equal(got.Receipt, out.Receipt) {
			t.Errorf("retry before the commit = %s replayed %v, %v; want the answer replayed from memory", got.Receipt, got.Replayed, err)
		}
		h.faulty.Set(kvtest.Fault{Op: kvtest.OpDelete, Prefix: "pending:", Nth: 1}, kvtest.Fault{Op: kvtest.OpDelete, Prefix: "pending:", Nth: 2})
		tasks[0].task(context.Background())
		h.faulty.Set()
		h.wantReceiptStored(t, "ok", out.Receipt)
		if got, err := h.svc.Lookup(ctx, key("ok")); err != nil || !bytes.Equal(got.Receipt, out.Receipt) {
			t.Errorf("Lookup after the commit = %s, %v; want the receipt", got.Receipt, err)
		}
		if got := h.releaseErrors(); len(got) != 1 || !errors.Is(got[0].err, errStorage) {
			t.Errorf("OnReleaseError calls = %v, want 1 with the storage error", got)
		}
		if got, want := len(tasks), 1; got != want {
			t.Errorf("deferred tasks = %d, want %d: the release runs in the commit's task", got, want)
		}

		tasks = nil
		out, err = h.svc.Submit(ctx, key("ok2"), []byte(validBody), "")
		if err != nil || len(tasks) != 1 {
			t.Fatalf("Submit = %v with %d deferred tasks, want a receipt and 1", err, len(tasks))
		}
		tasks[0].task(context.Background())
		h.wantReceiptStored(t, "ok2", out.Receipt)
		if _, ok := h.stored(t, "pending:ok2"); ok {
			t.Errorf("pending:ok2 still stored after the deferred task ran")
		}
	})
	t.Run("replay defers nothing", func(t *testing.T) {
		tasks = nil
		if _, err := h.svc.Submit(ctx, key("ok"), []byte(validBody), ""); err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if len(tasks) != 0 {
			t.Errorf("deferred tasks = %d, want 0", len(tasks))
		}
	})
	t.Run("invalid order releases inline", func(t *testing.T) {
		tasks = nil
		if _, err := h.svc.Submit(ctx, key("bad"), []byte(`{}`), ""); !errors.Is(err, order.ErrInvalid) {
			t.Fatalf("Submit error = %v, want order.ErrInvalid", err)
		}
		if len(tasks) != 0 {
			t.Errorf("deferred tasks = %d, want 0", len(tasks))
		}
		if _, ok := h.stored(t, "pending:bad"); ok {
			t.Errorf("pending:bad still stored; want it released before Submit returns")
		}
	})
	t.Run("the stand-in commits before it answers, and releases after", func(t *testing.T) {
		tasks = nil
		h := newHarness(t, intake.Options{Defer: deferTask}, intake.Lifecycle{ReleaseAfterCommit: true})
		out, err := h.svc.Submit(ctx, key("s"), []byte(validBody), "")
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		h.wantReceiptStored(t, "s", out.Receipt)
		if len(tasks) != 1 {
			t.Fatalf("deferred tasks = %d, want 1 (the release)", len(tasks))
		}
		tasks[0].task(context.Background())
		if _, ok := h.stored(t, "pending:s"); ok {
			t.Errorf("pending:s still stored after the deferred task ran")
		}
	})
	t.Run("without ReleaseAfterCommit the claim is left to expire", func(t *testing.T) {
		tasks = nil
		h := newHarness(t, intake.Options{Defer: deferTask, Gateway: &gatewayDouble{}})
		out, err := h.svc.Submit(ctx, key("kept"), []byte(validBody), "")
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if len(tasks) != 1 {
			t.Fatalf("deferred tasks = %d, want 1 (the commit)", len(tasks))
		}
		tasks[0].task(context.Background())
		h.wantReceiptStored(t, "kept", out.Receipt)
		if len(tasks) != 1 {
			t.Errorf("deferred tasks = %d, want only the commit", len(tasks))
		}
		if _, ok := h.stored(t, "pending:kept"); !ok {
			t.Errorf("pending:kept gone, want it left to expire")
		}
	})
}

// TestARetryAfterAFailedClaimWriteKeepsItsTime: a claim write that failed
// may have landed, and KV leaves such a claim open with its order id and
// time; a retry in the same instance whose read misses it (KV lags) keeps
// that time, from the instance's memory, instead of minting another
// acceptedAt than the one the settler would store.
func TestARetryAfterAFailedClaimWriteKeepsItsTime(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	mem := kv.NewMemoryNamespace()
	mem.Now = clock.Now
	lag := &laggingNamespace{Namespace: mem}
	faulty := &kvtest.Faulty{Namespace: lag, Err: errStorage}
	g := &scriptedGateway{clock: clock}
	svc := intake.New(kv.NewStore(faulty, clock.Now), intake.Options{ResultTTL: config.DefaultResultTTL,
		PendingTTL: config.DefaultPendingTTL, Gateway: g, Now: clock.Now})
	// Every read of the key misses what is written to it from now on.
	lag.freeze("result:"+deskKey.String(), "pending:"+deskKey.String())
	faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "pending:", Nth: 1, Applied: true})
	if _, err := svc.Submit(ctx, deskKey, []byte(validBody), ""); !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("Submit with its claim write failing = %v, want ErrStorageUnavailable", err)
	}
	faulty.Set()
	clock.Advance(time.Second)
	out, err := svc.Submit(ctx, deskKey, []byte(validBody), "")
	if err != nil {
		t.Fatalf("the retry = %v, want its receipt", err)
	}
	if got := order.ReceiptAcceptedAt(out.Receipt); !got.Equal(acceptedAt) {
		t.Errorf("the retry's receipt was accepted at %v, want %v: the time of the claim KV holds", got, acceptedAt)
	}
}
