package intake_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
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

func TestNewRequiresTTLs(t *testing.T) {
	store := kv.NewStore(kv.NewMemoryNamespace(), nil)
	tests := []struct {
		name string
		opts intake.Options
	}{
		{"no TTLs panics", intake.Options{}},
		{"no ResultTTL panics", intake.Options{PendingTTL: config.DefaultPendingTTL}},
		{"no PendingTTL panics", intake.Options{ResultTTL: config.DefaultResultTTL}},
		{"a negative TTL panics", intake.Options{ResultTTL: -time.Hour, PendingTTL: config.DefaultPendingTTL}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v) did not panic, want a panic naming the missing TTL", tc.opts)
				}
			}()
			intake.New(store, tc.opts)
		})
	}
}

func TestSubmitNewKeyStoresReceipt(t *testing.T) {
	h := newHarness(t, intake.Options{})
	out, err := h.submit("k1", validBody)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if out.Replayed {
		t.Errorf("Replayed = true, want false for a new key")
	}
	h.wantReceiptStored(t, "k1", out.Receipt)
	// The claim is left to expire with its lease, behind the receipt.
	if _, ok := h.stored(t, "pending:k1"); !ok {
		t.Errorf("pending:k1 gone after Submit returned; want the claim left to expire")
	}
	if got := h.rec.Count(kvtest.OpDelete, ""); got != 0 {
		t.Errorf("Deletes = %d, want 0: the claim expires by itself", got)
	}
	h.now = h.now.Add(h.svc.RetryAfter())
	if got, want := h.mem.Len(), 1; got != want {
		t.Errorf("Memory.Len() after the lease = %d, want %d (just the receipt)", got, want)
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
	puts := h.rec.Filter(kvtest.OpPut, "result:")
	if got, want := len(puts), 1; got != want {
		t.Fatalf("result Puts = %d, want %d", got, want)
	}
	if got, want := puts[0].Options.TTL, config.DefaultResultTTL; got != want {
		t.Errorf("result Put TTL = %v, want %v", got, want)
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
			h := newHarness(t, intake.Options{})
			first, err := h.submit("k", validBody)
			if err != nil {
				t.Fatalf("first Submit: %v", err)
			}
			before := len(h.rec.Writes())
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
			h.wantNoWrites(t, "replay", before)
		})
	}
}

func TestSubmitClaimedKeyIsInProgress(t *testing.T) {
	h := newHarness(t, intake.Options{})
	// Another instance (or the reference Worker) holds the claim.
	h.putClaim(t, "k")
	out, err := h.submit("k", validBody)
	if !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("Submit error = %v, want ErrInProgress", err)
	}
	if out.Receipt != nil {
		t.Errorf("Receipt = %s, want none with ErrInProgress", out.Receipt)
	}
	h.wantNoWrites(t, "Submit", 0)
	if e, ok := h.stored(t, "pending:k"); !ok || e.Value != "1" {
		t.Errorf("pending:k = %q present %v, want the other holder's claim untouched", e.Value, ok)
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

// invalidBodies are bodies that are no valid order.
var invalidBodies = []struct {
	name string
	body []byte
}{
	{"not JSON", []byte(`{"symbol":`)},
	{"empty body", []byte(``)},
	{"no body", nil},
	{"array", []byte(`[]`)},
	{"missing symbol", []byte(`{"side":"buy","quantity":1}`)},
	{"upper-case side", []byte(`{"symbol":"AAPL","side":"BUY","quantity":1}`)},
	{"zero quantity", []byte(`{"symbol":"AAPL","side":"buy","quantity":0}`)},
	{"fractional quantity", []byte(`{"symbol":"AAPL","side":"sell","quantity":1.5}`)},
	{"quantity as string", []byte(`{"symbol":"AAPL","side":"sell","quantity":"1"}`)},
}

func TestSubmitInvalidOrderReleasesClaim(t *testing.T) {
	for _, tc := range invalidBodies {
		t.Run(tc.name+" is invalid and frees the key", func(t *testing.T) {
			h := newHarness(t, intake.Options{})
			out, err := h.svc.Submit(context.Background(), key("k"), tc.body, "")
			if !errors.Is(err, order.ErrInvalid) {
				t.Fatalf("Submit error = %v, want order.ErrInvalid", err)
			}
			if out.Receipt != nil {
				t.Errorf("Receipt = %s, want none", out.Receipt)
			}
			if got, want := h.rec.Count(kvtest.OpPut, "result:"), 0; got != want {
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

// TestValidateFirst checks that with Lifecycle.ValidateFirst, as in ledger
// mode, an invalid body is refused before any storage call, where without
// it (KV's Lifecycle) it costs a claim and its release.
func TestValidateFirst(t *testing.T) {
	for _, tc := range invalidBodies {
		t.Run(tc.name+" costs no store calls", func(t *testing.T) {
			h := newHarness(t, intake.Options{})
			spy := &storeSpy{Store: validatingFirst{h.store}}
			svc := intake.New(spy, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL})
			out, err := svc.Submit(context.Background(), key("k"), tc.body, "")
			if !errors.Is(err, order.ErrInvalid) {
				t.Fatalf("Submit error = %v, want order.ErrInvalid", err)
			}
			if out.Receipt != nil {
				t.Errorf("Receipt = %s, want none", out.Receipt)
			}
			if got := spy.Calls(); len(got) != 0 {
				t.Errorf("Store calls = %v, want none", got)
			}
			if got := h.rec.Calls(); len(got) != 0 {
				t.Errorf("KV calls = %v, want none", got)
			}
		})
	}
	t.Run("without it an invalid body costs a claim and its release", func(t *testing.T) {
		h := newHarness(t, intake.Options{})
		spy := &storeSpy{Store: h.store}
		svc := intake.New(spy, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL})
		if _, err := svc.Submit(context.Background(), key("k"), []byte(`{}`), ""); !errors.Is(err, order.ErrInvalid) {
			t.Fatalf("Submit error = %v, want order.ErrInvalid", err)
		}
		if got, want := spy.Calls(), map[string]int{"Begin": 1, "Release": 1}; !maps.Equal(got, want) {
			t.Errorf("Store calls = %v, want %v", got, want)
		}
	})
	t.Run("a valid body is placed and replayed", func(t *testing.T) {
		h := newHarness(t, intake.Options{}, intake.Lifecycle{ValidateFirst: true})
		first, err := h.submit("k", validBody)
		if err != nil || first.Replayed {
			t.Fatalf("Submit = replayed %v, %v; want a new order", first.Replayed, err)
		}
		h.wantReceiptStored(t, "k", first.Receipt)
		again, err := h.submit("k", validBody)
		if err != nil || !again.Replayed || !bytes.Equal(again.Receipt, first.Receipt) {
			t.Errorf("retry = %s replayed %v, %v; want %s replayed", again.Receipt, again.Replayed, err, first.Receipt)
		}
	})
	// The reference's receipts replay whatever the body, but only once the
	// body has got past validation.
	t.Run("an invalid body is refused even for a reference receipt", func(t *testing.T) {
		h := newHarness(t, intake.Options{}, intake.Lifecycle{ValidateFirst: true})
		h.put(t, "result:k", kv.Entry{Value: `{"orderId":"r1"}`}, 0)
		if _, err := h.submit("k", `not json`); !errors.Is(err, order.ErrInvalid) {
			t.Fatalf("Submit error = %v, want order.ErrInvalid", err)
		}
		if got := h.rec.Calls(); len(got) != 0 {
			t.Errorf("KV calls = %v, want none", got)
		}
	})
}

// TestSubmitStorageFailure fails each storage step in turn, then retries
// under the same key with storage healthy, and checks that the key ends with
// exactly one stored receipt and that every receipt handed out is that one.
func TestSubmitStorageFailure(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		faults []kvtest.Fault
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
			faults:  []kvtest.Fault{{Op: kvtest.OpGet, Prefix: "result:", Nth: 1}},
			wantErr: intake.ErrStorageUnavailable,
		},
		{
			name:    "get pending fails: unavailable",
			faults:  []kvtest.Fault{{Op: kvtest.OpGet, Prefix: "pending:", Nth: 1}},
			wantErr: intake.ErrStorageUnavailable,
		},
		{
			name:    "put pending fails: unavailable",
			faults:  []kvtest.Fault{{Op: kvtest.OpPut, Prefix: "pending:", Nth: 1}},
			wantErr: intake.ErrStorageUnavailable,
		},
		{
			name:    "put pending fails but lands: unavailable, claim released",
			faults:  []kvtest.Fault{{Op: kvtest.OpPut, Prefix: "pending:", Nth: 1, Applied: true}},
			wantErr: intake.ErrStorageUnavailable,
		},
		{
			// The release's failure is in the error, which the log line shows.
			name: "put pending fails but lands and release fails twice: unavailable, claim left",
			faults: []kvtest.Fault{
				{Op: kvtest.OpPut, Prefix: "pending:", Nth: 1, Applied: true},
				{Op: kvtest.OpDelete, Prefix: "pending:", Nth: 1},
				{Op: kvtest.OpDelete, Prefix: "pending:", Nth: 2},
			},
			wantErr:   intake.ErrStorageUnavailable,
			wantClaim: true,
		},
		{
			name: "release after invalid order fails twice: invalid, claim left",
			body: `{"symbol":"AAPL","side":"hold","quantity":10}`,
			faults: []kvtest.Fault{
				{Op: kvtest.OpDelete, Prefix: "pending:", Nth: 1},
				{Op: kvtest.OpDelete, Prefix: "pending:", Nth: 2},
			},
			wantErr:         order.ErrInvalid,
			wantReleaseErrs: 1,
			wantClaim:       true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const id = "k"
			h := newHarness(t, intake.Options{})
			body := tc.body
			if body == "" {
				body = validBody
			}
			var handedOut [][]byte
			h.faulty.Set(tc.faults...)
			out, err := h.submit(id, body)
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
				h.wantReceiptStored(t, id, out.Receipt)
				handedOut = append(handedOut, out.Receipt)
			}
			if errors.Is(err, intake.ErrStorageUnavailable) && !strings.Contains(err.Error(), "secret detail") {
				// The storage error text belongs in logs; the HTTP layer hides it.
				t.Errorf("ErrUnavailable error %q dropped the storage detail, want it kept for logs", err)
			}
			_, stored := h.stored(t, "result:"+id)
			if stored != tc.wantStored {
				t.Errorf("after the failure, result:%s stored = %v, want %v", id, stored, tc.wantStored)
			}
			if _, claim := h.stored(t, "pending:"+id); claim != tc.wantClaim {
				t.Errorf("after the failure, pending:%s present = %v, want %v", id, claim, tc.wantClaim)
			}
			releaseErrs := h.releaseErrors()
			if got, want := len(releaseErrs), tc.wantReleaseErrs; got != want {
				t.Errorf("OnReleaseError calls = %v, want %d", releaseErrs, want)
			}
			for _, re := range releaseErrs {
				if re.key != key(id) || !errors.Is(re.err, errStorage) {
					t.Errorf("OnReleaseError(%+v, %v), want (%+v, the storage error)", re.key, re.err, key(id))
				}
			}

			// Retry with storage healthy, waiting out a left-over claim as a
			// client told Retry-After would.
			h.faulty.Set()
			retry, err := h.submit(id, validBody)
			if tc.wantClaim && !tc.wantStored {
				if !errors.Is(err, intake.ErrInProgress) {
					t.Fatalf("retry under the left-over claim: error = %v, want ErrInProgress", err)
				}
				h.now = h.now.Add(h.svc.RetryAfter())
				retry, err = h.submit(id, validBody)
			}
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if retry.Replayed != tc.wantStored {
				t.Errorf("retry Replayed = %v, want %v", retry.Replayed, tc.wantStored)
			}
			handedOut = append(handedOut, retry.Receipt)

			final, ok := h.stored(t, "result:"+id)
			if !ok {
				t.Fatalf("no receipt stored after the retry")
			}
			for i, r := range handedOut {
				if string(r) != final.Value {
					t.Errorf("receipt %d handed out = %s, want the stored %s", i, r, final.Value)
				}
			}
			if got, want := h.rec.Count(kvtest.OpPut, "result:"), 1; got != want {
				t.Errorf("result Puts that reached the store = %d, want %d (one order)", got, want)
			}
			h.now = h.now.Add(h.svc.RetryAfter()) // the claims expire
			if got, want := h.mem.Len(), 1; got != want {
				t.Errorf("Memory.Len() = %d, want %d (just the receipt)", got, want)
			}
		})
	}
}

// TestStandInOverKVCommitsBeforeItAnswers fails the stand-in's commit,
// which over KV comes before its answer: it has no settler there, and its
// claim only a lease, so a receipt answered before its write could be
// stored nowhere. The client is told to retry; the key keeps its order id
// and time, so a retry, in the instance or anywhere, stores (or replays)
// one receipt.
func TestStandInOverKVCommitsBeforeItAnswers(t *testing.T) {
	tests := []struct {
		name   string
		faults []kvtest.Fault
		// wantStored: the failed commit landed anyway.
		wantStored bool
	}{
		{"the commit fails: the key is left open", []kvtest.Fault{{Op: kvtest.OpPut, Prefix: "result:", Nth: 1}}, false},
		{"the commit fails but lands", []kvtest.Fault{{Op: kvtest.OpPut, Prefix: "result:", Nth: 1, Applied: true}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, intake.Options{}, intake.Lifecycle{ReleaseAfterCommit: true})
			h.faulty.Set(tc.faults...)
			_, err := h.submit("k", validBody)
			h.faulty.Set()
			if !errors.Is(err, intake.ErrStorageUnavailable) {
				t.Fatalf("Submit = %v, want ErrStorageUnavailable: no receipt before its write", err)
			}
			if _, stored := h.stored(t, "result:k"); stored != tc.wantStored {
				t.Fatalf("result:k stored = %v, want %v", stored, tc.wantStored)
			}
			if out, err := h.svc.Lookup(ctx, key("k")); !tc.wantStored && (err == nil || out.Receipt != nil) {
				t.Errorf("Lookup = %s, %v; want no receipt that is not stored", out.Receipt, err)
			}
			again, err := h.submit("k", validBody)
			if err != nil {
				t.Fatalf("retry in the instance = %v, want the receipt", err)
			}
			h.wantReceiptStored(t, "k", again.Receipt)
			h.now = h.now.Add(h.svc.RetryAfter()) // past the claim's lease
			elsewhere := intake.New(h.store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
				Now: func() time.Time { return acceptedAt.Add(time.Hour) }})
			out, err := elsewhere.Submit(ctx, key("k"), []byte(validBody), "")
			if err != nil || !bytes.Equal(out.Receipt, again.Receipt) {
				t.Fatalf("retry elsewhere, an hour on = %s, %v; want the first receipt, byte for byte", out.Receipt, err)
			}
		})
	}
}

// TestStandInOverTheLedgerAnswersBeforeItsCommit: over the ledger, whose
// alarm settles a key left open, the stand-in answers after its claim
// alone, as a gateway's answer does, and commits after the response.
// Until the commit lands a lookup tells no receipt; if it fails, or never
// runs, the alarm stores the bytes the client was given.
func TestStandInOverTheLedgerAnswersBeforeItsCommit(t *testing.T) {
	for _, commit := range []string{"lands", "fails", "never runs"} {
		t.Run("the commit "+commit, func(t *testing.T) {
			ctx := context.Background()
			now := acceptedAt
			mem := ledger.NewMemoryStore()
			mem.Now = func() time.Time { return now }
			var calls []string
			failCommit := commit == "fails"
			mem.RoundTrip = func(_ context.Context, method string, apply func()) error {
				calls = append(calls, method)
				if method == "commit" && failCommit {
					return errors.New("ledger: injected")
				}
				apply()
				return nil
			}
			var tasks []func(context.Context)
			opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Now: mem.Now,
				Defer: func(_ context.Context, task func(context.Context)) { tasks = append(tasks, task) }}
			out, err := intake.New(mem, opts).Submit(ctx, key("k"), []byte(validBody), "")
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if want := []string{"claim"}; !slices.Equal(calls, want) {
				t.Fatalf("calls before the answer = %v, want %v", calls, want)
			}
			elsewhere := intake.New(mem, opts)
			if _, err := elsewhere.Lookup(ctx, key("k")); !errors.Is(err, intake.ErrInProgress) {
				t.Fatalf("Lookup before the commit = %v, want ErrInProgress", err)
			}
			if commit != "never runs" {
				for _, task := range tasks {
					task(ctx)
				}
			}
			failCommit = false
			now = now.Add(config.DefaultPendingTTL)
			settlerOpts := opts
			settlerOpts.CachedReceipts = -1
			for _, k := range mem.DueKeys(10) {
				intake.New(mem, settlerOpts).Settle(ctx, k)
			}
			got, err := elsewhere.Lookup(ctx, key("k"))
			if err != nil || !bytes.Equal(got.Receipt, out.Receipt) {
				t.Fatalf("Lookup once settled = %s, %v; want the answer, byte for byte: %s", got.Receipt, err, out.Receipt)
			}
		})
	}
}

// TestSubmitLostClaim checks a Commit refused, after the response,
// because the claim was taken over (its lease ran out): the claim is not
// released, for it is no longer this request's, and the key's outcome is
// the new holder's, which it stores from the same order id and time.
func TestSubmitLostClaim(t *testing.T) {
	h := newHarness(t, intake.Options{})
	spy := &storeSpy{Store: h.store, commitErr: fmt.Errorf("ledger: %w", intake.ErrLostClaim)}
	svc := intake.New(spy, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, CachedReceipts: -1,
		Gateway: &gatewayDouble{}})
	if _, err := svc.Submit(context.Background(), key("k"), []byte(validBody), ""); err != nil {
		t.Fatalf("Submit error = %v, want the receipt: the commit follows the response", err)
	}
	if got, want := spy.Calls(), map[string]int{"Begin": 1, "Commit": 1}; !maps.Equal(got, want) {
		t.Errorf("Store calls = %v, want %v: a lost claim is not released, it is no longer ours", got, want)
	}
	if h.releaseErrors() != nil {
		t.Errorf("OnReleaseError calls = %v, want none", h.releaseErrors())
	}
	if _, err := svc.Lookup(context.Background(), key("k")); !errors.Is(err, intake.ErrInProgress) {
		t.Errorf("Lookup after the lost claim: error = %v, want ErrInProgress", err)
	}
}

// TestSubmitConcurrentSameKey submits one key from many goroutines at once,
// under several GOMAXPROCS values: exactly one places the order, and every
// other either replays it or is told the key is in progress.
func TestSubmitConcurrentSameKey(t *testing.T) {
	const callers = 64
	for _, procs := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d places one order", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			h := newHarness(t, intake.Options{})
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
				case string(outs[i].Receipt) != final.Value:
					t.Errorf("caller %d: receipt %s, want the stored %s", i, outs[i].Receipt, final.Value)
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
			if got, want := h.rec.Count(kvtest.OpPut, "result:"), 1; got != want {
				t.Errorf("result Puts = %d, want %d", got, want)
			}
			if got, want := h.rec.Count(kvtest.OpPut, "pending:"), 1; got != want {
				t.Errorf("claim Puts = %d, want %d", got, want)
			}
		})
	}
}

func TestSubmitConcurrentKeys(t *testing.T) {
	const callers = 32
	h := newHarness(t, intake.Options{})
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
	h.now = h.now.Add(h.svc.RetryAfter())
	if got, want := h.mem.Len(), callers; got != want {
		t.Errorf("Memory.Len() once the leases end = %d, want %d receipts and no claims", got, want)
	}
}

// TestCancelledRequestStillCommits checks that a request abandoned after
// its claim still stores its outcome and frees the key, instead of
// blocking it until the claim expires: the commit and the release follow
// the response, whatever became of the request.
func TestCancelledRequestStillCommits(t *testing.T) {
	h := newHarness(t, intake.Options{}, intake.Lifecycle{ReleaseAfterCommit: true})
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel as soon as the claim is written, as a client that hangs up
	// mid-request would.
	h.hooks.After = func(op kvtest.Op, k string, err error) error {
		if op == kvtest.OpPut && strings.HasPrefix(k, "pending:") {
			cancel()
		}
		return err
	}
	out, err := h.svc.Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil {
		t.Fatalf("Submit error = %v, want the receipt", err)
	}
	h.wantReceiptStored(t, "k", out.Receipt)
	if _, ok := h.stored(t, "pending:k"); ok {
		t.Fatalf("claim left behind after a cancelled request (release errors: %v)", h.releaseErrors())
	}
}

func TestSubmitKeyReusedForAnotherOrder(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr error
	}{
		{"another symbol is refused", `{"symbol":"MSFT","side":"buy","quantity":10}`, intake.ErrKeyReused},
		{"another side is refused", `{"symbol":"AAPL","side":"sell","quantity":10}`, intake.ErrKeyReused},
		{"another quantity is refused", `{"symbol":"AAPL","side":"buy","quantity":11}`, intake.ErrKeyReused},
		{"an invalid body is an invalid order", `{"symbol":"AAPL"}`, order.ErrInvalid},
	}
	for _, tc := range tests {
		// From memory, and from the store as another instance finds it.
		for _, cached := range []int{0, -1} {
			name := tc.name
			if cached < 0 {
				name += " from the store"
			}
			t.Run(name, func(t *testing.T) {
				h := newHarness(t, intake.Options{CachedReceipts: cached})
				first, err := h.submit("k", validBody)
				if err != nil {
					t.Fatal(err)
				}
				before := len(h.rec.Writes())
				out, err := h.submit("k", tc.body)
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Submit error = %v, want %v", err, tc.wantErr)
				}
				if out.Receipt != nil || out.OrderID != "" {
					t.Errorf("refused Submit revealed %s / %q", out.Receipt, out.OrderID)
				}
				h.wantNoWrites(t, "refused Submit", before)
				again, err := h.submit("k", validBody)
				if err != nil || !again.Replayed || !bytes.Equal(again.Receipt, first.Receipt) {
					t.Errorf("the original order afterwards = %s replayed %v, %v; want the first receipt", again.Receipt, again.Replayed, err)
				}
			})
		}
	}
}

func TestSubmitScopesKeysToClients(t *testing.T) {
	h := newHarness(t, intake.Options{})
	ctx := context.Background()
	submit := func(client string) (intake.Outcome, error) {
		return h.svc.Submit(ctx, intake.Key{Client: client, ID: "shared"}, []byte(validBody), "")
	}
	alice, err := submit("alice")
	if err != nil || alice.Replayed {
		t.Fatalf("alice = replayed %v, %v; want a new order", alice.Replayed, err)
	}
	bob, err := submit("bob")
	if err != nil || bob.Replayed {
		t.Fatalf("bob = replayed %v, %v; want his own new order", bob.Replayed, err)
	}
	if alice.OrderID == bob.OrderID {
		t.Fatalf("alice and bob share order %s", alice.OrderID)
	}
	open, err := submit("")
	if err != nil || open.Replayed {
		t.Fatalf("the open client = replayed %v, %v; want its own new order", open.Replayed, err)
	}
	h.wantReceiptStored(t, "alice:shared", alice.Receipt)
	h.wantReceiptStored(t, "bob:shared", bob.Receipt)
	h.wantReceiptStored(t, "shared", open.Receipt)
	again, err := submit("bob")
	if err != nil || !again.Replayed || again.OrderID != bob.OrderID {
		t.Fatalf("bob's retry = %q replayed %v, %v; want his receipt %q", again.OrderID, again.Replayed, err, bob.OrderID)
	}
}

func TestKeyString(t *testing.T) {
	tests := []struct {
		name string
		key  intake.Key
		want string
	}{
		{"open key is the id alone", intake.Key{ID: "k"}, "k"},
		{"client key is client:id", intake.Key{Client: "alice", ID: "k"}, "alice:k"},
		{"a colon in the id is kept", intake.Key{Client: "alice", ID: "a:b"}, "alice:a:b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.key.String(); got != tc.want {
				t.Errorf("%+v.String() = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

// TestAnInvalidBodyLeavesAnOpenKeyAlone: over KV's stand-in, a commit
// that failed leaves the key open with the order id and time of its
// answer, for a retry to store. A body that is not an order under the key
// is told so, and writes nothing: taken over, the key was written as the
// reference's marker, without them, and its release deleted it, so that a
// retry minted another acceptedAt. Whether the instance reads the key
// open, or remembers it open while its read shows it free.
func TestAnInvalidBodyLeavesAnOpenKeyAlone(t *testing.T) {
	for _, remembers := range []bool{false, true} {
		name := map[bool]string{false: "another instance reads it open", true: "its instance remembers it open"}[remembers]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, intake.Options{})
			h.faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "result:", Nth: 1})
			if _, err := h.submit("k", validBody); !errors.Is(err, intake.ErrStorageUnavailable) {
				t.Fatalf("first Submit = %v, want storage unavailable", err)
			}
			h.faulty.Set()
			open, ok := h.stored(t, "pending:k")
			if !ok {
				t.Fatal("pending:k is not stored; want the key open")
			}
			svc := h.svc
			if remembers {
				// A stale read shows the key free.
				if err := h.mem.Delete(context.Background(), "pending:k"); err != nil {
					t.Fatal(err)
				}
			} else {
				svc = intake.New(h.store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
					Now: func() time.Time { return acceptedAt }})
			}
			writes := h.rec.Count(kvtest.OpPut, "pending:") + h.rec.Count(kvtest.OpDelete, "pending:")
			if _, err := svc.Submit(context.Background(), key("k"), []byte(`{"symbol":"AAPL"}`), ""); !errors.Is(err, order.ErrInvalid) {
				t.Fatalf("invalid Submit = %v, want order.ErrInvalid", err)
			}
			if got := h.rec.Count(kvtest.OpPut, "pending:") + h.rec.Count(kvtest.OpDelete, "pending:"); got != writes {
				t.Errorf("the invalid body made %d writes of pending:k, want none", got-writes)
			}
			if after, ok := h.stored(t, "pending:k"); !remembers && (!ok || after.Value != open.Value || !bytes.Equal(after.Metadata, open.Metadata)) {
				t.Errorf("pending:k = %q %s (%v), want it as it was: %q %s", after.Value, after.Metadata, ok, open.Value, open.Metadata)
			}
		})
	}
}
