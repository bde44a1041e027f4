package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
	"github.com/edge-orders/edge-orders/workers"
)

func TestNewOrderThenReplay(t *testing.T) {
	mem := kv.NewMemoryNamespace()
	h := newHandler(mem)

	w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(`{"quantity":10,"side":"buy","symbol":"AAPL","note":"x"}`)))
	id := orderID(t, w)
	if !uuidV4.MatchString(id) {
		t.Errorf("orderId = %q, want a lowercase version 4 UUID", id)
	}
	// The members come in the reference's order, whatever the request's.
	created := `{"orderId":"` + id + `","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2026-03-14T15:09:26.535Z"}`
	t.Run("new order is created", func(t *testing.T) {
		check(t, w, response{201, created, map[string]string{"Idempotent-Replay": ""}})
	})
	t.Run("stored key replays the body", func(t *testing.T) {
		w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
		check(t, w, response{200, created, map[string]string{"Idempotent-Replay": "true"}})
	})
	// A receipt this Worker stored carries the order's fingerprint, so a body
	// that is no order cannot be matched to it (the TypeScript reference's
	// receipts, without one, still replay whatever the body).
	t.Run("stored key with a body that is no order is invalid order", func(t *testing.T) {
		w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(`not json`)))
		check(t, w, response{422, problemInvalidOrder, map[string]string{"Idempotent-Replay": ""}})
	})
	t.Run("other key creates another order", func(t *testing.T) {
		w := serve(h, request(http.MethodPost, ptr("k2"), strings.NewReader(validBody)))
		if w.Code != http.StatusCreated || w.Body.String() == created {
			t.Errorf("status = %d body = %s, want 201 with a new order", w.Code, w.Body)
		}
	})
}

// TestLookup checks GET with an Idempotency-Key: the stored receipt
// replayed byte for byte, 404 for a free key, 409 for a held one, and never
// a write.
func TestLookup(t *testing.T) {
	const reference = "{ \"orderId\":\"0b7e2c57-8f53-4c39-9f5e-0d2d3c0b2a61\", \"symbol\":\"\\u00e9<&>\" }"
	mem := kv.NewMemoryNamespace()
	rec := &kvtest.Recording{Namespace: mem}
	// Without the cache every lookup reaches KV, as on another instance.
	opts := serviceOptions()
	opts.CachedReceipts = -1
	var lines []eventlog.Line
	h := httpapi.New(newServiceWith(rec, opts), httpapi.Options{Log: logTo(&lines)})

	created := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
	id := orderID(t, created)
	putClaim(t, mem, "busy")
	if err := mem.Put(context.Background(), "result:ts", kv.Entry{Value: reference}, kv.PutOptions{TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	writes := len(rec.Writes())

	tests := []struct {
		name string
		key  string
		body string
		want response
	}{
		{"stored key replays the identical body", "k", "",
			response{200, created.Body.String(), map[string]string{"Idempotent-Replay": "true"}}},
		{"the quoted key replays the identical body", `"k"`, "",
			response{200, created.Body.String(), map[string]string{"Idempotent-Replay": "true"}}},
		{"a GET's body is ignored", "k", `{"symbol":"MSFT","side":"sell","quantity":1}`,
			response{200, created.Body.String(), map[string]string{"Idempotent-Replay": "true"}}},
		{"reference receipt replays byte for byte", "ts", "",
			response{200, reference, map[string]string{"Idempotent-Replay": "true"}}},
		{"free key is not found", "free", "",
			response{404, problemNotFound, map[string]string{"Idempotent-Replay": "", "Retry-After": ""}}},
		{"claimed key is in progress", "busy", "",
			response{409, problemInProgress, map[string]string{"Idempotent-Replay": "", "Retry-After": "60"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := serve(h, request(http.MethodGet, ptr(tc.key), strings.NewReader(tc.body)))
			check(t, w, tc.want)
			if got := rec.Writes()[writes:]; len(got) != 0 {
				t.Errorf("lookup wrote %v, want no writes", got)
			}
		})
	}
	t.Run("lookups log their outcome", func(t *testing.T) {
		want := []eventlog.Line{
			{Outcome: "replayed", Key: "k", Status: 200, OrderID: id},
			{Outcome: "replayed", Key: "k", Status: 200, OrderID: id},
			{Outcome: "replayed", Key: "k", Status: 200, OrderID: id},
			{Outcome: "replayed", Key: "ts", Status: 200, OrderID: "0b7e2c57-8f53-4c39-9f5e-0d2d3c0b2a61"},
			{Outcome: "not_found", Key: "free", Status: 404, Error: "intake: no receipt for this key"},
			{Outcome: "in_progress", Key: "busy", Status: 409, Error: "intake: request with this key in progress"},
		}
		got := lines[1:] // after the POST's
		if len(got) != len(want) {
			t.Fatalf("log lines = %+v, want %d", got, len(want))
		}
		for i := range want {
			got[i].Millis = 0
			if got[i] != want[i] {
				t.Errorf("log line %d = %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}

// TestBodyLimits checks the body is read up to MaxBodyBytes, and that a body
// over it or one that cannot be read is refused before any storage call.
func TestBodyLimits(t *testing.T) {
	padded := func(n int) string { // validBody grown with spaces to n bytes
		return validBody + strings.Repeat(" ", n-len(validBody))
	}
	tests := []struct {
		name string
		body io.Reader
		want response // an empty body means the receipt created
	}{
		{"body at the limit is created", strings.NewReader(padded(httpapi.MaxBodyBytes)), response{status: 201}},
		{"body one byte over is too large", strings.NewReader(padded(httpapi.MaxBodyBytes + 1)), response{413, problemBodyTooLarge, nil}},
		{"body far over is too large", strings.NewReader(padded(4 * httpapi.MaxBodyBytes)), response{413, problemBodyTooLarge, nil}},
		{"reader that fails at once is unreadable", errorReader{}, response{400, problemUnreadableBody, nil}},
		{"reader that fails midway is unreadable", io.MultiReader(strings.NewReader(validBody[:10]), errorReader{}), response{400, problemUnreadableBody, nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemoryNamespace()
			rec := &kvtest.Recording{Namespace: mem}
			w := serve(newHandler(rec), request(http.MethodPost, ptr("k"), tc.body))
			want := tc.want
			if want.status == http.StatusCreated {
				orderID(t, w)
				want.body = w.Body.String()
				check(t, w, want)
				if e, err := mem.Get(t.Context(), "result:k"); err != nil || e.Value != w.Body.String() {
					t.Errorf("result:k = %s, %v; want the receipt %s", e.Value, err, w.Body)
				}
				return
			}
			check(t, w, want)
			if got := rec.Calls(); len(got) != 0 {
				t.Errorf("storage calls = %v, want none before the body is read", got)
			}
			if got := mem.Len(); got != 0 {
				t.Errorf("Memory.Len() = %d, want 0", got)
			}
		})
	}
}

// TestSecurityHeaders checks that every response, whatever its outcome, is
// marked nosniff, and that receipts are marked no-store so that no cache
// between client and Worker keeps an order.
func TestSecurityHeaders(t *testing.T) {
	mem := kv.NewMemoryNamespace()
	var panics atomic.Bool
	h := newHandler(panicky(mem, &panics))
	putClaim(t, mem, "busy")
	tests := []struct {
		name      string
		req       func() *http.Request
		status    int
		wantStore bool // Cache-Control: no-store
	}{
		{"created receipt", func() *http.Request { return request(http.MethodPost, ptr("k"), strings.NewReader(validBody)) }, 201, true},
		{"replayed receipt", func() *http.Request { return request(http.MethodPost, ptr("k"), strings.NewReader(validBody)) }, 200, true},
		{"looked-up receipt", func() *http.Request { return request(http.MethodGet, ptr("k"), nil) }, 200, true},
		{"not found", func() *http.Request { return request(http.MethodGet, ptr("free"), nil) }, 404, false},
		{"in progress", func() *http.Request { return request(http.MethodPost, ptr("busy"), strings.NewReader(validBody)) }, 409, false},
		{"method not allowed", func() *http.Request { return request(http.MethodPut, ptr("k"), nil) }, 405, false},
		{"missing key", func() *http.Request { return request(http.MethodPost, nil, nil) }, 400, false},
		{"invalid order", func() *http.Request { return request(http.MethodPost, ptr("bad"), strings.NewReader(`{}`)) }, 422, false},
		{"internal error", func() *http.Request {
			panics.Store(true)
			return request(http.MethodPost, ptr("boom"), strings.NewReader(validBody))
		}, 500, false},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is nosniff", func(t *testing.T) {
			w := serve(h, tc.req())
			panics.Store(false)
			if w.Code != tc.status {
				t.Fatalf("status = %d body = %s, want %d", w.Code, w.Body, tc.status)
			}
			if got := w.Header().Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want just \"nosniff\"", got)
			}
			got := w.Header().Get("Cache-Control")
			if tc.wantStore && got != "no-store" {
				t.Errorf("Cache-Control = %q on a receipt, want \"no-store\"", got)
			}
		})
	}
}

func TestPanicIsInternalError(t *testing.T) {
	var panics atomic.Bool
	h := newHandler(panicky(kv.NewMemoryNamespace(), &panics))
	panics.Store(true)
	t.Run("panicking request is internal error", func(t *testing.T) {
		w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
		check(t, w, response{500, problemInternal, nil})
		if strings.Contains(w.Body.String(), "exploded") {
			t.Errorf("body %s leaks the panic value", w.Body)
		}
	})
	t.Run("panicking lookup is internal error", func(t *testing.T) {
		w := serve(h, request(http.MethodGet, ptr("k"), nil))
		check(t, w, response{500, problemInternal, nil})
	})
	panics.Store(false)
	t.Run("next request with the same key is served", func(t *testing.T) {
		w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
		if w.Code != http.StatusCreated {
			t.Errorf("status = %d body = %s, want 201", w.Code, w.Body)
		}
	})
}

// TestServer runs the handler behind a real HTTP server, so headers and
// bodies are checked as a client receives them.
func TestServer(t *testing.T) {
	var panics atomic.Bool
	srv := httptest.NewServer(asHTTP(newHandler(panicky(kv.NewMemoryNamespace(), &panics))))
	defer srv.Close()
	send := func(t *testing.T, method, key string) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(validBody)
		}
		req, err := http.NewRequest(method, srv.URL, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Idempotency-Key", key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options = %q, want nosniff", method, key, got)
		}
		return resp, string(b)
	}
	panics.Store(true)
	resp, body := send(t, http.MethodPost, "s")
	if resp.StatusCode != 500 || body != problemInternal || resp.Header.Get("Content-Type") != problemType {
		t.Fatalf("panicking request = %d %s %s, want 500 %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, problemType, problemInternal)
	}
	panics.Store(false)
	first, created := send(t, http.MethodPost, "s")
	if first.StatusCode != http.StatusCreated || first.Header.Get("Content-Type") != jsonType || first.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("after a panic: status = %d %s Cache-Control %q %s, want 201 %s no-store", first.StatusCode, first.Header.Get("Content-Type"), first.Header.Get("Cache-Control"), created, jsonType)
	}
	again, replayed := send(t, http.MethodPost, "s")
	if again.StatusCode != http.StatusOK || replayed != created || again.Header.Get("Idempotent-Replay") != "true" {
		t.Errorf("replay = %d %s Idempotent-Replay %q, want 200 %s true", again.StatusCode, replayed, again.Header.Get("Idempotent-Replay"), created)
	}
	_, quoted := send(t, http.MethodPost, `"s"`)
	if quoted != created {
		t.Errorf("replay under the quoted key = %s, want %s", quoted, created)
	}
	looked, found := send(t, http.MethodGet, "s")
	if looked.StatusCode != http.StatusOK || found != created || looked.Header.Get("Idempotent-Replay") != "true" || looked.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("lookup = %d %s Idempotent-Replay %q Cache-Control %q, want 200 %s true no-store", looked.StatusCode, found, looked.Header.Get("Idempotent-Replay"), looked.Header.Get("Cache-Control"), created)
	}
	missing, notFound := send(t, http.MethodGet, "none")
	if missing.StatusCode != http.StatusNotFound || notFound != problemNotFound {
		t.Errorf("lookup of a free key = %d %s, want 404 %s", missing.StatusCode, notFound, problemNotFound)
	}
}

func TestMisconfigured(t *testing.T) {
	const detail = "RESULT_TTL_SECONDS: 5 is under KV's minimum expiration TTL of 60 seconds"
	var logged []eventlog.Line
	h := httpapi.Misconfigured(detail, httpapi.Options{Log: logTo(&logged)})
	want := problemJSON("misconfigured", 500, "Worker misconfigured", detail, "")
	tests := []struct {
		name string
		req  *http.Request
	}{
		{"POST is misconfigured", request(http.MethodPost, ptr("k"), strings.NewReader(validBody))},
		{"GET is misconfigured", request(http.MethodGet, nil, nil)},
		{"GET with a key is misconfigured", request(http.MethodGet, ptr("k"), nil)},
		{"POST without a key is misconfigured", request(http.MethodPost, nil, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := serve(h, tc.req)
			check(t, w, response{500, want, map[string]string{"Allow": "", "Retry-After": "", "Idempotent-Replay": ""}})
			if !strings.Contains(w.Body.String(), "RESULT_TTL_SECONDS") {
				t.Errorf("body %s does not name the variable", w.Body)
			}
		})
	}
	wantLine := eventlog.Line{Outcome: "misconfigured", Status: 500, Error: detail}
	if len(logged) != len(tests) {
		t.Fatalf("logged %d lines, want %d", len(logged), len(tests))
	}
	for i, got := range logged {
		if got != wantLine {
			t.Errorf("log line %d = %+v, want %+v", i, got, wantLine)
		}
	}
	if got := string(logged[0].AppendJSON(nil)); !strings.Contains(got, `"error":"`+detail+`"`) {
		t.Errorf("log JSON = %s, want the detail as its error", got)
	}
}

func TestMisconfiguredWithoutLog(t *testing.T) {
	w := serve(httpapi.Misconfigured("the ORDERS KV namespace binding is missing; see wrangler.toml", httpapi.Options{}), request(http.MethodPost, ptr("k"), nil))
	want := problemJSON("misconfigured", 500, "Worker misconfigured", "the ORDERS KV namespace binding is missing; see wrangler.toml", "")
	check(t, w, response{500, want, nil})
}

// TestLookupSaysWhenItExpires checks that a lookup of a stored outcome
// says when it expires, in Idempotency-Expires, where the store knows it
// (the ledger), from memory and from the store alike, with the body the
// stored outcome byte for byte; that KV's never does; and that no
// submission's answer does.
func TestLookupSaysWhenItExpires(t *testing.T) {
	ttl := 2 * time.Hour
	// Without a gateway a receipt is kept its TTL; with one, as the
	// rejection here, past every settle attempt (a day) and a TTL.
	receiptExpires, rejectionExpires := "2026-03-14T17:09:26.535Z", "2026-03-15T17:09:26.535Z"
	for _, mode := range []string{"ledger", "kv"} {
		t.Run(mode, func(t *testing.T) {
			var store intake.Store = kv.NewStore(kv.NewMemoryNamespace(), nil)
			wantReceipt, wantRejection := "", ""
			if mode == "ledger" {
				mem := ledger.NewMemoryStore()
				mem.Now = func() time.Time { return acceptedAt }
				store, wantReceipt, wantRejection = mem, receiptExpires, rejectionExpires
			}
			opts := serviceOptions()
			opts.ResultTTL = ttl
			rejecting := opts
			rejecting.Gateway = &scriptedGateway{answers: []error{&intake.Rejection{Reason: "symbol halted"}}}
			h := httpapi.New(intake.New(store, opts), httpapi.Options{})
			created := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
			check(t, created, response{201, created.Body.String(), map[string]string{"Idempotency-Expires": ""}})
			hr := httpapi.New(intake.New(store, rejecting), httpapi.Options{})
			refused := serve(hr, request(http.MethodPost, ptr("r"), strings.NewReader(validBody)))
			check(t, refused, response{422, refused.Body.String(), map[string]string{"Idempotency-Expires": ""}})
			// The bodies above are the answers as they came: what they must
			// say is checked here, and every replay below must be them.
			if id, status, _ := order.ReceiptFields(created.Body.Bytes()); id == "" || status != order.StatusAccepted {
				t.Fatalf("the 201 = %s, want a receipt of an accepted order", created.Body)
			}
			var rejection struct{ Error, Detail, OrderID string }
			if err := json.Unmarshal(refused.Body.Bytes(), &rejection); err != nil || rejection.Error != "order_rejected" ||
				rejection.Detail != "symbol halted" || rejection.OrderID == "" {
				t.Fatalf("the 422 = %s, want the rejection the gateway gave", refused.Body)
			}

			// The placing handler answers from memory; another asks the store.
			other := httpapi.New(intake.New(store, opts), httpapi.Options{})
			for name, h := range map[string]workers.Handler{"from memory": h, "from the store": other} {
				t.Run(name, func(t *testing.T) {
					check(t, serve(h, request(http.MethodGet, ptr("k"), nil)),
						response{200, created.Body.String(), map[string]string{"Idempotent-Replay": "true", "Idempotency-Expires": wantReceipt}})
					check(t, serve(h, request(http.MethodGet, ptr("r"), nil)),
						response{422, refused.Body.String(), map[string]string{"Idempotent-Replay": "true", "Idempotency-Expires": wantRejection}})
					check(t, serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody))),
						response{200, created.Body.String(), map[string]string{"Idempotent-Replay": "true", "Idempotency-Expires": ""}})
				})
			}
		})
	}
}
