package intake_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

// validBody is an order every test accepts unless it says otherwise.
const validBody = `{"symbol":"AAPL","side":"buy","quantity":10}`

// acceptedAt is the fixed clock stamped on every receipt.
var acceptedAt = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// errStorage is what a failing store returns. Its text stands for the
// details a real KV error carries and clients must never see.
var errStorage = errors.New("kv: upstream 500 from 10.0.0.7 (secret detail)")

// op names a Store method.
type op int

const (
	opGet op = iota
	opPut
	opDelete
)

func (o op) String() string {
	return [...]string{"Get", "Put", "Delete"}[o]
}

// call is one Store call that reached the store under a recordingStore.
type call struct {
	op    op
	key   string
	value string
	ttl   time.Duration
	err   error
}

// recordingStore records every call that reaches the Store it wraps.
type recordingStore struct {
	kv.Store
	mu    sync.Mutex
	calls []call
}

func (r *recordingStore) record(c call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *recordingStore) Get(ctx context.Context, key string) (kv.Entry, error) {
	e, err := r.Store.Get(ctx, key)
	r.record(call{op: opGet, key: key, err: err})
	return e, err
}

func (r *recordingStore) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	err := r.Store.Put(ctx, key, e, opts)
	r.record(call{op: opPut, key: key, value: e.Value, ttl: opts.TTL, err: err})
	return err
}

func (r *recordingStore) Delete(ctx context.Context, key string) error {
	err := r.Store.Delete(ctx, key)
	r.record(call{op: opDelete, key: key, err: err})
	return err
}

// snapshot returns the calls recorded so far.
func (r *recordingStore) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// count returns how many recorded calls were o on a key starting with prefix.
func (r *recordingStore) count(o op, prefix string) int {
	n := 0
	for _, c := range r.snapshot() {
		if c.op == o && strings.HasPrefix(c.key, prefix) {
			n++
		}
	}
	return n
}

// writes returns the recorded Puts and Deletes.
func (r *recordingStore) writes() []call {
	var w []call
	for _, c := range r.snapshot() {
		if c.op != opGet {
			w = append(w, c)
		}
	}
	return w
}

// fault makes the nth call of op on a key starting with prefix fail.
type fault struct {
	op     op
	prefix string
	// nth counts matching calls from 1; 0 fails every matching call.
	nth int
	// applied lets the call take effect before the error is returned, as a KV
	// write can land even though the Worker is told it failed.
	applied bool
}

// faultyStore returns errStorage from the calls its faults select and passes
// every other call through.
type faultyStore struct {
	kv.Store
	mu     sync.Mutex
	faults []fault
	seen   []int
}

// set replaces the faults; set() turns them all off.
func (f *faultyStore) set(faults ...fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = faults
	f.seen = make([]int, len(faults))
}

// trip reports whether a call of o on key fails, and if so whether it lands.
func (f *faultyStore) trip(o op, key string) (fail, applied bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, ft := range f.faults {
		if ft.op != o || !strings.HasPrefix(key, ft.prefix) {
			continue
		}
		f.seen[i]++
		if ft.nth == 0 || ft.nth == f.seen[i] {
			return true, ft.applied
		}
	}
	return false, false
}

func (f *faultyStore) Get(ctx context.Context, key string) (kv.Entry, error) {
	if fail, _ := f.trip(opGet, key); fail {
		return kv.Entry{}, fmt.Errorf("get %q: %w", key, errStorage)
	}
	return f.Store.Get(ctx, key)
}

func (f *faultyStore) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	fail, applied := f.trip(opPut, key)
	if !fail {
		return f.Store.Put(ctx, key, e, opts)
	}
	if applied {
		if err := f.Store.Put(ctx, key, e, opts); err != nil {
			return err
		}
	}
	return fmt.Errorf("put %q: %w", key, errStorage)
}

func (f *faultyStore) Delete(ctx context.Context, key string) error {
	fail, applied := f.trip(opDelete, key)
	if !fail {
		return f.Store.Delete(ctx, key)
	}
	if applied {
		if err := f.Store.Delete(ctx, key); err != nil {
			return err
		}
	}
	return fmt.Errorf("delete %q: %w", key, errStorage)
}

// releaseError is one call of Options.OnReleaseError.
type releaseError struct {
	key string
	err error
}

// harness is a Service over faulty → recording → Memory, on fixed clocks.
type harness struct {
	mem    *kv.Memory
	now    time.Time // the Memory's clock, for expiring entries
	rec    *recordingStore
	faulty *faultyStore
	svc    *intake.Service

	mu          sync.Mutex
	releaseErrs []releaseError
}

// newHarness returns a harness whose Service has opts (nil for defaults)
// with Now fixed at acceptedAt and OnReleaseError recorded.
func newHarness(t *testing.T, opts *intake.Options) *harness {
	t.Helper()
	h := &harness{mem: kv.NewMemory(), now: time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)}
	h.mem.Now = func() time.Time { return h.now }
	h.rec = &recordingStore{Store: h.mem}
	h.faulty = &faultyStore{Store: h.rec}
	var o intake.Options
	if opts != nil {
		o = *opts
	}
	o.Now = func() time.Time { return acceptedAt }
	o.OnReleaseError = func(key string, err error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.releaseErrs = append(h.releaseErrs, releaseError{key, err})
	}
	h.svc = intake.New(h.faulty, &o)
	return h
}

func (h *harness) submit(key, body string) (intake.Outcome, error) {
	return h.svc.Submit(context.Background(), "", key, strings.NewReader(body))
}

// releaseErrors returns the OnReleaseError calls so far.
func (h *harness) releaseErrors() []releaseError {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]releaseError(nil), h.releaseErrs...)
}

// stored returns the value under key in the Memory, bypassing the wrappers.
func (h *harness) stored(t *testing.T, key string) (string, bool) {
	t.Helper()
	e, err := h.mem.Get(context.Background(), key)
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return "", false
	case err != nil:
		t.Fatalf("Memory.Get(%q): %v", key, err)
	}
	return e.Value, true
}

// wantReceiptStored fails unless receipt is exactly what result:<key> holds.
func (h *harness) wantReceiptStored(t *testing.T, key string, receipt []byte) {
	t.Helper()
	got, ok := h.stored(t, "result:"+key)
	if !ok {
		t.Fatalf("result:%s missing; a receipt %s was handed out without being stored", key, receipt)
	}
	if got != string(receipt) {
		t.Fatalf("result:%s = %s, want the handed-out receipt %s", key, got, receipt)
	}
}

func TestSubmitNewKeyStoresReceipt(t *testing.T) {
	h := newHarness(t, nil)
	out, err := h.submit("k1", validBody)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if out.Replayed {
		t.Errorf("Replayed = true, want false for a new key")
	}
	h.wantReceiptStored(t, "k1", out.Receipt)
	if _, ok := h.stored(t, "pending:k1"); ok {
		t.Errorf("pending:k1 still stored after Submit returned; want the claim released")
	}
	if got, want := h.mem.Len(), 1; got != want {
		t.Errorf("Memory.Len() = %d, want %d (just the receipt)", got, want)
	}
	// The receipt is the order as placed, stamped with Options.Now.
	var id string
	if _, err := fmt.Sscanf(string(out.Receipt), `{"orderId":%q`, &id); err != nil {
		t.Fatalf("receipt %s has no orderId: %v", out.Receipt, err)
	}
	want := `{"orderId":"` + id + `","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2026-03-14T15:09:26.535Z"}`
	if got := string(out.Receipt); got != want {
		t.Errorf("Receipt = %s, want %s", got, want)
	}
	if got := out.OrderID; got != id {
		t.Errorf("OrderID = %q, want the receipt's %q", got, id)
	}
	if got, want := h.rec.count(opPut, "result:"), 1; got != want {
		t.Errorf("result Puts = %d, want %d", got, want)
	}
	for _, c := range h.rec.snapshot() {
		if c.op == opPut && c.key == "result:k1" && c.ttl != intake.DefaultResultTTL {
			t.Errorf("result Put TTL = %v, want %v", c.ttl, intake.DefaultResultTTL)
		}
	}
}

func TestSubmitReplay(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"same body replays the receipt", validBody},
		{"same order reformatted replays the receipt", "{ \"quantity\": 10.0, \"side\": \"b\\u0075y\",\n \"symbol\": \"AAPL\", \"note\": 1 }"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			first, err := h.submit("k", validBody)
			if err != nil {
				t.Fatalf("first Submit: %v", err)
			}
			before := len(h.rec.writes())
			again, err := h.submit("k", tc.body)
			if err != nil {
				t.Fatalf("replay Submit: %v", err)
			}
			if !again.Replayed {
				t.Errorf("Replayed = false, want true")
			}
			if !bytes.Equal(again.Receipt, first.Receipt) {
				t.Errorf("replayed Receipt = %s, want %s", again.Receipt, first.Receipt)
			}
			if again.OrderID != first.OrderID || first.OrderID == "" {
				t.Errorf("replayed OrderID = %q, want the first's %q", again.OrderID, first.OrderID)
			}
			if got := h.rec.writes()[before:]; len(got) != 0 {
				t.Errorf("replay wrote %v, want no writes", got)
			}
		})
	}
}

// TestSubmitReplaysReferenceReceipt checks that receipts the TypeScript
// Worker stored in a shared namespace (a bare JSON value, no metadata) are
// replayed as they are, byte for byte.
func TestSubmitReplaysReferenceReceipt(t *testing.T) {
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
			h := newHarness(t, nil)
			if err := h.mem.Put(context.Background(), "result:ts", kv.Entry{Value: tc.stored}, kv.PutOptions{TTL: 24 * time.Hour}); err != nil {
				t.Fatal(err)
			}
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
			if w := h.rec.writes(); len(w) != 0 {
				t.Errorf("replay wrote %v, want no writes", w)
			}
		})
	}
}

func TestSubmitClaimedKeyIsInProgress(t *testing.T) {
	h := newHarness(t, nil)
	// Another instance (or the reference Worker) holds the claim.
	if err := h.mem.Put(context.Background(), "pending:k", kv.Entry{Value: "1"}, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
		t.Fatal(err)
	}
	out, err := h.submit("k", validBody)
	if !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("Submit error = %v, want ErrInProgress", err)
	}
	if out.Receipt != nil {
		t.Errorf("Receipt = %s, want none with ErrInProgress", out.Receipt)
	}
	if w := h.rec.writes(); len(w) != 0 {
		t.Errorf("Submit wrote %v, want nothing written", w)
	}
	if v, ok := h.stored(t, "pending:k"); !ok || v != "1" {
		t.Errorf("pending:k = %q present %v, want the other holder's claim untouched", v, ok)
	}
	if got, want := h.mem.Len(), 1; got != want {
		t.Errorf("Memory.Len() = %d, want %d", got, want)
	}
	// Once the claim expires, as on KV, the key is free again.
	h.now = h.now.Add(kv.MinTTL)
	if out, err := h.submit("k", validBody); err != nil || out.Replayed {
		t.Fatalf("Submit after the claim expired = replayed %v, %v; want a new order", out.Replayed, err)
	}
}

func TestSubmitInvalidOrderReleasesClaim(t *testing.T) {
	tests := []struct {
		name string
		body io.Reader
	}{
		{"not JSON", strings.NewReader(`{"symbol":`)},
		{"empty body", strings.NewReader(``)},
		{"no body", nil},
		{"array", strings.NewReader(`[]`)},
		{"missing symbol", strings.NewReader(`{"side":"buy","quantity":1}`)},
		{"upper-case side", strings.NewReader(`{"symbol":"AAPL","side":"BUY","quantity":1}`)},
		{"zero quantity", strings.NewReader(`{"symbol":"AAPL","side":"buy","quantity":0}`)},
		{"fractional quantity", strings.NewReader(`{"symbol":"AAPL","side":"sell","quantity":1.5}`)},
		{"quantity as string", strings.NewReader(`{"symbol":"AAPL","side":"sell","quantity":"1"}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			out, err := h.svc.Submit(context.Background(), "", "k", tc.body)
			if !errors.Is(err, order.ErrInvalid) {
				t.Fatalf("Submit error = %v, want order.ErrInvalid", err)
			}
			if out.Receipt != nil {
				t.Errorf("Receipt = %s, want none", out.Receipt)
			}
			if got, want := h.rec.count(opPut, "result:"), 0; got != want {
				t.Errorf("result Puts = %d, want %d", got, want)
			}
			if _, ok := h.stored(t, "pending:k"); ok {
				t.Errorf("pending:k still stored; want the claim released after an invalid order")
			}
			if got := h.mem.Len(); got != 0 {
				t.Errorf("Memory.Len() = %d, want 0", got)
			}
			// The key stays free: the corrected order goes through at once.
			fixed, err := h.submit("k", validBody)
			if err != nil {
				t.Fatalf("corrected Submit: %v", err)
			}
			if fixed.Replayed {
				t.Errorf("corrected Submit Replayed = true, want a new order")
			}
			h.wantReceiptStored(t, "k", fixed.Receipt)
		})
	}
}

func TestSubmitClaimTTL(t *testing.T) {
	tests := []struct {
		name       string
		pendingTTL time.Duration
		wantErr    error
		wantTTL    time.Duration // the TTL the claim was put with
	}{
		{"default is KV's minimum", 0, nil, kv.MinTTL},
		{"ninety seconds is accepted", 90 * time.Second, nil, 90 * time.Second},
		{"reference's thirty seconds is refused", 30 * time.Second, intake.ErrUnavailable, 30 * time.Second},
		{"one second under the minimum is refused", kv.MinTTL - time.Second, intake.ErrUnavailable, kv.MinTTL - time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &intake.Options{PendingTTL: tc.pendingTTL})
			out, err := h.submit("k", validBody)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Submit error = %v, want %v", err, tc.wantErr)
			}
			var claims []call
			for _, c := range h.rec.snapshot() {
				if c.op == opPut && c.key == "pending:k" {
					claims = append(claims, c)
				}
			}
			if len(claims) != 1 {
				t.Fatalf("claim Puts = %v, want exactly one", claims)
			}
			c := claims[0]
			if c.ttl != tc.wantTTL {
				t.Errorf("claim TTL = %v, want %v", c.ttl, tc.wantTTL)
			}
			if tc.wantErr != nil {
				if !errors.Is(c.err, kv.ErrInvalid) {
					t.Errorf("Memory claim Put error = %v, want kv.ErrInvalid as KV would answer", c.err)
				}
				if out.Receipt != nil || h.mem.Len() != 0 {
					t.Errorf("Receipt = %s, Memory.Len() = %d; want no receipt and nothing stored", out.Receipt, h.mem.Len())
				}
				return
			}
			if c.err != nil {
				t.Errorf("Memory refused the claim Put: %v", c.err)
			}
			if c.ttl < kv.MinTTL {
				t.Errorf("claim TTL %v is under KV's minimum %v", c.ttl, kv.MinTTL)
			}
			if got, want := h.svc.RetryAfter(), tc.wantTTL; got != want {
				t.Errorf("RetryAfter() = %v, want the claim TTL %v", got, want)
			}
			h.wantReceiptStored(t, "k", out.Receipt)
		})
	}
}

// TestSubmitClaimExpires shows the claim really carries its TTL: a request
// that died after claiming blocks its key for PendingTTL and no longer.
func TestSubmitClaimExpires(t *testing.T) {
	var deferred []func(context.Context)
	h := newHarness(t, &intake.Options{Defer: func(_ context.Context, task func(context.Context)) {
		deferred = append(deferred, task) // never run: the release is lost
	}, CachedReceipts: -1}) // the receipt is deleted below, from KV only
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

func TestSubmitKeyLimits(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		wantErr error
	}{
		{"one-byte key is stored", "k", nil},
		{"255-character key is stored", strings.Repeat("k", 255), nil},
		{"every printable ASCII character is allowed", " !\"#$%&'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~", nil},
		{"UUID is stored", "8e03978e-40d5-43e8-bc93-6894a57f9324", nil},
		{"256-character key is refused", strings.Repeat("k", 256), intake.ErrInvalidKey},
		{"empty key is refused", "", intake.ErrInvalidKey},
		{"control character is refused", "abc\x01def", intake.ErrInvalidKey},
		{"tab is refused", "abc\tdef", intake.ErrInvalidKey},
		{"DEL is refused", "abc\x7f", intake.ErrInvalidKey},
		{"non-ASCII is refused", "clé", intake.ErrInvalidKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			out, err := h.submit(tc.key, validBody)
			if got, want := intake.CheckKey(tc.key), tc.wantErr; !errors.Is(got, want) {
				t.Errorf("CheckKey error = %v, want %v", got, want)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Submit error = %v, want %v", err, tc.wantErr)
				}
				if got := h.mem.Len(); got != 0 {
					t.Errorf("Memory.Len() = %d, want 0", got)
				}
				if c := h.rec.snapshot(); len(c) != 0 {
					t.Errorf("store calls = %v, want none for a refused key", c)
				}
				return
			}
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			h.wantReceiptStored(t, tc.key, out.Receipt)
			again, err := h.submit(tc.key, validBody)
			if err != nil || !again.Replayed || !bytes.Equal(again.Receipt, out.Receipt) {
				t.Errorf("replay = %s replayed %v, %v; want %s replayed true", again.Receipt, again.Replayed, err, out.Receipt)
			}
		})
	}
}

// errReader returns its data, then err.
type errReader struct {
	data string
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestSubmitBody(t *testing.T) {
	const limit = 128
	padded := func(n int) string { // validBody grown with spaces to n bytes
		return validBody + strings.Repeat(" ", n-len(validBody))
	}
	tests := []struct {
		name    string
		max     int64
		body    io.Reader
		wantErr error
	}{
		{"body at the limit is accepted", limit, strings.NewReader(padded(limit)), nil},
		{"body one byte over is too large", limit, strings.NewReader(padded(limit + 1)), intake.ErrBodyTooLarge},
		{"body over the default limit is too large", 0, strings.NewReader(padded(intake.DefaultMaxBodyBytes + 1)), intake.ErrBodyTooLarge},
		{"body at the default limit is accepted", 0, strings.NewReader(padded(intake.DefaultMaxBodyBytes)), nil},
		{"reader that fails at once is unreadable", limit, &errReader{err: errors.New("connection reset")}, intake.ErrUnreadableBody},
		{"reader that fails midway is unreadable", limit, &errReader{data: validBody[:10], err: errors.New("connection reset")}, intake.ErrUnreadableBody},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &intake.Options{MaxBodyBytes: tc.max})
			out, err := h.svc.Submit(context.Background(), "", "k", tc.body)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Submit: %v", err)
				}
				h.wantReceiptStored(t, "k", out.Receipt)
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Submit error = %v, want %v", err, tc.wantErr)
			}
			if out.Receipt != nil {
				t.Errorf("Receipt = %s, want none", out.Receipt)
			}
			if c := h.rec.snapshot(); len(c) != 0 {
				t.Errorf("store calls = %v, want none before the body is read", c)
			}
			if got := h.mem.Len(); got != 0 {
				t.Errorf("Memory.Len() = %d, want 0", got)
			}
		})
	}
}

// TestSubmitStorageFailure fails each storage step in turn, then retries
// under the same key with storage healthy, and checks that the key ends with
// exactly one stored receipt and that every receipt handed out is that one.
func TestSubmitStorageFailure(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		faults []fault
		// wantErr is the first Submit's error; nil means it succeeds.
		wantErr error
		// wantReleaseErrs is how many times OnReleaseError is called.
		wantReleaseErrs int
		// wantClaim is whether pending:<key> is left behind.
		wantClaim bool
		// wantStored is whether the first Submit leaves a receipt stored.
		wantStored bool
	}{
		{
			name:    "get result fails: unavailable",
			faults:  []fault{{op: opGet, prefix: "result:", nth: 1}},
			wantErr: intake.ErrUnavailable,
		},
		{
			name:    "get pending fails: unavailable",
			faults:  []fault{{op: opGet, prefix: "pending:", nth: 1}},
			wantErr: intake.ErrUnavailable,
		},
		{
			name:    "put pending fails: unavailable",
			faults:  []fault{{op: opPut, prefix: "pending:", nth: 1}},
			wantErr: intake.ErrUnavailable,
		},
		{
			name:    "put pending fails but lands: unavailable, claim released",
			faults:  []fault{{op: opPut, prefix: "pending:", nth: 1, applied: true}},
			wantErr: intake.ErrUnavailable,
		},
		{
			name: "put pending fails but lands and release fails: unavailable, claim left",
			faults: []fault{
				{op: opPut, prefix: "pending:", nth: 1, applied: true},
				{op: opDelete, prefix: "pending:", nth: 1},
			},
			wantErr:         intake.ErrUnavailable,
			wantReleaseErrs: 1,
			wantClaim:       true,
		},
		{
			name:    "put result fails: unavailable, claim released",
			faults:  []fault{{op: opPut, prefix: "result:", nth: 1}},
			wantErr: intake.ErrUnavailable,
		},
		{
			name:       "put result fails but lands: unavailable, retry replays",
			faults:     []fault{{op: opPut, prefix: "result:", nth: 1, applied: true}},
			wantErr:    intake.ErrUnavailable,
			wantStored: true,
		},
		{
			name: "put result and release fail: unavailable, claim left",
			faults: []fault{
				{op: opPut, prefix: "result:", nth: 1},
				{op: opDelete, prefix: "pending:", nth: 1},
			},
			wantErr:         intake.ErrUnavailable,
			wantReleaseErrs: 1,
			wantClaim:       true,
		},
		{
			name:            "final release fails: success, claim left",
			faults:          []fault{{op: opDelete, prefix: "pending:", nth: 1}},
			wantReleaseErrs: 1,
			wantClaim:       true,
			wantStored:      true,
		},
		{
			name:            "release after invalid order fails: invalid, claim left",
			body:            `{"symbol":"AAPL","side":"hold","quantity":10}`,
			faults:          []fault{{op: opDelete, prefix: "pending:", nth: 1}},
			wantErr:         order.ErrInvalid,
			wantReleaseErrs: 1,
			wantClaim:       true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const key = "k"
			h := newHarness(t, nil)
			body := tc.body
			if body == "" {
				body = validBody
			}
			var handedOut [][]byte
			h.faulty.set(tc.faults...)
			out, err := h.submit(key, body)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Submit error = %v, want success", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("Submit error = %v, want %v", err, tc.wantErr)
			case err != nil && out.Receipt != nil:
				t.Fatalf("Submit returned receipt %s with error %v; want none", out.Receipt, err)
			case err == nil:
				if out.Replayed {
					t.Errorf("Replayed = true, want a new order")
				}
				h.wantReceiptStored(t, key, out.Receipt)
				handedOut = append(handedOut, out.Receipt)
			}
			if errors.Is(err, intake.ErrUnavailable) && !strings.Contains(err.Error(), "secret detail") {
				// The storage error text belongs in logs; the HTTP layer hides it.
				t.Errorf("ErrUnavailable error %q dropped the storage detail, want it kept for logs", err)
			}
			_, stored := h.stored(t, "result:"+key)
			if stored != tc.wantStored {
				t.Errorf("after the failure, result:%s stored = %v, want %v", key, stored, tc.wantStored)
			}
			if _, claim := h.stored(t, "pending:"+key); claim != tc.wantClaim {
				t.Errorf("after the failure, pending:%s present = %v, want %v", key, claim, tc.wantClaim)
			}
			releaseErrs := h.releaseErrors()
			if got, want := len(releaseErrs), tc.wantReleaseErrs; got != want {
				t.Errorf("OnReleaseError calls = %v, want %d", releaseErrs, want)
			}
			for _, re := range releaseErrs {
				if re.key != key || !errors.Is(re.err, errStorage) {
					t.Errorf("OnReleaseError(%q, %v), want (%q, the storage error)", re.key, re.err, key)
				}
			}

			// Retry with storage healthy, waiting out a left-over claim as a
			// client told Retry-After would.
			h.faulty.set()
			retry, err := h.submit(key, validBody)
			if tc.wantClaim && !tc.wantStored {
				if !errors.Is(err, intake.ErrInProgress) {
					t.Fatalf("retry under the left-over claim: error = %v, want ErrInProgress", err)
				}
				h.now = h.now.Add(h.svc.RetryAfter())
				retry, err = h.submit(key, validBody)
			}
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if retry.Replayed != tc.wantStored {
				t.Errorf("retry Replayed = %v, want %v", retry.Replayed, tc.wantStored)
			}
			handedOut = append(handedOut, retry.Receipt)

			final, ok := h.stored(t, "result:"+key)
			if !ok {
				t.Fatalf("no receipt stored after the retry")
			}
			for i, r := range handedOut {
				if string(r) != final {
					t.Errorf("receipt %d handed out = %s, want the stored %s", i, r, final)
				}
			}
			if got, want := h.rec.count(opPut, "result:"), 1; got != want {
				t.Errorf("result Puts that reached the store = %d, want %d (one order)", got, want)
			}
			if tc.wantClaim {
				h.now = h.now.Add(h.svc.RetryAfter()) // a left-over claim expires
			}
			if got, want := h.mem.Len(), 1; got != want {
				t.Errorf("Memory.Len() = %d, want %d (just the receipt)", got, want)
			}
		})
	}
}

func TestSubmitDefer(t *testing.T) {
	type deferred struct {
		ctx  context.Context
		task func(context.Context)
	}
	var tasks []deferred
	h := newHarness(t, &intake.Options{Defer: func(ctx context.Context, task func(context.Context)) {
		tasks = append(tasks, deferred{ctx, task})
	}})
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "request")

	t.Run("success defers the release", func(t *testing.T) {
		out, err := h.svc.Submit(ctx, "", "ok", strings.NewReader(validBody))
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
		if got := h.rec.count(opDelete, ""); got != 0 {
			t.Errorf("Deletes before the deferred task ran = %d, want 0", got)
		}
		tasks[0].task(context.Background())
		if _, ok := h.stored(t, "pending:ok"); ok {
			t.Errorf("pending:ok still stored after the deferred task ran")
		}
	})
	t.Run("replay defers nothing", func(t *testing.T) {
		tasks = nil
		if _, err := h.svc.Submit(ctx, "", "ok", strings.NewReader(validBody)); err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if len(tasks) != 0 {
			t.Errorf("deferred tasks = %d, want 0", len(tasks))
		}
	})
	t.Run("invalid order releases inline", func(t *testing.T) {
		tasks = nil
		if _, err := h.svc.Submit(ctx, "", "bad", strings.NewReader(`{}`)); !errors.Is(err, order.ErrInvalid) {
			t.Fatalf("Submit error = %v, want order.ErrInvalid", err)
		}
		if len(tasks) != 0 {
			t.Errorf("deferred tasks = %d, want 0", len(tasks))
		}
		if _, ok := h.stored(t, "pending:bad"); ok {
			t.Errorf("pending:bad still stored; want it released before Submit returns")
		}
	})
}

// TestSubmitConcurrentSameKey submits one key from many goroutines at once,
// under several GOMAXPROCS values: exactly one places the order, and every
// other either replays it or is told the key is in progress.
func TestSubmitConcurrentSameKey(t *testing.T) {
	const callers = 64
	for _, procs := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d places one order", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			h := newHarness(t, nil)
			outs := make([]intake.Outcome, callers)
			errs := make([]error, callers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					outs[i], errs[i] = h.submit("same", validBody)
				}()
			}
			close(start)
			wg.Wait()

			final, ok := h.stored(t, "result:same")
			if !ok {
				t.Fatalf("no receipt stored")
			}
			placed, replayed, inProgress := 0, 0, 0
			for i := range callers {
				switch {
				case errors.Is(errs[i], intake.ErrInProgress):
					inProgress++
				case errs[i] != nil:
					t.Errorf("caller %d: error %v, want a receipt or ErrInProgress", i, errs[i])
				case string(outs[i].Receipt) != final:
					t.Errorf("caller %d: receipt %s, want the stored %s", i, outs[i].Receipt, final)
				case outs[i].Replayed:
					replayed++
				default:
					placed++
				}
			}
			if placed != 1 {
				t.Errorf("new orders = %d, want 1 (replayed %d, in progress %d)", placed, replayed, inProgress)
			}
			t.Logf("%d callers: %d placed, %d replayed, %d in progress", callers, placed, replayed, inProgress)
			if got, want := h.rec.count(opPut, "result:"), 1; got != want {
				t.Errorf("result Puts = %d, want %d", got, want)
			}
			if _, ok := h.stored(t, "pending:same"); ok {
				t.Errorf("pending:same left behind")
			}
		})
	}
}

func TestSubmitConcurrentKeys(t *testing.T) {
	const callers = 32
	h := newHarness(t, nil)
	errs := make([]error, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = h.submit(fmt.Sprintf("key-%d", i), validBody)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("key-%d: %v, want a new order", i, err)
		}
	}
	if got, want := h.mem.Len(), callers; got != want {
		t.Errorf("Memory.Len() = %d, want %d receipts and no claims", got, want)
	}
}

// gateStore holds its claim (the Put of pending:<key>) until the other
// instance has reached its claim too, that is until both have looked the key
// up and found it free.
type gateStore struct {
	kv.Store
	mine, theirs chan struct{}
}

func (g *gateStore) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	if strings.HasPrefix(key, "pending:") {
		close(g.mine)
		<-g.theirs
	}
	return g.Store.Put(ctx, key, e, opts)
}

// TestSubmitTwoInstancesCanBothPlace documents the limit of the claim: it is
// exclusive within one Service, but two instances (two isolates) that both
// check the claim before either writes it both place an order, as KV has no
// compare-and-swap. The later receipt wins; the earlier client holds a
// receipt that is no longer stored. If this test starts failing, the claim
// has become atomic across instances: update it and the package docs.
func TestSubmitTwoInstancesCanBothPlace(t *testing.T) {
	mem := kv.NewMemory()
	a, b := make(chan struct{}), make(chan struct{})
	svcA := intake.New(&gateStore{Store: mem, mine: a, theirs: b}, nil)
	svcB := intake.New(&gateStore{Store: mem, mine: b, theirs: a}, nil)
	var outA, outB intake.Outcome
	var errA, errB error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		outA, errA = svcA.Submit(context.Background(), "", "k", strings.NewReader(validBody))
	}()
	go func() {
		defer wg.Done()
		outB, errB = svcB.Submit(context.Background(), "", "k", strings.NewReader(validBody))
	}()
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("Submit errors = %v, %v; want both to place", errA, errB)
	}
	if outA.Replayed || outB.Replayed || bytes.Equal(outA.Receipt, outB.Receipt) {
		t.Fatalf("receipts %s (replayed %v) and %s (replayed %v); want two different new orders", outA.Receipt, outA.Replayed, outB.Receipt, outB.Replayed)
	}
}
