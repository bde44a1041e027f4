package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/workers"
)

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
		"Orders are submitted with POST; GET with an Idempotency-Key looks one up.", "")
	problemMissingKey = problemJSON("missing_idempotency_key", 400, "Idempotency-Key is missing",
		"Every order needs an Idempotency-Key header, repeated unchanged on every retry.", "")
	problemInvalidKey = problemJSON("invalid_idempotency_key", 400, "Idempotency-Key is invalid",
		"An Idempotency-Key is 1 to 255 printable ASCII characters, such as a UUID, on one header line; it may be sent as a quoted string, and must be if it holds a comma.", "")
	problemUnreadableBody = problemJSON("unreadable_body", 400, "Request body could not be read",
		"The request body ended early or could not be read; retry under the same key.", "")
	problemBodyTooLarge = problemJSON("body_too_large", 413, "Request body is too large",
		"An order body is at most 64 KiB.", "")
	problemInProgress = problemJSON("in_progress", 409, "A request is outstanding for this Idempotency-Key",
		"Another request with this Idempotency-Key is being processed; retry after retryAfter seconds at the latest.", `,"retryAfter":60`)
	problemKeyReused = problemJSON("idempotency_key_reused", 422, "Idempotency-Key is already used",
		"This Idempotency-Key was used for a different order; use a new key for a new order.", "")
	problemNotFound = problemJSON("not_found", 404, "No order for this Idempotency-Key",
		"No receipt is stored under this Idempotency-Key, and no request holds it.", "")
	problemInvalidOrder = problemJSON("invalid_order", 422, "Invalid order",
		`The body must be a JSON object with symbol (a non-empty string), side ("buy" or "sell") and quantity (a positive integer).`, "")
	problemUnavailable = problemJSON("storage_unavailable", 503, "Storage unavailable",
		"The order store failed before this order's outcome was stored. Retry under the same Idempotency-Key: the retry places the order at most once.", "")
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

// TestProblemLimitsMatchConstants checks that the limits the problems
// promise are the ones the handler enforces.
func TestProblemLimitsMatchConstants(t *testing.T) {
	if want := "1 to " + strconv.Itoa(httpapi.MaxIdempotencyKeyBytes) + " printable"; !strings.Contains(problemInvalidKey, want) {
		t.Errorf("invalid key problem %s, want it to say %q", problemInvalidKey, want)
	}
	if want := "at most " + strconv.Itoa(httpapi.MaxBodyBytes>>10) + " KiB"; !strings.Contains(problemBodyTooLarge, want) {
		t.Errorf("body too large problem %s, want it to say %q", problemBodyTooLarge, want)
	}
}

func TestErrors(t *testing.T) {
	// Every 405 tells the client what it may send instead.
	allow := map[string]string{"Allow": "GET, HEAD, POST"}
	tests := []struct {
		name  string
		store func(*kv.MemoryNamespace) kv.Namespace // nil: the Memory as it is
		setup func(*testing.T, *kv.MemoryNamespace)
		req   *http.Request
		want  response
		// noStorage says the request must be refused before any KV call.
		noStorage bool
	}{
		{
			name:      "GET without a key is missing key",
			req:       request(http.MethodGet, nil, nil),
			want:      response{400, problemMissingKey, map[string]string{"Allow": "", "Idempotent-Replay": "", "Link": policyLink}},
			noStorage: true,
		},
		{
			name:      "GET with an empty key is missing key",
			req:       request(http.MethodGet, ptr(""), nil),
			want:      response{400, problemMissingKey, map[string]string{"Allow": "", "Link": policyLink}},
			noStorage: true,
		},
		{
			name:      "HEAD without a key is missing key, as GET",
			req:       request(http.MethodHead, nil, nil),
			want:      response{400, problemMissingKey, map[string]string{"Allow": "", "Link": policyLink}},
			noStorage: true,
		},
		{
			name: "HEAD with a key is a lookup, as GET",
			req:  request(http.MethodHead, ptr("k"), nil),
			want: response{404, problemNotFound, map[string]string{"Allow": ""}},
		},
		{
			name:      "PUT is method not allowed",
			req:       request(http.MethodPut, ptr("k"), strings.NewReader(validBody)),
			want:      response{405, problemMethodNotAllowed, allow},
			noStorage: true,
		},
		{
			name:      "DELETE is method not allowed",
			req:       request(http.MethodDelete, nil, nil),
			want:      response{405, problemMethodNotAllowed, allow},
			noStorage: true,
		},
		{
			name:      "OPTIONS is method not allowed",
			req:       request(http.MethodOptions, nil, nil),
			want:      response{405, problemMethodNotAllowed, allow},
			noStorage: true,
		},
		{
			name:      "lower-case post is method not allowed",
			req:       request("post", ptr("k"), strings.NewReader(validBody)),
			want:      response{405, problemMethodNotAllowed, allow},
			noStorage: true,
		},
		{
			name:      "lower-case get with a key is method not allowed",
			req:       request("get", ptr("k"), nil),
			want:      response{405, problemMethodNotAllowed, allow},
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
			setup: func(t *testing.T, m *kv.MemoryNamespace) { putClaim(t, m, "k") },
			req:   request(http.MethodPost, ptr("k"), strings.NewReader(validBody)),
			want:  response{409, problemInProgress, map[string]string{"Retry-After": "60"}},
		},
		{
			name:  "lookup of a claimed key is in progress",
			setup: func(t *testing.T, m *kv.MemoryNamespace) { putClaim(t, m, "k") },
			req:   request(http.MethodGet, ptr("k"), nil),
			want:  response{409, problemInProgress, map[string]string{"Retry-After": "60"}},
		},
		{
			name: "lookup of a free key is not found",
			req:  request(http.MethodGet, ptr("k"), nil),
			want: response{404, problemNotFound, map[string]string{"Allow": "", "Idempotent-Replay": ""}},
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
			name:      "lookup of a 256-character key is invalid key",
			req:       request(http.MethodGet, ptr(strings.Repeat("k", 256)), nil),
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
			store: func(m *kv.MemoryNamespace) kv.Namespace { return failing(m) },
			req:   request(http.MethodPost, ptr("k"), strings.NewReader(validBody)),
			want:  response{503, problemUnavailable, map[string]string{"Retry-After": "1"}},
		},
		{
			name:  "storage failure in a lookup is unavailable",
			store: func(m *kv.MemoryNamespace) kv.Namespace { return failing(m) },
			req:   request(http.MethodGet, ptr("k"), nil),
			want:  response{503, problemUnavailable, map[string]string{"Retry-After": "1"}},
		},
		// Checks run in the contract's order (docs/http.md): method, key, body size, then the
		// lifecycle (stored receipt, claim, validation).
		{
			name:      "wrong method wins over a missing key and a huge body",
			req:       request(http.MethodPut, nil, strings.NewReader(hugeBody)),
			want:      response{405, problemMethodNotAllowed, allow},
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
			store:     func(m *kv.MemoryNamespace) kv.Namespace { return failing(m) },
			req:       request(http.MethodPost, ptr("k"), strings.NewReader(hugeBody)),
			want:      response{413, problemBodyTooLarge, nil},
			noStorage: true,
		},
		{
			name:  "claimed key wins over an invalid order",
			setup: func(t *testing.T, m *kv.MemoryNamespace) { putClaim(t, m, "k") },
			req:   request(http.MethodPost, ptr("k"), strings.NewReader(`{}`)),
			want:  response{409, problemInProgress, map[string]string{"Retry-After": "60"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemoryNamespace()
			if tc.setup != nil {
				tc.setup(t, mem)
			}
			var store kv.Namespace = mem
			if tc.store != nil {
				store = tc.store(mem)
			}
			rec := &kvtest.Recording{Namespace: store}
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
			if s := tc.want.status; s != http.StatusMethodNotAllowed {
				if got := w.Header().Get("Allow"); got != "" {
					t.Errorf("Allow = %q on a %d, want none", got, s)
				}
			}
			if got := rec.Calls(); tc.noStorage && len(got) != 0 {
				t.Errorf("storage calls = %v, want none", got)
			}
			if got := rec.Writes(); tc.req.Method == http.MethodGet && len(got) != 0 {
				t.Errorf("a GET wrote %v, want no writes", got)
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
	mem := kv.NewMemoryNamespace()
	putClaim(t, mem, "k")
	opts := serviceOptions()
	opts.PendingTTL = 150 * time.Second
	h := httpapi.New(intake.New(kv.NewStore(mem, nil), opts), httpapi.Options{})
	want := problemJSON("in_progress", 409, "A request is outstanding for this Idempotency-Key",
		"Another request with this Idempotency-Key is being processed; retry after retryAfter seconds at the latest.", `,"retryAfter":150`)
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		t.Run(method+" announces the claim TTL", func(t *testing.T) {
			w := serve(h, request(method, ptr("k"), strings.NewReader(validBody)))
			check(t, w, response{409, want, map[string]string{"Retry-After": "150"}})
		})
	}
}

// TestKeyProblemsLinkThePolicy checks that exactly the problems about the
// key (missing, invalid, in progress, reused) link the published policy,
// on a submission and a lookup alike, and that no other answer does.
func TestKeyProblemsLinkThePolicy(t *testing.T) {
	clients, err := auth.Parse("desk-a:" + strings.Repeat("t", 16))
	if err != nil {
		t.Fatal(err)
	}
	// handler returns a fresh handler over KV in memory, holding a claim
	// on "held" and the receipt of validBody under "used", whose gateway
	// answers with answer and whose limit allows nothing when limited.
	handler := func(t *testing.T, answer error, limited bool, opts httpapi.Options) workers.Handler {
		mem := kv.NewMemoryNamespace()
		putClaim(t, mem, "held")
		o := serviceOptions()
		if answer != nil {
			o.Gateway = &scriptedGateway{answers: []error{nil, answer}}
		}
		if limited {
			o.Limit = func(context.Context, string) (bool, error) { return false, nil }
		}
		h := httpapi.New(newServiceWith(mem, o), opts)
		if limited || opts.Clients != nil {
			return h
		}
		if w := serve(h, request(http.MethodPost, ptr("used"), strings.NewReader(validBody))); w.Code != http.StatusCreated {
			t.Fatalf("setting up: %d %s", w.Code, w.Body)
		}
		return h
	}
	other := `{"symbol":"MSFT","side":"sell","quantity":1}`
	tests := []struct {
		name     string
		h        func(t *testing.T) workers.Handler
		req      *http.Request
		wantCode string
	}{
		{"a missing key", nil, request(http.MethodPost, nil, strings.NewReader(validBody)), "missing_idempotency_key"},
		{"an invalid key", nil, request(http.MethodPost, ptr(strings.Repeat("k", 256)), strings.NewReader(validBody)), "invalid_idempotency_key"},
		{"a list of keys", nil, request(http.MethodPost, ptr("a, b"), strings.NewReader(validBody)), "invalid_idempotency_key"},
		{"a lookup of an invalid key", nil, request(http.MethodGet, ptr("\x7f"), nil), "invalid_idempotency_key"},
		{"a key in progress", nil, request(http.MethodPost, ptr("held"), strings.NewReader(validBody)), "in_progress"},
		{"a lookup of a key in progress", nil, request(http.MethodGet, ptr("held"), nil), "in_progress"},
		{"a key reused for another order", nil, request(http.MethodPost, ptr("used"), strings.NewReader(other)), "idempotency_key_reused"},
		// Not about the key:
		{"a wrong method", nil, request(http.MethodPut, ptr("k"), nil), "method_not_allowed"},
		{"an unreadable body, a 400 too", nil, request(http.MethodPost, ptr("k"), io.MultiReader(strings.NewReader(`{"sym`), errorReader{})), "unreadable_body"},
		{"a body too large", nil, request(http.MethodPost, ptr("k"), strings.NewReader(hugeBody)), "body_too_large"},
		{"an invalid order", nil, request(http.MethodPost, ptr("k"), strings.NewReader(`{}`)), "invalid_order"},
		{"a lookup of a free key", nil, request(http.MethodGet, ptr("free"), nil), "not_found"},
		{"no token", func(t *testing.T) workers.Handler { return handler(t, nil, false, httpapi.Options{Clients: clients}) },
			request(http.MethodPost, ptr("k"), strings.NewReader(validBody)), "unauthorized"},
		{"a rejection", func(t *testing.T) workers.Handler {
			return handler(t, &intake.Rejection{Reason: "halted"}, false, httpapi.Options{})
		},
			request(http.MethodPost, ptr("k"), strings.NewReader(validBody)), "order_rejected"},
		{"an unknown outcome", func(t *testing.T) workers.Handler { return handler(t, errors.New("timeout"), false, httpapi.Options{}) },
			request(http.MethodPost, ptr("k"), strings.NewReader(validBody)), "outcome_unknown"},
		{"a rate limit", func(t *testing.T) workers.Handler { return handler(t, nil, true, httpapi.Options{}) },
			request(http.MethodPost, ptr("k"), strings.NewReader(validBody)), "rate_limited"},
		{"storage failing", func(t *testing.T) workers.Handler {
			return httpapi.New(newService(failing(kv.NewMemoryNamespace())), httpapi.Options{})
		}, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)), "storage_unavailable"},
		{"a misconfigured Worker", func(t *testing.T) workers.Handler {
			return httpapi.Misconfigured("RESULT_TTL_SECONDS is 1", httpapi.Options{})
		},
			request(http.MethodPost, ptr("k"), strings.NewReader(validBody)), "misconfigured"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h workers.Handler
			if tc.h != nil {
				h = tc.h(t)
			} else {
				h = handler(t, nil, false, httpapi.Options{})
			}
			w := serve(h, tc.req)
			var p struct{ Error string }
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Error != tc.wantCode {
				t.Fatalf("got %d %s, want a %s problem", w.Code, w.Body, tc.wantCode)
			}
			want := ""
			if keyProblems[tc.wantCode] {
				want = policyLink
			}
			if got := w.Header().Values("Link"); len(got) > 1 || w.Header().Get("Link") != want {
				t.Errorf("Link = %q, want %q", got, want)
			}
		})
	}
}
