package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/workers"
)

const validBody = `{"symbol":"AAPL","side":"buy","quantity":10}`

// acceptedAt is the fixed clock stamped on receipts.
var acceptedAt = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// secret stands for the storage details a KV error carries.
const secret = "upstream 500 from 10.0.0.7"

// failingStore fails every call with an error whose text must not reach clients.
type failingStore struct{ kv.Store }

func (failingStore) Get(context.Context, string) (kv.Entry, error) {
	return kv.Entry{}, errors.New("kv: " + secret)
}

// panickyStore panics in Get while panics is set.
type panickyStore struct {
	kv.Store
	panics atomic.Bool
}

func (p *panickyStore) Get(ctx context.Context, key string) (kv.Entry, error) {
	if p.panics.Load() {
		panic("kv: binding exploded")
	}
	return p.Store.Get(ctx, key)
}

// recordingStore records every call that reaches the store behind it, so a
// test can prove a request was refused before any storage call.
type recordingStore struct {
	kv.Store
	mu    sync.Mutex
	calls []string
}

func (r *recordingStore) record(op, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, op+" "+key)
}

func (r *recordingStore) Get(ctx context.Context, key string) (kv.Entry, error) {
	r.record("Get", key)
	return r.Store.Get(ctx, key)
}

func (r *recordingStore) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	r.record("Put", key)
	return r.Store.Put(ctx, key, e, opts)
}

func (r *recordingStore) Delete(ctx context.Context, key string) error {
	r.record("Delete", key)
	return r.Store.Delete(ctx, key)
}

// Calls returns the calls made so far, as "Get result:k".
func (r *recordingStore) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// jsonString writes s as a JSON string, escaping only what JSON requires, as
// JSON.stringify does (encoding/json's default would also escape <, > and &).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// problemJSON is the RFC 9457 problem body the contract promises for code:
// the members type, title, status, detail and error, in that order, then the
// raw members in extra (such as `,"retryAfter":60`).
func problemJSON(code string, status int, title, detail, extra string) string {
	return `{"type":` + jsonString("tag:edge-orders,2026:"+code) +
		`,"title":` + jsonString(title) +
		`,"status":` + strconv.Itoa(status) +
		`,"detail":` + jsonString(detail) +
		`,"error":` + jsonString(code) + extra + `}`
}

// The problems of the contract, with their titles and details written out
// here rather than read from the handler's table, so that a wrong code,
// title, detail or member order fails a test.
var (
	problemMethodNotAllowed = problemJSON("method_not_allowed", 405, "Method not allowed",
		"Orders are submitted with POST.", "")
	problemMissingKey = problemJSON("missing_idempotency_key", 400, "Idempotency-Key is missing",
		"Every order needs an Idempotency-Key header, repeated unchanged on every retry.", "")
	problemInvalidKey = problemJSON("invalid_idempotency_key", 400, "Idempotency-Key is invalid",
		"An Idempotency-Key is 1 to 255 printable ASCII characters, such as a UUID; it may be sent as a quoted string.", "")
	problemUnreadableBody = problemJSON("unreadable_body", 400, "Request body could not be read",
		"The request body ended early or could not be read; retry under the same key.", "")
	problemBodyTooLarge = problemJSON("body_too_large", 413, "Request body is too large",
		"An order body is at most 64 KiB.", "")
	problemInProgress = problemJSON("in_progress", 409, "A request is outstanding for this Idempotency-Key",
		"Another request with this Idempotency-Key is being processed; retry after retryAfter seconds at the latest.", `,"retryAfter":60`)
	problemKeyReused = problemJSON("idempotency_key_reused", 422, "Idempotency-Key is already used",
		"This Idempotency-Key was used for a different order; use a new key for a new order.", "")
	problemInvalidOrder = problemJSON("invalid_order", 422, "Invalid order",
		`The body must be a JSON object with symbol (a non-empty string), side ("buy" or "sell") and quantity (a positive integer).`, "")
	problemUnavailable = problemJSON("storage_unavailable", 503, "Storage unavailable",
		"The order store failed; no order was placed under this key. Retry under the same key.", "")
	problemInternal = problemJSON("internal_error", 500, "Internal error",
		"The Worker failed unexpectedly; retry under the same key.", "")
	problemMissingToken = problemJSON("unauthorized", 401, "Missing API token",
		"Send a client token as Authorization: Bearer <token>.", "")
	problemInvalidToken = problemJSON("unauthorized", 401, "Invalid API token",
		"The bearer token belongs to no client.", "")
)

func TestProblemJSON(t *testing.T) {
	// The helper itself, against a body written out by hand.
	got := problemJSON("in_progress", 409, `T "q" <&>`, `d\x`, `,"retryAfter":60`)
	want := `{"type":"tag:edge-orders,2026:in_progress","title":"T \"q\" <&>","status":409,"detail":"d\\x","error":"in_progress","retryAfter":60}`
	if got != want {
		t.Errorf("problemJSON = %s, want %s", got, want)
	}
}

// asHTTP serves h as a net/http handler, so tests can use httptest.
func asHTTP(h workers.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := h.ServeWorker(r.Context(), &workers.Request{Method: r.Method, URL: r.URL.String(), Header: r.Header, Body: r.Body})
		for _, f := range resp.Header {
			w.Header().Add(f.Name, f.Value)
		}
		w.WriteHeader(resp.Status)
		w.Write(resp.Body)
	})
}

// newService returns a service over store with a fixed receipt clock.
func newService(store kv.Store) *intake.Service {
	return intake.New(store, &intake.Options{Now: func() time.Time { return acceptedAt }})
}

// newHandler returns an open handler over store with a fixed receipt clock.
func newHandler(store kv.Store) workers.Handler {
	return httpapi.New(newService(store), nil)
}

// request builds a request; key nil sends no Idempotency-Key header.
func request(method string, key *string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, "/orders", body)
	if key != nil {
		r.Header.Set("Idempotency-Key", *key)
	}
	return r
}

func ptr(s string) *string { return &s }

// response is what a test checks of a response.
type response struct {
	status int
	body   string
	header map[string]string // headers that must have exactly this value; "" means absent
}

func serve(h workers.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	asHTTP(h).ServeHTTP(w, r)
	return w
}

// Content types: receipts are plain JSON, every error is a problem.
const (
	jsonType    = "application/json"
	problemType = "application/problem+json"
)

// check compares w with want. A 2xx must be a receipt in application/json,
// anything else a problem in application/problem+json.
func check(t *testing.T, w *httptest.ResponseRecorder, want response) {
	t.Helper()
	if got := w.Code; got != want.status {
		t.Errorf("status = %d, want %d", got, want.status)
	}
	if got := w.Body.String(); got != want.body {
		t.Errorf("body = %s, want %s", got, want.body)
	}
	wantType := problemType
	if want.status >= 200 && want.status < 300 {
		wantType = jsonType
	}
	if got := w.Header().Values("Content-Type"); len(got) != 1 || got[0] != wantType {
		t.Errorf("Content-Type = %q, want just %q", got, wantType)
	}
	for name, v := range want.header {
		if got := w.Header().Get(name); got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
}

// hugeBody is a valid order one byte over the default body limit.
var hugeBody = validBody + strings.Repeat(" ", intake.DefaultMaxBodyBytes+1-len(validBody))

// putClaim stores a claim on key, as a request in progress does.
func putClaim(t *testing.T, m *kv.Memory, key string) {
	t.Helper()
	if err := m.Put(context.Background(), "pending:"+key, kv.Entry{Value: "1"}, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name  string
		store func(*kv.Memory) kv.Store // nil: the Memory as it is
		setup func(*testing.T, *kv.Memory)
		req   *http.Request
		want  response
		// noStorage says the request must be refused before any KV call.
		noStorage bool
	}{
		{
			name:      "GET is method not allowed",
			req:       request(http.MethodGet, ptr("k"), nil),
			want:      response{405, problemMethodNotAllowed, map[string]string{"Allow": "POST", "Idempotent-Replay": ""}},
			noStorage: true,
		},
		{
			name:      "PUT is method not allowed",
			req:       request(http.MethodPut, ptr("k"), strings.NewReader(validBody)),
			want:      response{405, problemMethodNotAllowed, map[string]string{"Allow": "POST"}},
			noStorage: true,
		},
		{
			name:      "DELETE is method not allowed",
			req:       request(http.MethodDelete, nil, nil),
			want:      response{405, problemMethodNotAllowed, map[string]string{"Allow": "POST"}},
			noStorage: true,
		},
		{
			name:      "OPTIONS is method not allowed",
			req:       request(http.MethodOptions, nil, nil),
			want:      response{405, problemMethodNotAllowed, map[string]string{"Allow": "POST"}},
			noStorage: true,
		},
		{
			name:      "lower-case post is method not allowed",
			req:       request("post", ptr("k"), strings.NewReader(validBody)),
			want:      response{405, problemMethodNotAllowed, map[string]string{"Allow": "POST"}},
			noStorage: true,
		},
		{
			name:      "no key is missing key",
			req:       request(http.MethodPost, nil, strings.NewReader(validBody)),
			want:      response{400, problemMissingKey, map[string]string{"Allow": "", "WWW-Authenticate": ""}},
			noStorage: true,
		},
		{
			name:      "empty key is missing key",
			req:       request(http.MethodPost, ptr(""), strings.NewReader(validBody)),
			want:      response{400, problemMissingKey, nil},
			noStorage: true,
		},
		{
			name:  "claimed key is in progress",
			setup: func(t *testing.T, m *kv.Memory) { putClaim(t, m, "k") },
			req:   request(http.MethodPost, ptr("k"), strings.NewReader(validBody)),
			want:  response{409, problemInProgress, map[string]string{"Retry-After": "60"}},
		},
		{
			name: "invalid order is unprocessable",
			req:  request(http.MethodPost, ptr("k"), strings.NewReader(`{"symbol":"AAPL","side":"hold","quantity":10}`)),
			want: response{422, problemInvalidOrder, nil},
		},
		{
			name: "non-JSON order is unprocessable",
			req:  request(http.MethodPost, ptr("k"), strings.NewReader(`quantity=10`)),
			want: response{422, problemInvalidOrder, nil},
		},
		{
			name:      "256-character key is invalid key",
			req:       request(http.MethodPost, ptr(strings.Repeat("k", 256)), strings.NewReader(validBody)),
			want:      response{400, problemInvalidKey, nil},
			noStorage: true,
		},
		{
			name:      "oversized body is too large",
			req:       request(http.MethodPost, ptr("k"), strings.NewReader(hugeBody)),
			want:      response{413, problemBodyTooLarge, nil},
			noStorage: true,
		},
		{
			name:      "unreadable body is unreadable",
			req:       request(http.MethodPost, ptr("k"), io.MultiReader(strings.NewReader(`{"sym`), errorReader{})),
			want:      response{400, problemUnreadableBody, nil},
			noStorage: true,
		},
		{
			name:  "storage failure is unavailable",
			store: func(m *kv.Memory) kv.Store { return failingStore{m} },
			req:   request(http.MethodPost, ptr("k"), strings.NewReader(validBody)),
			want:  response{503, problemUnavailable, map[string]string{"Retry-After": "1"}},
		},
		// Checks run in the README's order: method, key, body size, then the
		// lifecycle (stored receipt, claim, validation).
		{
			name:      "wrong method wins over a missing key and a huge body",
			req:       request(http.MethodGet, nil, strings.NewReader(hugeBody)),
			want:      response{405, problemMethodNotAllowed, map[string]string{"Allow": "POST"}},
			noStorage: true,
		},
		{
			name:      "missing key wins over a huge body",
			req:       request(http.MethodPost, nil, strings.NewReader(hugeBody)),
			want:      response{400, problemMissingKey, nil},
			noStorage: true,
		},
		{
			name:      "256-character key wins over a huge body",
			req:       request(http.MethodPost, ptr(strings.Repeat("k", 256)), strings.NewReader(hugeBody)),
			want:      response{400, problemInvalidKey, nil},
			noStorage: true,
		},
		{
			name:      "huge body wins over a storage failure",
			store:     func(m *kv.Memory) kv.Store { return failingStore{m} },
			req:       request(http.MethodPost, ptr("k"), strings.NewReader(hugeBody)),
			want:      response{413, problemBodyTooLarge, nil},
			noStorage: true,
		},
		{
			name:  "claimed key wins over an invalid order",
			setup: func(t *testing.T, m *kv.Memory) { putClaim(t, m, "k") },
			req:   request(http.MethodPost, ptr("k"), strings.NewReader(`{}`)),
			want:  response{409, problemInProgress, map[string]string{"Retry-After": "60"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemory()
			if tc.setup != nil {
				tc.setup(t, mem)
			}
			var store kv.Store = mem
			if tc.store != nil {
				store = tc.store(mem)
			}
			rec := &recordingStore{Store: store}
			w := serve(newHandler(rec), tc.req)
			check(t, w, tc.want)
			if strings.Contains(w.Body.String(), secret) {
				t.Errorf("body %s leaks the storage error", w.Body.String())
			}
			if s := tc.want.status; s != http.StatusConflict && s != http.StatusServiceUnavailable {
				if got := w.Header().Get("Retry-After"); got != "" {
					t.Errorf("Retry-After = %q on a %d, want none", got, s)
				}
			}
			if got := rec.Calls(); tc.noStorage && len(got) != 0 {
				t.Errorf("storage calls = %q, want none", got)
			}
			if _, err := mem.Get(context.Background(), "result:k"); !errors.Is(err, kv.ErrNotFound) {
				t.Errorf("result:k after a %d: error = %v, want ErrNotFound", w.Code, err)
			}
		})
	}
}

// TestInProgressAnnouncesPendingTTL checks retryAfter and Retry-After follow
// the configured claim TTL rather than a fixed 60.
func TestInProgressAnnouncesPendingTTL(t *testing.T) {
	mem := kv.NewMemory()
	putClaim(t, mem, "k")
	h := httpapi.New(intake.New(mem, &intake.Options{PendingTTL: 150 * time.Second}), nil)
	w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
	want := problemJSON("in_progress", 409, "A request is outstanding for this Idempotency-Key",
		"Another request with this Idempotency-Key is being processed; retry after retryAfter seconds at the latest.", `,"retryAfter":150`)
	check(t, w, response{409, want, map[string]string{"Retry-After": "150"}})
}

type errorReader struct{}

func (errorReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// orderID returns the orderId of the receipt in w, failing the test if w
// holds no receipt.
func orderID(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var receipt struct{ OrderID string }
	if err := json.Unmarshal(w.Body.Bytes(), &receipt); err != nil || receipt.OrderID == "" {
		t.Fatalf("%d body %s: %v, want a receipt", w.Code, w.Body, err)
	}
	return receipt.OrderID
}

func TestNewOrderThenReplay(t *testing.T) {
	mem := kv.NewMemory()
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

func TestPanicIsInternalError(t *testing.T) {
	store := &panickyStore{Store: kv.NewMemory()}
	h := newHandler(store)
	store.panics.Store(true)
	t.Run("panicking request is internal error", func(t *testing.T) {
		w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
		check(t, w, response{500, problemInternal, nil})
		if strings.Contains(w.Body.String(), "exploded") {
			t.Errorf("body %s leaks the panic value", w.Body)
		}
	})
	store.panics.Store(false)
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
	store := &panickyStore{Store: kv.NewMemory()}
	srv := httptest.NewServer(asHTTP(newHandler(store)))
	defer srv.Close()
	post := func(t *testing.T, key string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(validBody))
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
		return resp, string(b)
	}
	store.panics.Store(true)
	resp, body := post(t, "s")
	if resp.StatusCode != 500 || body != problemInternal || resp.Header.Get("Content-Type") != problemType {
		t.Fatalf("panicking request = %d %s %s, want 500 %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, problemType, problemInternal)
	}
	store.panics.Store(false)
	first, created := post(t, "s")
	if first.StatusCode != http.StatusCreated || first.Header.Get("Content-Type") != jsonType {
		t.Fatalf("after a panic: status = %d %s %s, want 201 %s", first.StatusCode, first.Header.Get("Content-Type"), created, jsonType)
	}
	again, replayed := post(t, "s")
	if again.StatusCode != http.StatusOK || replayed != created || again.Header.Get("Idempotent-Replay") != "true" {
		t.Errorf("replay = %d %s Idempotent-Replay %q, want 200 %s true", again.StatusCode, replayed, again.Header.Get("Idempotent-Replay"), created)
	}
	_, quoted := post(t, `"s"`)
	if quoted != created {
		t.Errorf("replay under the quoted key = %s, want %s", quoted, created)
	}
}

func TestMisconfigured(t *testing.T) {
	const detail = "RESULT_TTL_SECONDS: 5 is under KV's minimum expiration TTL of 60 seconds"
	var logged []httpapi.LogLine
	h := httpapi.Misconfigured(detail, func(l httpapi.LogLine) { logged = append(logged, l) })
	want := problemJSON("misconfigured", 500, "Worker misconfigured", detail, "")
	tests := []struct {
		name string
		req  *http.Request
	}{
		{"POST is misconfigured", request(http.MethodPost, ptr("k"), strings.NewReader(validBody))},
		{"GET is misconfigured", request(http.MethodGet, nil, nil)},
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
	wantLine := httpapi.LogLine{Outcome: "misconfigured", Status: 500, Error: detail}
	if len(logged) != len(tests) {
		t.Fatalf("logged %d lines, want %d", len(logged), len(tests))
	}
	for i, got := range logged {
		if got != wantLine {
			t.Errorf("log line %d = %+v, want %+v", i, got, wantLine)
		}
	}
	if got := string(logged[0].JSON()); !strings.Contains(got, `"error":"`+detail+`"`) {
		t.Errorf("log JSON = %s, want the detail as its error", got)
	}
}

func TestMisconfiguredWithoutLog(t *testing.T) {
	w := serve(httpapi.Misconfigured("the ORDERS KV namespace binding is missing; see wrangler.toml", nil), request(http.MethodPost, ptr("k"), nil))
	want := problemJSON("misconfigured", 500, "Worker misconfigured", "the ORDERS KV namespace binding is missing; see wrangler.toml", "")
	check(t, w, response{500, want, nil})
}

func TestLogLine(t *testing.T) {
	mem := kv.NewMemory()
	store := &panickyStore{Store: mem}
	h := httpapi.New(newService(store), nil)
	var lines []httpapi.LogLine
	h.Log = func(l httpapi.LogLine) { lines = append(lines, l) }
	putClaim(t, mem, "busy")
	failing := httpapi.New(intake.New(failingStore{mem}, nil), nil)
	failing.Log = h.Log

	w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
	id := orderID(t, w)
	tests := []struct {
		name  string
		serve func() *httptest.ResponseRecorder
		want  httpapi.LogLine
	}{
		{"created logs the order", func() *httptest.ResponseRecorder { return w },
			httpapi.LogLine{Outcome: "created", Key: "k", Status: 201, OrderID: id}},
		{"replayed logs the same order", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
		}, httpapi.LogLine{Outcome: "replayed", Key: "k", Status: 200, OrderID: id}},
		{"replay under the quoted key logs the bare key", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr(`"k"`), strings.NewReader(validBody)))
		}, httpapi.LogLine{Outcome: "replayed", Key: "k", Status: 200, OrderID: id}},
		{"reused key logs key_reused without the order", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(`{"symbol":"MSFT","side":"buy","quantity":10}`)))
		}, httpapi.LogLine{Outcome: "key_reused", Key: "k", Status: 422, Error: "intake: idempotency key reused for a different order"}},
		{"in progress logs the code", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr("busy"), strings.NewReader(validBody)))
		}, httpapi.LogLine{Outcome: "in_progress", Key: "busy", Status: 409, Error: "intake: request with this key in progress"}},
		{"method not allowed logs the code", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodGet, ptr("k"), nil))
		}, httpapi.LogLine{Outcome: "method_not_allowed", Status: 405, Error: "httpapi: method not allowed"}},
		{"missing key logs no key", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, nil, strings.NewReader(validBody)))
		}, httpapi.LogLine{Outcome: "missing_idempotency_key", Status: 400, Error: "httpapi: missing Idempotency-Key"}},
		{"invalid order logs the code", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr("bad"), strings.NewReader(`{}`)))
		}, httpapi.LogLine{Outcome: "invalid_order", Key: "bad", Status: 422, Error: "order: invalid order: symbol must be a non-empty string"}},
		{"storage failure logs storage_error", func() *httptest.ResponseRecorder {
			return serve(failing, request(http.MethodPost, ptr("k2"), strings.NewReader(validBody)))
		}, // The operator needs the cause; only the client must not see it.
			httpapi.LogLine{Outcome: "storage_error", Key: "k2", Status: 503, Error: "intake: storage unavailable: kv: " + secret}},
		{"panic logs internal_error", func() *httptest.ResponseRecorder {
			store.panics.Store(true)
			defer store.panics.Store(false)
			return serve(h, request(http.MethodPost, ptr("k3"), strings.NewReader(validBody)))
		}, httpapi.LogLine{Outcome: "internal_error", Key: "k3", Status: 500}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.serve()
			if len(lines) != i+1 {
				t.Fatalf("log lines = %d, want %d (one per request)", len(lines), i+1)
			}
			got := lines[i]
			if got.Status != w.Code {
				t.Errorf("logged status %d, but the response was %d", got.Status, w.Code)
			}
			if got.Millis < 0 {
				t.Errorf("Millis = %d, want >= 0", got.Millis)
			}
			got.Millis = 0
			if got != tc.want {
				t.Errorf("log line = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLogLineJSON(t *testing.T) {
	tests := []struct {
		name string
		line httpapi.LogLine
		want string
	}{
		{"created", httpapi.LogLine{Outcome: "created", Key: "k1", Status: 201, OrderID: "id", Millis: 12},
			`{"outcome":"created","key":"k1","orderId":"id","status":201,"ms":12}`},
		{"client comes before the key", httpapi.LogLine{Outcome: "replayed", Client: "alice", Key: "k1", Status: 200, OrderID: "id", Millis: 3},
			`{"outcome":"replayed","client":"alice","key":"k1","orderId":"id","status":200,"ms":3}`},
		{"empty fields are left out", httpapi.LogLine{Outcome: "missing_idempotency_key", Status: 400},
			`{"outcome":"missing_idempotency_key","status":400,"ms":0}`},
		{"a hostile key stays one JSON string", httpapi.LogLine{Outcome: "in_progress", Key: "a\"b\\c\n{", Status: 409, Error: "x"},
			`{"outcome":"in_progress","key":"a\"b\\c\n{","error":"x","status":409,"ms":0}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.line.JSON()
			if string(got) != tc.want {
				t.Errorf("JSON() = %s, want %s", got, tc.want)
			}
			if !json.Valid(got) {
				t.Errorf("JSON() = %s is not valid JSON", got)
			}
		})
	}
}
