package intake_test

import (
	"bytes"
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
	"github.com/edge-orders/edge-orders/order"
)

// TestKVLifecycleLayout checks a stored order in the reference's layout:
// result:<key> holds exactly the receipt, its metadata exactly the
// fingerprint, and the claim under pending:<key>, the reference's "1" with
// the fingerprint beside it, is left to expire with its lease: no delete.
func TestKVLifecycleLayout(t *testing.T) {
	h := newHarness(t, intake.Options{})
	out, err := h.submit("k", validBody)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := h.stored(t, "result:k")
	if !ok {
		t.Fatalf("result:k missing")
	}
	if got, want := string(e.Metadata), `{"fingerprint":"`+fingerprint(t, validBody)+`"}`; got != want {
		t.Errorf("metadata = %s, want %s", got, want)
	}
	if e.Value != string(out.Receipt) {
		t.Errorf("result:k = %s, want exactly the receipt %s", e.Value, out.Receipt)
	}
	// The body is parsed before the claim is written, so the claim names
	// its order too, in metadata the reference never reads.
	claims := h.rec.Filter(kvtest.OpPut, "pending:k")
	if len(claims) != 1 || claims[0].Entry.Value != "1" || string(claims[0].Entry.Metadata) != string(e.Metadata) {
		t.Errorf("claim Puts = %+v, want one of the reference's marker \"1\" with only the fingerprint in metadata", claims)
	}
	if _, ok := h.stored(t, "pending:k"); !ok {
		t.Errorf("pending:k gone, want the claim left to expire")
	}
	if got := h.rec.Count(kvtest.OpDelete, ""); got != 0 {
		t.Errorf("Deletes = %d, want 0", got)
	}
}

// TestKVLifecycleMetadata checks the fingerprint's round trip through a
// receipt's metadata, and that metadata that is not ours means no
// fingerprint.
func TestKVLifecycleMetadata(t *testing.T) {
	ctx := context.Background()
	t.Run("fingerprints round trip", func(t *testing.T) {
		for _, fp := range []string{
			fingerprint(t, validBody),
			`a"b\c`,
			"é\u2028<&>",
		} {
			mem := kv.NewMemoryNamespace()
			s := kv.NewStore(mem, nil)
			r := intake.Result{Body: []byte(`{"orderId":"x"}`), Fingerprint: fp, TTL: time.Hour}
			if err := s.Commit(ctx, key("k"), intake.Claim{}, r); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			rec, err := s.Lookup(ctx, key("k"))
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if rec.State != intake.Stored || rec.Fingerprint != fp || !bytes.Equal(rec.Body, r.Body) {
				t.Errorf("Lookup after storing fingerprint %q = %+v, want Stored with the fingerprint and receipt", fp, rec)
			}
		}
	})
	t.Run("an empty fingerprint is stored without metadata", func(t *testing.T) {
		mem := kv.NewMemoryNamespace()
		s := kv.NewStore(mem, nil)
		if err := s.Commit(ctx, key("k"), intake.Claim{}, intake.Result{Body: []byte(`{}`), TTL: time.Hour}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		e, err := mem.Get(ctx, "result:k")
		if err != nil || e.Metadata != nil {
			t.Errorf("result:k metadata = %s, %v; want none, as the reference stores receipts", e.Metadata, err)
		}
	})

	tests := []struct {
		name     string
		metadata string // "" stores none
		want     string
	}{
		{"no metadata is no fingerprint", "", ""},
		{"our metadata is the fingerprint", `{"fingerprint":"abc"}`, "abc"},
		{"spacing and escapes are read", `{ "fingerprint" : "a\u0062c" }`, "abc"},
		{"other members are ignored", `{"by":"other","fingerprint":"abc"}`, "abc"},
		{"a number is no fingerprint", `{"fingerprint":1}`, ""},
		{"null is no fingerprint", `{"fingerprint":null}`, ""},
		{"another member is no fingerprint", `{"fp":"abc"}`, ""},
		{"a bare string is no fingerprint", `"abc"`, ""},
		{"an array is no fingerprint", `["fingerprint","abc"]`, ""},
		{"an empty object is no fingerprint", `{}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemoryNamespace()
			e := kv.Entry{Value: `{"orderId":"r1"}`}
			if tc.metadata != "" {
				e.Metadata = []byte(tc.metadata)
			}
			if err := mem.Put(ctx, "result:k", e, kv.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			rec, err := kv.NewStore(mem, nil).Lookup(ctx, key("k"))
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if rec.State != intake.Stored || rec.Fingerprint != tc.want || string(rec.Body) != e.Value {
				t.Errorf("Lookup = %+v, want Stored %s with fingerprint %q", rec, e.Value, tc.want)
			}
		})
	}
}

// TestKVLifecycleStates checks what Begin and Lookup find in each state, and
// that Begin alone writes, and only when it claims.
func TestKVLifecycleStates(t *testing.T) {
	ctx := context.Background()
	claim := intake.Claim{Token: "t1", Lease: 90 * time.Second}
	tests := []struct {
		name      string
		setup     func(t *testing.T, h *harness)
		wantBegin intake.State
		wantFound intake.State // what Lookup finds, before Begin
	}{
		{"nothing stored is claimed", func(*testing.T, *harness) {}, intake.Claimed, intake.Absent},
		{"a claim holds the key", func(t *testing.T, h *harness) { h.putClaim(t, "k") }, intake.Held, intake.Held},
		{"a receipt is stored", func(t *testing.T, h *harness) {
			h.put(t, "result:k", kv.Entry{Value: "r", Metadata: []byte(`{"fingerprint":"f"}`)}, time.Hour)
		}, intake.Stored, intake.Stored},
		{"a receipt wins over a claim", func(t *testing.T, h *harness) {
			h.putClaim(t, "k")
			h.put(t, "result:k", kv.Entry{Value: "r", Metadata: []byte(`{"fingerprint":"f"}`)}, time.Hour)
		}, intake.Stored, intake.Stored},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, intake.Options{})
			tc.setup(t, h)
			found, err := h.store.Lookup(ctx, key("k"))
			if err != nil || found.State != tc.wantFound {
				t.Fatalf("Lookup = %+v, %v; want state %v", found, err, tc.wantFound)
			}
			h.wantNoWrites(t, "Lookup", 0)
			rec, err := h.store.Begin(ctx, key("k"), claim)
			if err != nil || rec.State != tc.wantBegin {
				t.Fatalf("Begin = %+v, %v; want state %v", rec, err, tc.wantBegin)
			}
			if tc.wantBegin == intake.Stored && (string(rec.Body) != "r" || rec.Fingerprint != "f") {
				t.Errorf("Begin = %+v, want the stored receipt r with fingerprint f", rec)
			}
			puts := h.rec.Filter(kvtest.OpPut, "")
			if tc.wantBegin != intake.Claimed {
				if len(h.rec.Writes()) != 0 {
					t.Errorf("Begin wrote %v, want nothing when it does not claim", h.rec.Writes())
				}
				return
			}
			if len(puts) != 1 || puts[0].Key != "pending:k" || puts[0].Options.TTL != claim.Lease {
				t.Fatalf("Begin wrote %+v, want one claim on pending:k with the lease %v as TTL", puts, claim.Lease)
			}
			if err := h.store.Release(ctx, key("k"), claim); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if _, ok := h.stored(t, "pending:k"); ok {
				t.Errorf("pending:k still stored after Release")
			}
			if err := h.store.Release(ctx, key("k"), claim); err != nil {
				t.Errorf("second Release: %v, want releasing a free key to succeed", err)
			}
		})
	}
}

// TestKVLifecycleLookupPanic checks that a panic in the claim lookup, which
// runs on its own goroutine, reaches the caller's goroutine, where the
// HTTP layer recovers it, instead of killing the instance.
func TestKVLifecycleLookupPanic(t *testing.T) {
	h := newHarness(t, intake.Options{})
	h.hooks.Before = func(op kvtest.Op, k string) error {
		if strings.HasPrefix(k, "pending:") {
			panic("kv: binding exploded")
		}
		return nil
	}
	defer func() {
		if got := recover(); got != "kv: binding exploded" {
			t.Errorf("recovered %v, want the binding's panic", got)
		}
	}()
	h.store.Lookup(context.Background(), key("k"))
	t.Errorf("Lookup returned, want it to panic")
}

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
// write, release: with ReleaseAfterCommit, which kv.Store declares under
// ReleaseClaims, the claim is deleted through Options.Defer, with the
// request's context, after the response; every other release happens
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
	h := newHarness(t, intake.Options{Defer: deferTask}, intake.Lifecycle{ReleaseAfterCommit: true})
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "request")

	t.Run("success releases the claim after the response", func(t *testing.T) {
		out, err := h.svc.Submit(ctx, key("ok"), []byte(validBody), "")
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		h.wantReceiptStored(t, "ok", out.Receipt)
		if got, want := len(tasks), 1; got != want {
			t.Fatalf("deferred tasks = %d, want %d", got, want)
		}
		if got := tasks[0].ctx.Value(ctxKey{}); got != "request" {
			t.Errorf("Defer ctx value = %v, want the request's context", got)
		}
		if _, ok := h.stored(t, "pending:ok"); !ok {
			t.Fatalf("pending:ok gone before the deferred task ran; want the release deferred, not inline")
		}
		h.faulty.Set(kvtest.Fault{Op: kvtest.OpDelete, Prefix: "pending:", Nth: 1}, kvtest.Fault{Op: kvtest.OpDelete, Prefix: "pending:", Nth: 2})
		tasks[0].task(context.Background())
		if got := h.releaseErrors(); len(got) != 1 || !errors.Is(got[0].err, errStorage) {
			t.Errorf("OnReleaseError calls = %v, want 1 with the storage error", got)
		}
		h.faulty.Set()
		tasks[0].task(context.Background())
		if _, ok := h.stored(t, "pending:ok"); ok {
			t.Errorf("pending:ok still stored after the deferred task ran")
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
	t.Run("without ReleaseAfterCommit the claim is left to expire", func(t *testing.T) {
		tasks = nil
		h := newHarness(t, intake.Options{Defer: deferTask})
		if _, err := h.svc.Submit(ctx, key("kept"), []byte(validBody), ""); err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if len(tasks) != 0 {
			t.Errorf("deferred tasks = %d, want 0", len(tasks))
		}
		if _, ok := h.stored(t, "pending:kept"); !ok {
			t.Errorf("pending:kept gone, want it left to expire")
		}
	})
}

// TestKVLifecycleReplaysReferenceReceipt checks that receipts the TypeScript
// Worker stored in a shared namespace (a bare JSON value, no metadata) are
// replayed as they are, byte for byte.
func TestKVLifecycleReplaysReferenceReceipt(t *testing.T) {
	tests := []struct {
		name        string
		stored      string
		wantOrderID string
	}{
		{"reference receipt", `{"orderId":"0b7e2c57-8f53-4c39-9f5e-0d2d3c0b2a61","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`, "0b7e2c57-8f53-4c39-9f5e-0d2d3c0b2a61"},
		{"spacing and escapes kept", "{ \"orderId\" : \"x\",\n \"symbol\":\"\\u00e9<&>\u2028\" }", "x"},
		{"any JSON value", `[1,2.50,"three"]`, ""},
		{"not JSON at all", `<html>`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, intake.Options{})
			h.put(t, "result:ts", kv.Entry{Value: tc.stored}, 24*time.Hour)
			out, err := h.submit("ts", validBody)
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if got, want := string(out.Receipt), tc.stored; got != want || !out.Replayed {
				t.Errorf("Submit = %q replayed %v, want %q replayed true", got, out.Replayed, want)
			}
			if got, want := out.OrderID, tc.wantOrderID; got != want {
				t.Errorf("OrderID = %q, want %q", got, want)
			}
			h.wantNoWrites(t, "replay", 0)
		})
	}
}

// TestKVLifecycleReferenceReceiptIgnoresBody checks that receipts stored without
// a fingerprint, as the TypeScript Worker stores them, replay as they did.
func TestKVLifecycleReferenceReceiptIgnoresBody(t *testing.T) {
	h := newHarness(t, intake.Options{})
	stored := `{"orderId":"r1","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`
	h.put(t, "result:k", kv.Entry{Value: stored}, 0)
	for _, body := range []string{validBody, `{"symbol":"MSFT","side":"sell","quantity":1}`, `not json`} {
		out, err := h.submit("k", body)
		if err != nil || !out.Replayed || string(out.Receipt) != stored || out.OrderID != "r1" {
			t.Errorf("body %s: got %s replayed %v id %q, %v; want the stored receipt", body, out.Receipt, out.Replayed, out.OrderID, err)
		}
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
