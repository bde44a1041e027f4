package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edge-orders/edge-orders/api/apitest"
	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// The origins of the CORS tests: the desk's front-end, which the Worker
// allows, and a page elsewhere, which it does not.
const (
	deskOrigin  = "https://desk.example.com"
	otherOrigin = "https://evil.example"
)

// The CORS headers the contract promises, written out here rather than
// read from the package.
const (
	allowMethods   = "GET, POST"
	allowHeaders   = "Idempotency-Key, Content-Type, Authorization"
	exposeHeaders  = "Idempotent-Replay, Retry-After, Link, Idempotency-Expires"
	preflightCache = "7200"
)

// corsHandler is a handler that allows deskOrigin, with its storage calls
// and rate-limit calls counted.
type corsHandler struct {
	*httpapi.Handler
	store  *kvtest.Recording
	mem    *kv.MemoryNamespace
	limits atomic.Int64
	lines  []eventlog.Line
}

// newCORSHandler returns a handler allowing origins; with tokens, it
// requires alice's token; limited says whether its rate limit refuses
// every new order.
func newCORSHandler(t *testing.T, origins []string, tokens, limited bool) *corsHandler {
	t.Helper()
	c := &corsHandler{mem: kv.NewMemoryNamespace()}
	c.store = &kvtest.Recording{Namespace: c.mem}
	opts := serviceOptions()
	opts.Gateway = haltGateway{}
	opts.Limit = func(context.Context, string) (bool, error) {
		c.limits.Add(1)
		return !limited, nil
	}
	var clients *auth.Clients
	if tokens {
		var err error
		if clients, err = auth.Parse("alice:" + aliceToken); err != nil {
			t.Fatal(err)
		}
	}
	c.Handler = httpapi.New(newServiceWith(c.store, opts), httpapi.Options{Clients: clients, Log: logTo(&c.lines), AllowedOrigins: origins})
	return c
}

// haltGateway refuses every order for the symbol HALT and accepts the rest.
type haltGateway struct{}

func (haltGateway) Place(_ context.Context, p intake.Placement) error {
	if p.Order.Symbol == "HALT" {
		return &intake.Rejection{Reason: "symbol halted"}
	}
	return nil
}

// preflightRequest is what a browser on origin sends before a POST with
// an Idempotency-Key and a token.
func preflightRequest(origin string) *http.Request {
	r := request(http.MethodOptions, nil, nil)
	r.Header.Set("Origin", origin)
	r.Header.Set("Access-Control-Request-Method", "POST")
	r.Header.Set("Access-Control-Request-Headers", "authorization,content-type,idempotency-key")
	return r
}

// fromOrigin sets r's Origin header, unless origin is "".
func fromOrigin(r *http.Request, origin string) *http.Request {
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	return r
}

// corsHeaders are the headers every CORS test checks: "" means absent.
func corsHeaders(allowOrigin, expose, vary string) map[string]string {
	return map[string]string{
		"Access-Control-Allow-Origin":   allowOrigin,
		"Access-Control-Expose-Headers": expose,
		"Vary":                          vary,
		"Access-Control-Allow-Methods":  "",
		"Access-Control-Allow-Headers":  "",
		"Access-Control-Max-Age":        "",
	}
}

// readable are the headers of an actual response to deskOrigin: the page
// may read it, Idempotent-Replay and Retry-After included.
var readable = corsHeaders(deskOrigin, exposeHeaders, "Origin")

// unreadable are the headers of an actual response to any other origin, or
// to a request without one, from a Worker with allowed origins.
var unreadable = corsHeaders("", "", "Origin")

// TestPreflight checks the answer to a CORS preflight: 204 before the
// token check from an allowed origin, 403 from any other, and, with CORS
// off or for an OPTIONS that is no preflight, today's 405 (401 first with
// tokens). No preflight touches storage or the rate limit.
func TestPreflight(t *testing.T) {
	allowed := map[string]string{
		"Access-Control-Allow-Origin":   deskOrigin,
		"Access-Control-Allow-Methods":  allowMethods,
		"Access-Control-Allow-Headers":  allowHeaders,
		"Access-Control-Max-Age":        preflightCache,
		"Vary":                          "Origin",
		"Access-Control-Expose-Headers": "",
		"WWW-Authenticate":              "",
		"Allow":                         "",
	}
	notAllowed := problemJSON("origin_not_allowed", 403, "Origin not allowed",
		"Browsers on this page's origin may not call this Worker: the origin is not one the Worker allows.", "")
	tests := []struct {
		name    string
		origins []string
		tokens  bool
		req     *http.Request
		status  int
		body    string
		header  map[string]string
		outcome string
	}{
		{"an allowed origin's preflight is 204 without a token", []string{deskOrigin}, true, preflightRequest(deskOrigin), 204, "", allowed, "preflight"},
		{"an allowed origin's preflight is 204 on the open Worker", []string{deskOrigin}, false, preflightRequest(deskOrigin), 204, "", allowed, "preflight"},
		{"the second of two allowed origins is allowed", []string{otherOrigin + "x", deskOrigin}, true, preflightRequest(deskOrigin), 204, "", allowed, "preflight"},
		{"a preflight for a GET is answered alike", []string{deskOrigin}, true,
			func() *http.Request {
				r := preflightRequest(deskOrigin)
				r.Header.Set("Access-Control-Request-Method", "GET")
				return r
			}(), 204, "", allowed, "preflight"},
		{"another origin's preflight is 403 without CORS headers", []string{deskOrigin}, true, preflightRequest(otherOrigin), 403, notAllowed,
			corsHeaders("", "", "Origin"), "origin_not_allowed"},
		{"an origin that differs in case is another origin", []string{deskOrigin}, true, preflightRequest("https://Desk.example.com"), 403, notAllowed,
			corsHeaders("", "", "Origin"), "origin_not_allowed"},
		{"an origin with a trailing slash is another origin", []string{deskOrigin}, true, preflightRequest(deskOrigin + "/"), 403, notAllowed,
			corsHeaders("", "", "Origin"), "origin_not_allowed"},
		{"a sandboxed page's null origin is another origin", []string{deskOrigin}, false, preflightRequest("null"), 403, notAllowed,
			corsHeaders("", "", "Origin"), "origin_not_allowed"},
		{"an OPTIONS without Access-Control-Request-Method is no preflight: the token first", []string{deskOrigin}, true,
			fromOrigin(request(http.MethodOptions, nil, nil), deskOrigin), 401, problemMissingToken, readable, "unauthorized"},
		{"an OPTIONS without Access-Control-Request-Method is no preflight: 405", []string{deskOrigin}, false,
			fromOrigin(request(http.MethodOptions, nil, nil), deskOrigin), 405, problemMethodNotAllowed, readable, "method_not_allowed"},
		{"an OPTIONS without Origin is no preflight", []string{deskOrigin}, false,
			func() *http.Request { r := preflightRequest(deskOrigin); r.Header.Del("Origin"); return r }(), 405, problemMethodNotAllowed, unreadable, "method_not_allowed"},
		{"without allowed origins a preflight is 405 as before", nil, false, preflightRequest(deskOrigin), 405, problemMethodNotAllowed,
			corsHeaders("", "", ""), "method_not_allowed"},
		{"without allowed origins a preflight meets the token check as before", nil, true, preflightRequest(deskOrigin), 401, problemMissingToken,
			corsHeaders("", "", ""), "unauthorized"},
		{"an empty list is no allowed origins", []string{}, false, preflightRequest(deskOrigin), 405, problemMethodNotAllowed,
			corsHeaders("", "", ""), "method_not_allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCORSHandler(t, tc.origins, tc.tokens, false)
			w := serve(c, tc.req)
			if tc.status == 204 {
				// No body, so no type; nosniff as on every response.
				if w.Code != 204 || w.Body.Len() != 0 || w.Header().Get("Content-Type") != "" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("got %d %q (Content-Type %q, X-Content-Type-Options %q), want an empty 204 with nosniff",
						w.Code, w.Body, w.Header().Get("Content-Type"), w.Header().Get("X-Content-Type-Options"))
				}
				for name, v := range tc.header {
					if got := w.Header().Get(name); got != v {
						t.Errorf("%s = %q, want %q", name, got, v)
					}
				}
			} else {
				check(t, w, response{tc.status, tc.body, tc.header})
			}
			if got := w.Header().Values("Vary"); len(got) > 1 {
				t.Errorf("Vary sent %d times, want once", len(got))
			}
			apitest.CheckResponse(t, tc.req, w.Code, w.Header(), w.Body.Bytes())
			if ops := c.store.Calls(); len(ops) != 0 {
				t.Errorf("storage calls %v, want none", ops)
			}
			if n := c.limits.Load(); n != 0 {
				t.Errorf("rate limit asked %d times, want never", n)
			}
			if len(c.lines) != 1 || c.lines[0].Outcome != tc.outcome || c.lines[0].Status != tc.status {
				t.Fatalf("log lines %+v, want one %s line with status %d", c.lines, tc.outcome, tc.status)
			}
			if tc.outcome == "origin_not_allowed" && !strings.Contains(c.lines[0].Error, tc.req.Header.Get("Origin")) {
				t.Errorf("log line error %q does not name the origin", c.lines[0].Error)
			}
		})
	}
}

// TestCORSOnResponses checks that every actual response to an allowed
// origin, receipts, replays, stored problems and errors alike, lets the
// page read it, and that no response to another origin, or without one,
// does.
func TestCORSOnResponses(t *testing.T) {
	type step struct {
		method string
		key    string
		body   string
		token  bool
	}
	tests := []struct {
		name    string
		origin  string
		tokens  bool
		limited bool
		// before are sent first, from the same origin; the last step's
		// response is checked.
		before []step
		last   step
		status int
		header map[string]string
	}{
		{"a new order's receipt is readable", deskOrigin, true, false, nil, step{"POST", "k", validBody, true}, 201, readable},
		{"a replay is readable, Idempotent-Replay included", deskOrigin, true, false, []step{{"POST", "k", validBody, true}}, step{"POST", "k", validBody, true}, 200,
			with(readable, "Idempotent-Replay", "true")},
		{"a lookup is readable", deskOrigin, true, false, []step{{"POST", "k", validBody, true}}, step{"GET", "k", "", true}, 200, readable},
		{"a stored rejection's replay is readable", deskOrigin, false, false, []step{{"POST", "r", `{"symbol":"HALT","side":"buy","quantity":1}`, false}},
			step{"POST", "r", `{"symbol":"HALT","side":"buy","quantity":1}`, false}, 422, with(readable, "Idempotent-Replay", "true")},
		{"an unauthorized request is readable", deskOrigin, true, false, nil, step{"POST", "k", validBody, false}, 401,
			with(readable, "WWW-Authenticate", `Bearer realm="edge-orders"`)},
		{"a missing key is readable", deskOrigin, false, false, nil, step{"POST", "", validBody, false}, 400, readable},
		{"an invalid order is readable", deskOrigin, false, false, nil, step{"POST", "k", `{"side":"hold"}`, false}, 422, readable},
		{"a key reused for another order is readable", deskOrigin, false, false, []step{{"POST", "k", validBody, false}},
			step{"POST", "k", `{"symbol":"MSFT","side":"sell","quantity":1}`, false}, 422, readable},
		{"a lookup of nothing is readable", deskOrigin, false, false, nil, step{"GET", "nothing", "", false}, 404, readable},
		{"a rate-limited order is readable, Retry-After included", deskOrigin, false, true, nil, step{"POST", "k", validBody, false}, 429,
			with(readable, "Retry-After", "60")},
		{"a wrong method is readable", deskOrigin, false, false, nil, step{"PUT", "k", validBody, false}, 405, with(readable, "Allow", "GET, HEAD, POST")},
		{"a receipt to another origin is not readable", otherOrigin, true, false, nil, step{"POST", "k", validBody, true}, 201, unreadable},
		{"a replay to another origin is not readable", otherOrigin, true, false, []step{{"POST", "k", validBody, true}}, step{"POST", "k", validBody, true}, 200,
			with(unreadable, "Idempotent-Replay", "true")},
		{"an error to another origin is not readable", otherOrigin, true, false, nil, step{"POST", "k", validBody, false}, 401, unreadable},
		{"a request without Origin gets Vary alone", "", true, false, nil, step{"POST", "k", validBody, true}, 201, unreadable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCORSHandler(t, []string{deskOrigin}, tc.tokens, tc.limited)
			send := func(s step) *http.Request {
				var key *string
				if s.key != "" {
					key = ptr(s.key)
				}
				r := fromOrigin(request(s.method, key, strings.NewReader(s.body)), tc.origin)
				if s.token {
					r.Header.Set("Authorization", "Bearer "+aliceToken)
				}
				return r
			}
			for _, s := range tc.before {
				serve(c, send(s))
			}
			r := send(tc.last)
			w := serve(c, r)
			if w.Code != tc.status {
				t.Fatalf("got %d %s, want %d", w.Code, w.Body, tc.status)
			}
			for name, v := range tc.header {
				if got := w.Header().Get(name); got != v {
					t.Errorf("%s = %q, want %q", name, got, v)
				}
			}
			if got := w.Header().Values("Vary"); len(got) != 1 {
				t.Errorf("Vary = %q, want one Origin", got)
			}
			apitest.CheckResponse(t, r, w.Code, w.Header(), w.Body.Bytes())
		})
	}
}

// TestCORSOffChangesNothing: without allowed origins, a request from a
// page carries no CORS header, not even Vary, exactly as before.
func TestCORSOffChangesNothing(t *testing.T) {
	for _, origins := range [][]string{nil, {}} {
		c := newCORSHandler(t, origins, false, false)
		for _, r := range []*http.Request{
			fromOrigin(request("POST", ptr("k"), strings.NewReader(validBody)), deskOrigin),
			fromOrigin(request("POST", ptr("k"), strings.NewReader(validBody)), deskOrigin),
			fromOrigin(request("GET", ptr("nothing"), nil), deskOrigin),
		} {
			w := serve(c, r)
			for name := range w.Header() {
				if strings.HasPrefix(name, "Access-Control-") || name == "Vary" {
					t.Errorf("%s %d carries %s: %q, want no CORS header", r.Method, w.Code, name, w.Header().Get(name))
				}
			}
		}
	}
}

// with returns a copy of header with name set to value.
func with(header map[string]string, name, value string) map[string]string {
	out := make(map[string]string, len(header)+1)
	for k, v := range header {
		out[k] = v
	}
	out[name] = value
	return out
}

// TestATrapsAnswerCarriesTheHandlersCORS: a trap's 500 is answered by the
// bridge, which nothing of Go's handler reaches (workers.CORSTraps), with
// the CORS headers TrapCORS gives: those annotate adds to every other
// answer, so that a page reads the 500 rather than a CORS failure, which
// would tell it its origin is not allowed. Off without allowed origins.
func TestATrapsAnswerCarriesTheHandlersCORS(t *testing.T) {
	c := newCORSHandler(t, []string{deskOrigin}, false, false)
	origins, allowed, always, private := c.TrapCORS()
	if private != "" {
		t.Errorf("TrapCORS private = %q without an admin API, want none", private)
	}
	if len(origins) != 1 || origins[0] != deskOrigin {
		t.Fatalf("TrapCORS origins = %v, want [%s]", origins, deskOrigin)
	}
	for _, origin := range []string{deskOrigin, otherOrigin} {
		got := serve(c, fromOrigin(request(http.MethodGet, nil, nil), origin)) // 400: no key
		want := map[string]string{}
		if origin == deskOrigin {
			want["Access-Control-Allow-Origin"] = origin
			for _, f := range allowed {
				want[f.Name] = f.Value
			}
		}
		for _, f := range always {
			want[f.Name] = f.Value
		}
		for _, name := range []string{"Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Vary"} {
			if g := got.Header().Get(name); g != want[name] {
				t.Errorf("from %s: the handler's %s is %q, a trap's would be %q", origin, name, g, want[name])
			}
		}
	}
	if origins, _, _, _ := newCORSHandler(t, nil, false, false).TrapCORS(); origins != nil {
		t.Errorf("TrapCORS without allowed origins = %v, want none", origins)
	}
}

// TestATrapsAnswerOnTheAdminAPINamesNoOrigin: the admin API's answers
// never carry Access-Control-Allow-Origin, so no other origin's page reads
// them; TrapCORS names its path as private, and a trap's answer there
// carries none either (found by a review).
func TestATrapsAnswerOnTheAdminAPINamesNoOrigin(t *testing.T) {
	e, _, _ := newAdminEnvOver(t, false, true)
	admins, err := auth.Parse("ops:" + opsToken)
	if err != nil {
		t.Fatal(err)
	}
	svc := newServiceWith(e.rec, serviceOptions())
	h := httpapi.New(svc, httpapi.Options{Admins: admins, Admin: intake.NewAdmin(svc, kv.NewStore(e.rec, nil)), AllowedOrigins: []string{deskOrigin}})
	if _, _, _, private := h.TrapCORS(); private != httpapi.AdminPrefix {
		t.Errorf("TrapCORS private = %q, want %q", private, httpapi.AdminPrefix)
	}
	r := fromOrigin(request(http.MethodGet, nil, nil), deskOrigin)
	r.URL.Path = httpapi.AdminPrefix + "orders"
	r.Header.Set("Authorization", "Bearer "+opsToken)
	if got := serve(h, r).Header().Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("the handler's admin answer to %s names %q", deskOrigin, got)
	}
}
