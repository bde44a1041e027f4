package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/edge-orders/edge-orders/api/apitest"
	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/workers"
)

// The tokens of the admin tests: a client's, and two admins'.
const (
	deskToken  = "desk-token-0123456789"
	opsToken   = "ops-token-0123456789abc"
	auditToken = "audit-token-0123456789ab"
)

// lossyGateway loses every answer while lose is set, and counts its calls.
type lossyGateway struct {
	lose  atomic.Bool
	calls atomic.Int32
}

func (g *lossyGateway) Place(context.Context, intake.Placement) error {
	g.calls.Add(1)
	if g.lose.Load() {
		return errors.New("oms: no answer")
	}
	return nil
}

// listingRecording is a recorded namespace that also lists, from the
// namespace it records.
type listingRecording struct {
	*kvtest.Recording
	mem *kv.MemoryNamespace
}

func (l listingRecording) List(ctx context.Context, prefix, cursor string, limit int) ([]kv.Listed, string, error) {
	return l.mem.List(ctx, prefix, cursor, limit)
}

// adminEnv is a Worker with a client desk-a, the admins ops and audit,
// and a gateway, over recorded KV; its log lines are kept.
type adminEnv struct {
	t   *testing.T
	h   *httpapi.Handler
	gw  *lossyGateway
	rec *kvtest.Recording

	mu    sync.Mutex
	lines []eventlog.Line
	raw   []string
}

func newAdminEnv(t *testing.T, open bool) *adminEnv {
	t.Helper()
	e, _, _ := newAdminEnvOver(t, open, true)
	return e
}

// newAdminEnvOver is newAdminEnv over a namespace that faults as the
// Faulty it returns is set to, with each claim released after its
// commit, or left beside the receipt (KV_CLAIM_AFTER_RECEIPT), as
// release says.
func newAdminEnvOver(t *testing.T, open, release bool) (*adminEnv, *kvtest.Faulty, *kv.MemoryNamespace) {
	t.Helper()
	mem := kv.NewMemoryNamespace()
	faulty := &kvtest.Faulty{Namespace: mem}
	e := &adminEnv{t: t, gw: &lossyGateway{}, rec: &kvtest.Recording{Namespace: faulty}}
	store := kv.NewStore(listingRecording{e.rec, mem}, nil)
	store.ReleaseClaims = release
	opts := serviceOptions()
	opts.Gateway = e.gw
	svc := intake.New(store, opts)
	admins, err := auth.Parse("ops:" + opsToken + ",audit:" + auditToken)
	if err != nil {
		t.Fatal(err)
	}
	var clients *auth.Clients
	if !open {
		if clients, err = auth.Parse("desk-a:" + deskToken); err != nil {
			t.Fatal(err)
		}
	}
	e.h = httpapi.New(svc, httpapi.Options{Clients: clients, Admins: admins, Admin: intake.NewAdmin(svc, store), Log: e.log})
	return e, faulty, mem
}

func (e *adminEnv) log(l eventlog.Line) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines = append(e.lines, l)
	e.raw = append(e.raw, string(l.AppendJSON(nil)))
}

// lastLine is the last line logged.
func (e *adminEnv) lastLine(t *testing.T) eventlog.Line {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.lines) == 0 {
		t.Fatal("nothing was logged")
	}
	return e.lines[len(e.lines)-1]
}

// do sends method path with token (none if "") and body. The request
// goes to the handler as the runtime hands it over, so that a path
// net/http would refuse to parse still reaches it.
func (e *adminEnv) do(method, path, token, body string) *httptest.ResponseRecorder {
	header := http.Header{}
	if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	p, q, _ := strings.Cut(path, "?")
	resp := e.h.ServeWorker(context.Background(), &workers.Request{Method: method, Path: p, Query: q, Header: header,
		Body: workers.ReaderBody(strings.NewReader(body))})
	w := httptest.NewRecorder()
	for _, f := range resp.Header {
		w.Header().Add(f.Name, f.Value)
	}
	w.WriteHeader(resp.Status)
	w.Write(resp.Body)
	// Every answer is one the document allows for the path; a 405 is
	// for a method the document does not describe there.
	if w.Code != http.StatusMethodNotAllowed {
		apitest.CheckResponse(e.t, &http.Request{Method: method, URL: &url.URL{Path: p, RawPath: p}}, w.Code, w.Header(), w.Body.Bytes())
	}
	return w
}

// order submits validBody under key with token.
func (e *adminEnv) order(key, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/orders", strings.NewReader(validBody))
	r.Header.Set("Idempotency-Key", key)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return serve(e.h, r)
}

// unknownKey leaves key of desk-a with its outcome unknown.
func (e *adminEnv) unknownKey(t *testing.T, key string) {
	t.Helper()
	e.gw.lose.Store(true)
	defer e.gw.lose.Store(false)
	if w := e.order(key, deskToken); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("order with its answer lost = %d %s, want 503", w.Code, w.Body)
	}
}

// problemCode is the error code of the problem in w.
func problemCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var p struct{ Error string }
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Header().Get("Content-Type") != problemType {
		t.Fatalf("%d %s (%s): want a problem", w.Code, w.Body, w.Header().Get("Content-Type"))
	}
	return p.Error
}

// entry is an admin API entry, as a client of it reads one.
type entry struct {
	Client, Key, State, OrderID string
	Order                       *struct {
		Symbol, Side string
		Quantity     float64
	}
	AcceptedAt    string
	Attempts      int
	NextAttemptAt string
	Receipt       json.RawMessage
	Rejected      *bool
}

func decodeEntry(t *testing.T, w *httptest.ResponseRecorder) entry {
	t.Helper()
	var got entry
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil {
		t.Fatalf("%d %s, want 200 with an entry", w.Code, w.Body)
	}
	return got
}

// TestAdminIsOffWithoutAdminTokens: with no ADMIN_TOKENS, /admin/ is
// answered as every other path.
func TestAdminIsOffWithoutAdminTokens(t *testing.T) {
	clients, _ := auth.Parse("desk-a:" + deskToken)
	h := httpapi.New(newService(kv.NewMemoryNamespace()), httpapi.Options{Clients: clients})
	for _, method := range []string{"GET", "DELETE", "POST"} {
		t.Run(method, func(t *testing.T) {
			at := func(path string) *httptest.ResponseRecorder {
				r := httptest.NewRequest(method, path, strings.NewReader(`{}`))
				r.Header.Set("Authorization", "Bearer "+deskToken)
				return serve(h, r)
			}
			admin, orders := at("/admin/orders/desk-a/k/resolve"), at("/orders")
			if admin.Code != orders.Code || admin.Body.String() != orders.Body.String() {
				t.Errorf("/admin/ answered %d %s, want what /orders answers: %d %s", admin.Code, admin.Body, orders.Code, orders.Body)
			}
		})
	}
}

// TestAdminTokensAreTheirOwn: the admin API takes admin tokens only, and
// an admin token places no order.
func TestAdminTokensAreTheirOwn(t *testing.T) {
	t.Run("no token is refused with a challenge", func(t *testing.T) {
		e := newAdminEnv(t, false)
		w := e.do("GET", "/admin/orders", "", "")
		if w.Code != 401 || problemCode(t, w) != "unauthorized" || !strings.Contains(w.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%d %s %q, want 401 unauthorized with a Bearer challenge", w.Code, w.Body, w.Header().Get("WWW-Authenticate"))
		}
	})
	t.Run("a client's token is forbidden", func(t *testing.T) {
		e := newAdminEnv(t, false)
		w := e.do("GET", "/admin/orders", deskToken, "")
		if w.Code != 403 || problemCode(t, w) != "forbidden" {
			t.Fatalf("%d %s, want 403 forbidden", w.Code, w.Body)
		}
	})
	t.Run("a token of nobody is refused", func(t *testing.T) {
		e := newAdminEnv(t, false)
		w := e.do("GET", "/admin/orders", "nobody-token-0123456789", "")
		if w.Code != 401 || problemCode(t, w) != "unauthorized" {
			t.Fatalf("%d %s, want 401", w.Code, w.Body)
		}
	})
	for _, open := range []bool{false, true} {
		name := "an admin's token places no order"
		if open {
			name += " on the open Worker"
		}
		t.Run(name, func(t *testing.T) {
			e := newAdminEnv(t, open)
			w := e.order("k-admin", opsToken)
			if w.Code != 401 || problemCode(t, w) != "unauthorized" {
				t.Fatalf("order with an admin token = %d %s, want 401", w.Code, w.Body)
			}
			if n := e.gw.calls.Load(); n != 0 {
				t.Errorf("gateway calls = %d, want 0", n)
			}
			if writes := e.rec.Writes(); len(writes) != 0 {
				t.Errorf("writes %v, want none", writes)
			}
		})
	}
}

// TestAdminResolvesAnUnknownOrder: the operator sees the key the lost
// answer left, resolves it, and the client's retry replays the receipt
// with no gateway call.
func TestAdminResolvesAnUnknownOrder(t *testing.T) {
	e := newAdminEnv(t, false)
	e.unknownKey(t, "k/1 x")
	calls := e.gw.calls.Load()

	w := e.do("GET", "/admin/orders?state=unknown,unresolved", opsToken, "")
	var list struct {
		Orders []entry
		Cursor *string
	}
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &list) != nil || len(list.Orders) != 1 || list.Cursor != nil {
		t.Fatalf("list = %d %s, want one entry and no cursor", w.Code, w.Body)
	}
	got := list.Orders[0]
	if got.Client != "desk-a" || got.Key != "k/1 x" || got.State != "unknown" || !uuidV4.MatchString(got.OrderID) ||
		got.Order == nil || got.Order.Symbol != "AAPL" || got.AcceptedAt != "2026-03-14T15:09:26.535Z" || got.Attempts != 1 || got.NextAttemptAt == "" {
		t.Errorf("listed %+v, want desk-a's k/1 x unknown with its order, time, one attempt and the next", got)
	}
	if w := e.do("GET", "/admin/orders?state=in_progress", opsToken, ""); w.Code != 200 || w.Body.String() != `{"orders":[]}` {
		t.Errorf("list of in_progress = %d %s, want none", w.Code, w.Body)
	}

	path := "/admin/orders/desk-a/k%2F1%20x"
	if d := decodeEntry(t, e.do("GET", path, opsToken, "")); d.State != "unknown" || d.OrderID != got.OrderID || d.Receipt != nil {
		t.Errorf("detail %+v, want unknown %s without a receipt", d, got.OrderID)
	}
	w = e.do("POST", path+"/resolve", opsToken, `{"status":"accepted","note":"checked in the OMS, ticket 42"}`)
	d := decodeEntry(t, w)
	if d.State != "accepted" || d.OrderID != got.OrderID || d.Rejected == nil || *d.Rejected || d.Receipt == nil {
		t.Fatalf("resolve answered %s, want the accepted receipt", w.Body)
	}
	line := e.lastLine(t)
	if line.Action != "resolve" || line.Admin != "ops" || line.Client != "desk-a" || line.Key != "k/1 x" || line.OrderID != got.OrderID ||
		line.Before != "unknown" || line.After != "accepted" || line.Note != "checked in the OMS, ticket 42" || line.Status != 200 {
		t.Errorf("audit line %+v, want ops resolving desk-a's k/1 x from unknown to accepted, with the note", line)
	}

	retry := e.order("k/1 x", deskToken)
	if retry.Code != 200 || retry.Body.String() != string(d.Receipt) || retry.Header().Get("Idempotent-Replay") != "true" {
		t.Errorf("the client's retry = %d %s, want the replay of %s", retry.Code, retry.Body, d.Receipt)
	}
	if n := e.gw.calls.Load(); n != calls {
		t.Errorf("gateway calls = %d, want %d: the retry replays the operator's answer", n, calls)
	}

	w = e.do("DELETE", path, opsToken, "")
	if p := decodeEntry(t, w); p.State != "accepted" || string(p.Receipt) != string(d.Receipt) {
		t.Errorf("purge answered %s, want the purged receipt", w.Body)
	}
	if line := e.lastLine(t); line.Action != "purge" || line.Before != "accepted" || line.After != "purged" || line.OrderID != got.OrderID {
		t.Errorf("audit line %+v, want the purge from accepted", line)
	}
	if w := e.do("GET", path, opsToken, ""); w.Code != 404 || problemCode(t, w) != "not_found" {
		t.Errorf("detail after the purge = %d %s, want 404", w.Code, w.Body)
	}
	if retry := e.order("k/1 x", deskToken); retry.Code != 201 {
		t.Errorf("a retry after the purge = %d %s, want 201: a new order", retry.Code, retry.Body)
	}
}

// TestAdminRefusesBadInputAndChangesNothing: every bad request is a
// problem, and nothing is written.
func TestAdminRefusesBadInputAndChangesNothing(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"an unknown client", "GET", "/admin/orders/desk-z/k1", "", 404, "unknown_client"},
		{"an unknown client in a listing", "GET", "/admin/orders?client=desk-z", "", 404, "unknown_client"},
		{"a key that is not percent-encoded", "GET", "/admin/orders/desk-a/k%zz", "", 400, "invalid_idempotency_key"},
		{"a key no request could send", "GET", "/admin/orders/desk-a/k%0A", "", 400, "invalid_idempotency_key"},
		{"a key nothing is held for", "GET", "/admin/orders/desk-a/nothing", "", 404, "not_found"},
		{"an unknown state", "GET", "/admin/orders?state=unknown,lost", "", 400, "invalid_query"},
		{"a limit of zero", "GET", "/admin/orders?limit=0", "", 400, "invalid_query"},
		{"a limit over the maximum", "GET", "/admin/orders?limit=1001", "", 400, "invalid_query"},
		{"an unknown parameter", "GET", "/admin/orders?sort=key", "", 400, "invalid_query"},
		{"a made-up cursor", "GET", "/admin/orders?cursor=xyz", "", 400, "invalid_cursor"},
		{"a body that is not JSON", "POST", "/admin/orders/desk-a/k1/resolve", `{"status":`, 400, "invalid_resolution"},
		{"a body that is not an object", "POST", "/admin/orders/desk-a/k1/resolve", `["accepted"]`, 400, "invalid_resolution"},
		{"a status that is neither", "POST", "/admin/orders/desk-a/k1/resolve", `{"status":"filled"}`, 400, "invalid_resolution"},
		{"a status that is no string", "POST", "/admin/orders/desk-a/k1/resolve", `{"status":true}`, 400, "invalid_resolution"},
		{"a rejection without a reason", "POST", "/admin/orders/desk-a/k1/resolve", `{"status":"rejected"}`, 400, "invalid_resolution"},
		{"a member the schema has not", "POST", "/admin/orders/desk-a/k1/resolve", `{"status":"accepted","notes":"checked"}`, 400, "invalid_resolution"},
		{"a purge of an unknown outcome", "DELETE", "/admin/orders/desk-a/k1", "", 409, "outcome_not_final"},
		{"a purge of nothing", "DELETE", "/admin/orders/desk-a/nothing", "", 404, "not_found"},
		{"a resolve of nothing", "POST", "/admin/orders/desk-a/nothing/resolve", `{"status":"accepted"}`, 404, "not_found"},
		{"a path the API has not", "GET", "/admin/clients", "", 404, "no_such_path"},
		{"a method the path takes not", "PUT", "/admin/orders/desk-a/k1", "", 405, "method_not_allowed"},
		{"a method the path takes not, with a query", "PUT", "/admin/orders/desk-a/k1?orderId=x", "", 405, "method_not_allowed"},
		{"a method the query path takes not, with a query", "PUT", "/admin/order?client=desk-a&key=k1&orderId=x", "", 405, "method_not_allowed"},
		{"a listing's state given twice", "GET", "/admin/orders?state=unknown&state=unresolved", "", 400, "invalid_query"},
		{"a listing's client given twice", "GET", "/admin/orders?client=nobody&client=desk-a", "", 400, "invalid_query"},
		{"a dead letters' limit given twice", "GET", "/admin/deadletters?limit=1&limit=2", "", 400, "invalid_query"},
		{"a method a dead letter's path takes not, with a query", "PUT", "/admin/deadletters/desk-a/k1?bogus=1", "", 405, "method_not_allowed"},
		{"a method a dead letter's query path takes not", "PUT", "/admin/deadletter?client=desk-a&key=k1&bogus=1", "", 405, "method_not_allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newAdminEnv(t, false)
			e.unknownKey(t, "k1")
			writes := len(e.rec.Writes())
			w := e.do(tc.method, tc.path, opsToken, tc.body)
			if w.Code != tc.status || problemCode(t, w) != tc.code {
				t.Errorf("%s %s = %d %s, want %d %s", tc.method, tc.path, w.Code, w.Body, tc.status, tc.code)
			}
			if got := e.rec.Writes(); len(got) != writes {
				t.Errorf("writes %v after the refusal, want none", got[writes:])
			}
			if line := e.lastLine(t); line.Action == "" || line.Admin != "ops" || line.Status != tc.status || line.Outcome != tc.code {
				t.Errorf("audit line %+v, want an action by ops refused with %d %s", line, tc.status, tc.code)
			}
		})
	}
	t.Run("a resolve of a final outcome", func(t *testing.T) {
		e := newAdminEnv(t, false)
		e.unknownKey(t, "k1")
		if w := e.do("POST", "/admin/orders/desk-a/k1/resolve", opsToken, `{"status":"accepted"}`); w.Code != 200 {
			t.Fatalf("resolve = %d %s", w.Code, w.Body)
		}
		writes := len(e.rec.Writes())
		w := e.do("POST", "/admin/orders/desk-a/k1/resolve", opsToken, `{"status":"rejected","reason":"no"}`)
		if w.Code != 409 || problemCode(t, w) != "outcome_final" {
			t.Errorf("a second resolve = %d %s, want 409 outcome_final", w.Code, w.Body)
		}
		if got := e.rec.Writes(); len(got) != writes {
			t.Errorf("writes %v after the refusal, want none", got[writes:])
		}
	})
	t.Run("a method not allowed says which are", func(t *testing.T) {
		e := newAdminEnv(t, false)
		if w := e.do("POST", "/admin/orders", opsToken, ""); w.Code != 405 || w.Header().Get("Allow") != "GET" {
			t.Errorf("POST /admin/orders = %d, Allow %q; want 405 and GET", w.Code, w.Header().Get("Allow"))
		}
	})
}

// TestAdminListPages: pages of one entry list every key once, across
// clients; the open Worker's client is "-".
func TestAdminListPages(t *testing.T) {
	e := newAdminEnv(t, false)
	for _, k := range []string{"a", "b", "c"} {
		e.unknownKey(t, k)
	}
	var keys []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		path := "/admin/orders?limit=1"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		w := e.do("GET", path, opsToken, "")
		var list struct {
			Orders []entry
			Cursor string
		}
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &list) != nil || len(list.Orders) > 1 {
			t.Fatalf("%s = %d %s, want a page of at most one", path, w.Code, w.Body)
		}
		for _, o := range list.Orders {
			keys = append(keys, o.Key)
		}
		if cursor = list.Cursor; cursor == "" {
			break
		}
	}
	if strings.Join(keys, ",") != "a,b,c" {
		t.Errorf("listed %v, want a, b and c once each", keys)
	}

	open := newAdminEnv(t, true)
	open.gw.lose.Store(true)
	if w := open.order("o1", ""); w.Code != 503 {
		t.Fatalf("open order = %d", w.Code)
	}
	if d := decodeEntry(t, open.do("GET", "/admin/orders/-/o1", opsToken, "")); d.Client != "-" || d.State != "unknown" {
		t.Errorf("the open Worker's key = %+v, want client - and unknown", d)
	}
	if w := open.do("GET", "/admin/orders/desk-a/o1", opsToken, ""); w.Code != 404 || problemCode(t, w) != "unknown_client" {
		t.Errorf("a client on the open Worker = %d %s, want 404 unknown_client", w.Code, w.Body)
	}
}

// TestAdminAuditLinesHoldNoToken: every admin request is one audit line
// naming the admin, and no token reaches a line or a response.
func TestAdminAuditLinesHoldNoToken(t *testing.T) {
	e := newAdminEnv(t, false)
	e.unknownKey(t, "k1")
	var bodies []string
	for _, r := range []struct{ method, path, token, body string }{
		{"GET", "/admin/orders", auditToken, ""},
		{"GET", "/admin/orders/desk-a/k1", auditToken, ""},
		{"DELETE", "/admin/orders/desk-a/k1", auditToken, ""},
		{"POST", "/admin/orders/desk-a/k1/resolve", opsToken, `{"status":"rejected","reason":"no funds"}`},
		{"GET", "/admin/orders", deskToken, ""},
	} {
		e.mu.Lock()
		before := len(e.raw)
		e.mu.Unlock()
		w := e.do(r.method, r.path, r.token, r.body)
		bodies = append(bodies, w.Body.String())
		e.mu.Lock()
		added := e.raw[before:]
		e.mu.Unlock()
		if len(added) != 1 || !strings.Contains(added[0], `"level":"audit"`) {
			t.Errorf("%s %s logged %q, want one audit line", r.method, r.path, added)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, token := range []string{deskToken, opsToken, auditToken} {
		for _, l := range e.raw {
			if strings.Contains(l, token) {
				t.Errorf("a log line holds a token: %s", l)
			}
		}
		for _, b := range bodies {
			if strings.Contains(b, token) {
				t.Errorf("a response holds a token: %s", b)
			}
		}
	}
	want := []struct{ action, admin, before, after string }{
		{"list", "audit", "", ""},
		{"inspect", "audit", "unknown", "unknown"},
		{"purge", "audit", "unknown", "unknown"},
		{"resolve", "ops", "unknown", "rejected"},
	}
	audit := e.lines[len(e.lines)-5:]
	for i, w := range want {
		if l := audit[i]; l.Action != w.action || l.Admin != w.admin || l.Before != w.before || l.After != w.after {
			t.Errorf("audit line %d = %+v, want %s by %s from %q to %q", i, l, w.action, w.admin, w.before, w.after)
		}
	}
	if l := audit[4]; l.Admin != "" || l.Status != 403 {
		t.Errorf("the client's attempt logged %+v, want a 403 naming no admin", l)
	}
}

// FuzzAdminRequests sends any path, query and body to the admin API: the
// answer is a 2xx entry or a 4xx problem, never a 5xx, and a refusal
// writes nothing.
func FuzzAdminRequests(f *testing.F) {
	f.Add("GET", "/admin/orders", "state=unknown&limit=2", "")
	f.Add("GET", "/admin/orders/desk-a/k1", "", "")
	f.Add("POST", "/admin/orders/desk-a/k1/resolve", "", `{"status":"accepted"}`)
	f.Add("POST", "/admin/orders/desk-a/k%2F1/resolve", "", `{"status":"rejected","reason":"r\u0000"}`)
	f.Add("DELETE", "/admin/orders/-/%", "cursor=%zz", "")
	f.Fuzz(func(t *testing.T, method, path, query, body string) {
		e := newAdminEnv(t, false)
		e.unknownKey(t, "k1")
		writes := len(e.rec.Writes())
		header := http.Header{}
		header.Set("Authorization", "Bearer "+opsToken)
		resp := e.h.ServeWorker(context.Background(), &workers.Request{Method: method, Path: "/admin/" + strings.TrimPrefix(path, "/admin/"),
			Query: query, Header: header, Body: workers.ReaderBody(strings.NewReader(body))})
		switch {
		case resp.Status >= 500:
			t.Fatalf("%s %s?%s %q = %d %s", method, path, query, body, resp.Status, resp.Body)
		case resp.Status >= 400 && len(e.rec.Writes()) != writes:
			t.Fatalf("%s %s?%s %q = %d, and wrote %v", method, path, query, body, resp.Status, e.rec.Writes()[writes:])
		case !json.Valid(resp.Body):
			t.Fatalf("%s %s = %d with a body that is not JSON: %s", method, path, resp.Status, resp.Body)
		}
	})
}

// TestAdminPathIsTheKeyItself: a key's path segment, percent-decoded, is
// the key, with none of the header's rules: a quoted segment names the
// key with its quotes, never the key inside them, and a comma is part of
// the key.
func TestAdminPathIsTheKeyItself(t *testing.T) {
	t.Run("a purge of a quoted key leaves the unquoted key's receipt", func(t *testing.T) {
		e := newAdminEnv(t, false)
		first := e.order("abc", deskToken)
		if first.Code != 201 {
			t.Fatalf("order = %d %s", first.Code, first.Body)
		}
		writes := len(e.rec.Writes())
		if w := e.do("DELETE", "/admin/orders/desk-a/%22abc%22", opsToken, ""); w.Code != 404 || problemCode(t, w) != "not_found" {
			t.Errorf(`DELETE of "abc" = %d %s, want 404 not_found`, w.Code, w.Body)
		}
		if got := e.rec.Writes(); len(got) != writes {
			t.Errorf("writes %v, want none", got[writes:])
		}
		if line := e.lastLine(t); line.Key != `"abc"` {
			t.Errorf("audit line's key %q, want %q", line.Key, `"abc"`)
		}
		if retry := e.order("abc", deskToken); retry.Code != 200 || retry.Body.String() != first.Body.String() {
			t.Errorf("abc's retry = %d %s, want its receipt replayed", retry.Code, retry.Body)
		}
	})
	t.Run("a resolve of a quoted key leaves the unquoted key open", func(t *testing.T) {
		e := newAdminEnv(t, false)
		e.unknownKey(t, "abc")
		if w := e.do("POST", "/admin/orders/desk-a/%22abc%22/resolve", opsToken, `{"status":"rejected","reason":"no"}`); w.Code != 404 || problemCode(t, w) != "not_found" {
			t.Errorf(`resolve of "abc" = %d %s, want 404 not_found`, w.Code, w.Body)
		}
		if d := decodeEntry(t, e.do("GET", "/admin/orders/desk-a/abc", opsToken, "")); d.State != "unknown" {
			t.Errorf("abc is %s, want still unknown", d.State)
		}
	})
	t.Run("a quoted key is reached by its quotes", func(t *testing.T) {
		e := newAdminEnv(t, false)
		e.unknownKey(t, `"\"abc\""`) // the header's form of the key "abc"
		if d := decodeEntry(t, e.do("GET", "/admin/orders/desk-a/%22abc%22", opsToken, "")); d.Key != `"abc"` || d.State != "unknown" {
			t.Errorf(`detail = %+v, want "abc" unknown`, d)
		}
	})
	t.Run("a key with a comma is reached", func(t *testing.T) {
		e := newAdminEnv(t, false)
		e.unknownKey(t, `"a,b"`)
		if d := decodeEntry(t, e.do("GET", "/admin/orders/desk-a/a%2Cb", opsToken, "")); d.Key != "a,b" || d.State != "unknown" {
			t.Errorf("detail = %+v, want a,b unknown", d)
		}
	})
}

// TestAdminAnswersSayOnlyWhatHolds: a 409 that waiting never changes
// carries no Retry-After; a refused resolve's audit line says the state
// after, unchanged; an admin's path the API has not is audited as none,
// not as a refused token.
func TestAdminAnswersSayOnlyWhatHolds(t *testing.T) {
	t.Run("only in_progress says when to retry", func(t *testing.T) {
		e := newAdminEnv(t, false)
		e.unknownKey(t, "k1")
		w := e.do("DELETE", "/admin/orders/desk-a/k1", opsToken, "")
		var body map[string]any
		json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != 409 || w.Header().Get("Retry-After") != "" || body["retryAfter"] != nil {
			t.Errorf("outcome_not_final = %d, Retry-After %q, %s; want 409 with no time to wait", w.Code, w.Header().Get("Retry-After"), w.Body)
		}
		if w := e.do("POST", "/admin/orders/desk-a/k1/resolve", opsToken, `{"status":"accepted"}`); w.Code != 200 {
			t.Fatalf("resolve = %d %s", w.Code, w.Body)
		}
		w = e.do("POST", "/admin/orders/desk-a/k1/resolve", opsToken, `{"status":"rejected","reason":"no"}`)
		if w.Code != 409 || w.Header().Get("Retry-After") != "" {
			t.Errorf("outcome_final = %d, Retry-After %q; want 409 with no time to wait", w.Code, w.Header().Get("Retry-After"))
		}
		if l := e.lastLine(t); l.Before != "accepted" || l.After != "accepted" {
			t.Errorf("the refused resolve's audit line %+v, want before and after accepted", l)
		}
	})
	t.Run("an unknown path is no refused token", func(t *testing.T) {
		e := newAdminEnv(t, false)
		if w := e.do("GET", "/admin/clients", opsToken, ""); w.Code != 404 {
			t.Fatalf("GET /admin/clients = %d", w.Code)
		}
		if l := e.lastLine(t); l.Action != "none" || l.Admin != "ops" {
			t.Errorf("audit line %+v, want action none by ops", l)
		}
	})
}

// TestAdminReachesDotKeysByQuery: a key (or client) named . or .. cannot
// be a path segment, since the runtime's URL parser removes it before the
// Worker sees the path; the query form names it, percent-decoded and
// nothing else, for the detail, resolve and purge.
func TestAdminReachesDotKeysByQuery(t *testing.T) {
	for _, key := range []string{".", ".."} {
		t.Run(key, func(t *testing.T) {
			e := newAdminEnv(t, false)
			e.unknownKey(t, key)
			path := "/admin/order?client=desk-a&key=" + url.QueryEscape(key)
			if d := decodeEntry(t, e.do("GET", path, opsToken, "")); d.Key != key || d.State != "unknown" {
				t.Fatalf("detail %+v, want %q unknown", d, key)
			}
			resolve := "/admin/order/resolve?client=desk-a&key=" + strings.ReplaceAll(key, ".", "%2E")
			if d := decodeEntry(t, e.do("POST", resolve, opsToken, `{"status":"accepted"}`)); d.Key != key || d.State != "accepted" {
				t.Fatalf("resolve answered %+v, want %q accepted", d, key)
			}
			if d := decodeEntry(t, e.do("DELETE", path, opsToken, "")); d.State != "accepted" {
				t.Fatalf("purge answered %+v, want the accepted receipt", d)
			}
			if line := e.lastLine(t); line.Action != "purge" || line.Key != key {
				t.Errorf("audit line %+v, want the purge of %q", line, key)
			}
		})
	}
	t.Run("a query that names no key, or more, is refused", func(t *testing.T) {
		e := newAdminEnv(t, false)
		for _, q := range []string{"", "client=desk-a", "key=k", "client=desk-a&key=k&key=j", "client=desk-a&key=k&x=1"} {
			if w := e.do("GET", "/admin/order?"+q, opsToken, ""); w.Code != 400 || problemCode(t, w) != "invalid_query" {
				t.Errorf("GET /admin/order?%s = %d %s, want 400 invalid_query", q, w.Code, w.Body)
			}
		}
	})
}

// TestAdminActionsTakeTheOrderIDTheOperatorSaw: a resolve or a purge with
// orderId in its query acts only on a key that holds that order id, and
// answers 409 order_mismatch, changing nothing, for one that holds
// another; in the path form and the query form alike. Nothing else takes
// orderId.
func TestAdminActionsTakeTheOrderIDTheOperatorSaw(t *testing.T) {
	e := newAdminEnv(t, false)
	e.unknownKey(t, "k1")
	d := decodeEntry(t, e.do("GET", "/admin/orders/desk-a/k1", opsToken, ""))
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/admin/orders/desk-a/k1/resolve?orderId=another", `{"status":"accepted"}`},
		{"POST", "/admin/order/resolve?client=desk-a&key=k1&orderId=another", `{"status":"accepted"}`},
	} {
		if w := e.do(tc.method, tc.path, opsToken, tc.body); w.Code != 409 || problemCode(t, w) != "order_mismatch" {
			t.Errorf("%s %s = %d %s, want 409 order_mismatch", tc.method, tc.path, w.Code, w.Body)
		}
	}
	if got := decodeEntry(t, e.do("GET", "/admin/orders/desk-a/k1", opsToken, "")); got.State != "unknown" {
		t.Fatalf("after the refusals the key is %s, want still unknown", got.State)
	}
	if got := decodeEntry(t, e.do("POST", "/admin/orders/desk-a/k1/resolve?orderId="+d.OrderID, opsToken, `{"status":"accepted"}`)); got.State != "accepted" {
		t.Fatalf("the resolve of its own order id answered %s, want accepted", got.State)
	}
	for _, path := range []string{"/admin/orders/desk-a/k1?orderId=another", "/admin/order?client=desk-a&key=k1&orderId=another"} {
		if w := e.do("DELETE", path, opsToken, ""); w.Code != 409 || problemCode(t, w) != "order_mismatch" {
			t.Errorf("DELETE %s = %d %s, want 409 order_mismatch", path, w.Code, w.Body)
		}
	}
	if w := e.do("GET", "/admin/orders/desk-a/k1?orderId="+d.OrderID, opsToken, ""); w.Code != 400 || problemCode(t, w) != "invalid_query" {
		t.Errorf("GET with orderId = %d %s, want 400 invalid_query", w.Code, w.Body)
	}
	if got := decodeEntry(t, e.do("DELETE", "/admin/order?client=desk-a&key=k1&orderId="+d.OrderID, opsToken, "")); got.State != "accepted" {
		t.Errorf("the purge of its own order id answered %s, want the accepted receipt", got.State)
	}
}

// TestAnInvalidQueryNamesItsPathsRule: a query an admin path does not
// take is answered with that path's rule, not another path's.
func TestAnInvalidQueryNamesItsPathsRule(t *testing.T) {
	tests := []struct{ path, detail string }{
		{"/admin/orders?sort=key", "The query takes state, client, cursor and limit."},
		{"/admin/orders?limit=0", "Limit is a whole number from 1 to 1000."},
		{"/admin/order?client=desk-a&key=k1&sort=key", "The query takes client and key, once each, and for a resolve or a purge orderId."},
		{"/admin/deadletters?sort=key", "The dead letters' query takes cursor and limit."},
		{"/admin/deadletter?client=desk-a&key=k1&sort=key", "The query takes client and key, and letterId to acknowledge one letter, once each."},
	}
	for _, tc := range tests {
		e := newAdminEnv(t, false)
		w := e.do("GET", tc.path, opsToken, "")
		var p struct{ Error, Detail string }
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != 400 || p.Error != "invalid_query" || p.Detail != tc.detail {
			t.Errorf("GET %s = %d %s, want 400 invalid_query with the detail %q", tc.path, w.Code, w.Body, tc.detail)
		}
	}
}

// TestAnEmptyOrderIDIsNoPreconditionToSkip: a resolve or a purge given
// orderId= with nothing after it (a script's unset variable) names an
// order id no key holds; it must not act as if it had named none.
func TestAnEmptyOrderIDIsNoPreconditionToSkip(t *testing.T) {
	for _, path := range []string{
		"/admin/orders/desk-a/k1/resolve?orderId=",
		"/admin/order/resolve?client=desk-a&key=k1&orderId=",
	} {
		e := newAdminEnv(t, false)
		e.unknownKey(t, "k1")
		w := e.do("POST", path, opsToken, `{"status":"accepted"}`)
		if w.Code != 400 || problemCode(t, w) != "invalid_query" {
			t.Errorf("POST %s = %d %s, want 400 invalid_query", path, w.Code, w.Body)
		}
		if got := decodeEntry(t, e.do("GET", "/admin/orders/desk-a/k1", opsToken, "")); got.State != "unknown" {
			t.Errorf("after POST %s the key is %s, want still unknown", path, got.State)
		}
	}
}
