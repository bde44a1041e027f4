package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"edge-orders/httpapi"
	"edge-orders/intake"
	"edge-orders/kv"
	"edge-orders/worker"
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

// asHTTP serves h as a net/http handler, so tests can use httptest.
func asHTTP(h worker.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := h.ServeWorker(r.Context(), &worker.Request{Method: r.Method, URL: r.URL.String(), Header: r.Header, Body: r.Body})
		for _, f := range resp.Header {
			w.Header().Add(f.Name, f.Value)
		}
		w.WriteHeader(resp.Status)
		w.Write(resp.Body)
	})
}

// newHandler returns a handler over store with a fixed receipt clock.
func newHandler(store kv.Store) worker.Handler {
	return httpapi.New(intake.New(store, &intake.Options{Now: func() time.Time { return acceptedAt }}), nil)
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

func serve(h worker.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	asHTTP(h).ServeHTTP(w, r)
	return w
}

func check(t *testing.T, w *httptest.ResponseRecorder, want response) {
	t.Helper()
	if got := w.Code; got != want.status {
		t.Errorf("status = %d, want %d", got, want.status)
	}
	if got := w.Body.String(); got != want.body {
		t.Errorf("body = %s, want %s", got, want.body)
	}
	if got, want := w.Header().Get("Content-Type"), "application/json"; got != want {
		t.Errorf("Content-Type = %q, want %q", got, want)
	}
	for name, v := range want.header {
		if got := w.Header().Get(name); got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
}

// hugeBody is a valid order one byte over the default body limit.
var hugeBody = validBody + strings.Repeat(" ", intake.DefaultMaxBodyBytes+1-len(validBody))

func TestErrors(t *testing.T) {
	tests := []struct {
		name  string
		store func(*kv.Memory) kv.Store // nil: the Memory as it is
		setup func(*testing.T, *kv.Memory)
		req   *http.Request
		want  response
	}{
		{
			name: "GET is method not allowed",
			req:  request(http.MethodGet, ptr("k"), nil),
			want: response{405, `{"error":"method_not_allowed"}`, map[string]string{"Allow": "POST", "Idempotent-Replay": ""}},
		},
		{
			name: "PUT is method not allowed",
			req:  request(http.MethodPut, ptr("k"), strings.NewReader(validBody)),
			want: response{405, `{"error":"method_not_allowed"}`, map[string]string{"Allow": "POST"}},
		},
		{
			name: "DELETE is method not allowed",
			req:  request(http.MethodDelete, nil, nil),
			want: response{405, `{"error":"method_not_allowed"}`, map[string]string{"Allow": "POST"}},
		},
		{
			name: "OPTIONS is method not allowed",
			req:  request(http.MethodOptions, nil, nil),
			want: response{405, `{"error":"method_not_allowed"}`, map[string]string{"Allow": "POST"}},
		},
		{
			name: "lower-case post is method not allowed",
			req:  request("post", ptr("k"), strings.NewReader(validBody)),
			want: response{405, `{"error":"method_not_allowed"}`, map[string]string{"Allow": "POST"}},
		},
		{
			name: "no key is missing key",
			req:  request(http.MethodPost, nil, strings.NewReader(validBody)),
			want: response{400, `{"error":"missing_idempotency_key"}`, map[string]string{"Allow": ""}},
		},
		{
			name: "empty key is missing key",
			req:  request(http.MethodPost, ptr(""), strings.NewReader(validBody)),
			want: response{400, `{"error":"missing_idempotency_key"}`, nil},
		},
		{
			name: "claimed key is in progress",
			setup: func(t *testing.T, m *kv.Memory) {
				if err := m.Put(context.Background(), "pending:k", kv.Entry{Value: "1"}, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
					t.Fatal(err)
				}
			},
			req:  request(http.MethodPost, ptr("k"), strings.NewReader(validBody)),
			want: response{409, `{"error":"in_progress","retryAfter":60}`, map[string]string{"Retry-After": "60"}},
		},
		{
			name: "invalid order is unprocessable",
			req:  request(http.MethodPost, ptr("k"), strings.NewReader(`{"symbol":"AAPL","side":"hold","quantity":10}`)),
			want: response{422, `{"error":"invalid_order"}`, nil},
		},
		{
			name: "non-JSON order is unprocessable",
			req:  request(http.MethodPost, ptr("k"), strings.NewReader(`quantity=10`)),
			want: response{422, `{"error":"invalid_order"}`, nil},
		},
		{
			name: "too-long key is invalid key",
			req:  request(http.MethodPost, ptr(strings.Repeat("k", intake.MaxKeyBytes+1)), strings.NewReader(validBody)),
			want: response{400, `{"error":"invalid_idempotency_key"}`, nil},
		},
		{
			name: "oversized body is too large",
			req:  request(http.MethodPost, ptr("k"), strings.NewReader(hugeBody)),
			want: response{413, `{"error":"body_too_large"}`, nil},
		},
		{
			name: "unreadable body is unreadable",
			req:  request(http.MethodPost, ptr("k"), io.MultiReader(strings.NewReader(`{"sym`), errorReader{})),
			want: response{400, `{"error":"unreadable_body"}`, nil},
		},
		{
			name:  "storage failure is unavailable",
			store: func(m *kv.Memory) kv.Store { return failingStore{m} },
			req:   request(http.MethodPost, ptr("k"), strings.NewReader(validBody)),
			want:  response{503, `{"error":"storage_unavailable"}`, map[string]string{"Retry-After": "1"}},
		},
		// Checks run in the README's order: method, key, body size, then the
		// lifecycle (stored receipt, claim, validation).
		{
			name: "wrong method wins over a missing key and a huge body",
			req:  request(http.MethodGet, nil, strings.NewReader(hugeBody)),
			want: response{405, `{"error":"method_not_allowed"}`, map[string]string{"Allow": "POST"}},
		},
		{
			name: "missing key wins over a huge body",
			req:  request(http.MethodPost, nil, strings.NewReader(hugeBody)),
			want: response{400, `{"error":"missing_idempotency_key"}`, nil},
		},
		{
			name: "too-long key wins over a huge body",
			req:  request(http.MethodPost, ptr(strings.Repeat("k", intake.MaxKeyBytes+1)), strings.NewReader(hugeBody)),
			want: response{400, `{"error":"invalid_idempotency_key"}`, nil},
		},
		{
			name:  "huge body wins over a storage failure",
			store: func(m *kv.Memory) kv.Store { return failingStore{m} },
			req:   request(http.MethodPost, ptr("k"), strings.NewReader(hugeBody)),
			want:  response{413, `{"error":"body_too_large"}`, nil},
		},
		{
			name: "claimed key wins over an invalid order",
			setup: func(t *testing.T, m *kv.Memory) {
				if err := m.Put(context.Background(), "pending:k", kv.Entry{Value: "1"}, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
					t.Fatal(err)
				}
			},
			req:  request(http.MethodPost, ptr("k"), strings.NewReader(`{}`)),
			want: response{409, `{"error":"in_progress","retryAfter":60}`, map[string]string{"Retry-After": "60"}},
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
			w := serve(newHandler(store), tc.req)
			check(t, w, tc.want)
			if strings.Contains(w.Body.String(), secret) {
				t.Errorf("body %s leaks the storage error", w.Body.String())
			}
			if s := tc.want.status; s != http.StatusConflict && s != http.StatusServiceUnavailable {
				if got := w.Header().Get("Retry-After"); got != "" {
					t.Errorf("Retry-After = %q on a %d, want none", got, s)
				}
			}
			if _, err := mem.Get(context.Background(), "result:k"); !errors.Is(err, kv.ErrNotFound) {
				t.Errorf("result:k after a %d: error = %v, want ErrNotFound", w.Code, err)
			}
		})
	}
}

type errorReader struct{}

func (errorReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewOrderThenReplay(t *testing.T) {
	mem := kv.NewMemory()
	h := newHandler(mem)

	w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(`{"quantity":10,"side":"buy","symbol":"AAPL","note":"x"}`)))
	var receipt struct{ OrderID string }
	if err := json.Unmarshal(w.Body.Bytes(), &receipt); err != nil {
		t.Fatalf("201 body %s: %v", w.Body, err)
	}
	if !uuidV4.MatchString(receipt.OrderID) {
		t.Errorf("orderId = %q, want a lowercase version 4 UUID", receipt.OrderID)
	}
	// The members come in the reference's order, whatever the request's.
	created := `{"orderId":"` + receipt.OrderID + `","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2026-03-14T15:09:26.535Z"}`
	t.Run("new order is created", func(t *testing.T) {
		check(t, w, response{201, created, map[string]string{"Idempotent-Replay": ""}})
	})
	t.Run("stored key replays the body", func(t *testing.T) {
		w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
		check(t, w, response{200, created, map[string]string{"Idempotent-Replay": "true"}})
	})
	t.Run("stored key replays whatever the body", func(t *testing.T) {
		w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(`not json`)))
		check(t, w, response{200, created, map[string]string{"Idempotent-Replay": "true"}})
	})
	t.Run("other key creates another order", func(t *testing.T) {
		w := serve(h, request(http.MethodPost, ptr("k2"), strings.NewReader(validBody)))
		if w.Code != http.StatusCreated || w.Body.String() == created {
			t.Errorf("status = %d body = %s, want 201 with a new order", w.Code, w.Body)
		}
	})
}

// TestReplaysReferenceReceipt checks a receipt stored by the TypeScript
// Worker is replayed byte for byte.
func TestReplaysReferenceReceipt(t *testing.T) {
	const stored = "{ \"orderId\":\"0b7e2c57-8f53-4c39-9f5e-0d2d3c0b2a61\", \"symbol\":\"\\u00e9<&>\" }"
	mem := kv.NewMemory()
	if err := mem.Put(context.Background(), "result:ts", kv.Entry{Value: stored}, kv.PutOptions{TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	w := serve(newHandler(mem), request(http.MethodPost, ptr("ts"), strings.NewReader(validBody)))
	check(t, w, response{200, stored, map[string]string{"Idempotent-Replay": "true"}})
}

func TestPanicIsInternalError(t *testing.T) {
	store := &panickyStore{Store: kv.NewMemory()}
	h := newHandler(store)
	store.panics.Store(true)
	t.Run("panicking request is internal error", func(t *testing.T) {
		w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
		check(t, w, response{500, `{"error":"internal_error"}`, nil})
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
	if resp.StatusCode != 500 || body != `{"error":"internal_error"}` {
		t.Fatalf("panicking request = %d %s, want 500 {\"error\":\"internal_error\"}", resp.StatusCode, body)
	}
	store.panics.Store(false)
	first, created := post(t, "s")
	if first.StatusCode != http.StatusCreated {
		t.Fatalf("after a panic: status = %d %s, want 201", first.StatusCode, created)
	}
	again, replayed := post(t, "s")
	if again.StatusCode != http.StatusOK || replayed != created || again.Header.Get("Idempotent-Replay") != "true" {
		t.Errorf("replay = %d %s Idempotent-Replay %q, want 200 %s true", again.StatusCode, replayed, again.Header.Get("Idempotent-Replay"), created)
	}
}

func TestMisconfigured(t *testing.T) {
	var logged []httpapi.LogLine
	h := httpapi.Misconfigured("the ORDERS KV namespace binding is missing", func(l httpapi.LogLine) { logged = append(logged, l) })
	tests := []struct {
		name string
		req  *http.Request
	}{
		{"POST is misconfigured", request(http.MethodPost, ptr("k"), strings.NewReader(validBody))},
		{"GET is misconfigured", request(http.MethodGet, nil, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := serve(h, tc.req)
			check(t, w, response{500, `{"error":"misconfigured"}`, nil})
			if strings.Contains(w.Body.String(), "ORDERS") {
				t.Errorf("body %s leaks the configuration detail", w.Body)
			}
		})
	}
	want := httpapi.LogLine{Outcome: "misconfigured", Status: 500, Error: "the ORDERS KV namespace binding is missing"}
	if len(logged) != len(tests) || logged[0] != want {
		t.Fatalf("logged %+v, want %d lines like %+v", logged, len(tests), want)
	}
}

func TestLogLine(t *testing.T) {
	mem := kv.NewMemory()
	store := &panickyStore{Store: mem}
	h := httpapi.New(intake.New(store, &intake.Options{Now: func() time.Time { return acceptedAt }}), nil)
	var lines []httpapi.LogLine
	h.Log = func(l httpapi.LogLine) { lines = append(lines, l) }
	if err := mem.Put(context.Background(), "pending:busy", kv.Entry{Value: "1"}, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
		t.Fatal(err)
	}
	failing := httpapi.New(intake.New(failingStore{mem}, nil), nil)
	failing.Log = h.Log

	w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
	var receipt struct{ OrderID string }
	if err := json.Unmarshal(w.Body.Bytes(), &receipt); err != nil || receipt.OrderID == "" {
		t.Fatalf("201 body %s: %v, want a receipt", w.Body, err)
	}
	tests := []struct {
		name  string
		serve func() *httptest.ResponseRecorder
		want  httpapi.LogLine
	}{
		{"created logs the order", func() *httptest.ResponseRecorder { return w },
			httpapi.LogLine{Outcome: "created", Key: "k", Status: 201, OrderID: receipt.OrderID}},
		{"replayed logs the same order", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
		}, httpapi.LogLine{Outcome: "replayed", Key: "k", Status: 200, OrderID: receipt.OrderID}},
		{"in progress logs the code", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr("busy"), strings.NewReader(validBody)))
		}, httpapi.LogLine{Outcome: "in_progress", Key: "busy", Status: 409, Error: "intake: request with this key in progress"}},
		{"method not allowed logs the code", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodGet, ptr("k"), nil))
		}, httpapi.LogLine{Outcome: "method_not_allowed", Key: "k", Status: 405}},
		{"missing key logs no key", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, nil, strings.NewReader(validBody)))
		}, httpapi.LogLine{Outcome: "missing_idempotency_key", Status: 400}},
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
