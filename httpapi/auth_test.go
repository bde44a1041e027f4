package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// The configured clients' tokens; neither may ever show in a response or a
// log line.
const (
	aliceToken = "alice-tok-0123456789abcdef"
	bobToken   = "bob-tok-ZYXWVUTSRQ987654"
	// malloryToken is well formed but belongs to no client.
	malloryToken = "mallory-tok-55555555555555"
)

// Challenges sent with a 401.
const (
	challengeMissing = `Bearer realm="edge-orders"`
	challengeInvalid = `Bearer realm="edge-orders", error="invalid_token"`
)

// authHandler is a handler that requires alice's or bob's token.
type authHandler struct {
	*httpapi.Handler
	store *kvtest.Recording
	mem   *kv.MemoryNamespace
	lines []eventlog.Line
}

func newAuthHandler(t *testing.T) *authHandler {
	t.Helper()
	clients, err := auth.Parse("alice:" + aliceToken + ",bob:" + bobToken)
	if err != nil {
		t.Fatal(err)
	}
	a := &authHandler{mem: kv.NewMemoryNamespace()}
	a.store = &kvtest.Recording{Namespace: a.mem}
	a.Handler = httpapi.New(newService(a.store), httpapi.Options{Clients: clients, Log: logTo(&a.lines)})
	return a
}

// withAuth sets r's Authorization header, unless authorization is "".
func withAuth(r *http.Request, authorization string) *http.Request {
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	return r
}

// wantNoSecret fails if any of the secrets shows in what.
func wantNoSecret(t *testing.T, what, got string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(got, s) {
			t.Errorf("%s %s contains the secret %q", what, got, s)
		}
	}
}

// headersText is every response header as one string, for leak checks.
func headersText(w *httptest.ResponseRecorder) string {
	var b strings.Builder
	for name, values := range w.Header() {
		b.WriteString(name + ": " + strings.Join(values, ", ") + "\n")
	}
	return b.String()
}

func TestAuthRefusals(t *testing.T) {
	missing := eventlog.Line{Outcome: "unauthorized", Status: 401, Error: "auth: missing bearer token"}
	invalid := eventlog.Line{Outcome: "unauthorized", Status: 401, Error: "auth: invalid bearer token"}
	tests := []struct {
		name          string
		method        string
		authorization string // "" sends none
		key           *string
		body          string
		wantBody      string
		wantChallenge string
		wantLine      eventlog.Line
	}{
		{"no Authorization is a missing token", "POST", "", ptr("k"), validBody,
			problemMissingToken, challengeMissing, missing},
		{"unknown token is an invalid token", "POST", "Bearer " + malloryToken, ptr("k"), validBody,
			problemInvalidToken, challengeInvalid, invalid},
		{"Basic credentials are a missing token", "POST", "Basic YWxpY2U6c2VjcmV0", ptr("k"), validBody,
			problemMissingToken, challengeMissing, missing},
		{"alice's token under Basic is a missing token", "POST", "Basic " + aliceToken, ptr("k"), validBody,
			problemMissingToken, challengeMissing, missing},
		{"a bare token without a scheme is a missing token", "POST", aliceToken, ptr("k"), validBody,
			problemMissingToken, challengeMissing, missing},
		{"Bearer without a token is a missing token", "POST", "Bearer", ptr("k"), validBody,
			problemMissingToken, challengeMissing, missing},
		{"alice's token with one more character is an invalid token", "POST", "Bearer " + aliceToken + "x", ptr("k"), validBody,
			problemInvalidToken, challengeInvalid, invalid},
		{"alice's token less its last character is an invalid token", "POST", "Bearer " + aliceToken[:len(aliceToken)-1], ptr("k"), validBody,
			problemInvalidToken, challengeInvalid, invalid},
		{"the client-id:token pair is an invalid token", "POST", "Bearer alice:" + aliceToken, ptr("k"), validBody,
			problemInvalidToken, challengeInvalid, invalid},
		// Authentication comes first: nothing about the request is told to
		// someone without a token.
		{"GET without a token is unauthorized, not method not allowed", "GET", "", nil, "",
			problemMissingToken, challengeMissing, missing},
		{"a lookup without a token is unauthorized", "GET", "", ptr("k"), "",
			problemMissingToken, challengeMissing, missing},
		{"a lookup with an unknown token is unauthorized", "GET", "Bearer " + malloryToken, ptr("k"), "",
			problemInvalidToken, challengeInvalid, invalid},
		{"GET with an unknown token is unauthorized", "GET", "Bearer " + malloryToken, nil, "",
			problemInvalidToken, challengeInvalid, invalid},
		{"POST without a token or a key is unauthorized", "POST", "", nil, validBody,
			problemMissingToken, challengeMissing, missing},
		{"an invalid key without a token is unauthorized", "POST", "", ptr(strings.Repeat("k", 256)), validBody,
			problemMissingToken, challengeMissing, missing},
		{"a huge body without a token is unauthorized", "POST", "", ptr("k"), hugeBody,
			problemMissingToken, challengeMissing, missing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newAuthHandler(t)
			w := serve(h, withAuth(request(tc.method, tc.key, strings.NewReader(tc.body)), tc.authorization))
			check(t, w, response{401, tc.wantBody, map[string]string{
				"WWW-Authenticate": tc.wantChallenge, "Allow": "", "Retry-After": "", "Idempotent-Replay": "",
			}})
			if got := w.Header().Values("WWW-Authenticate"); len(got) != 1 {
				t.Errorf("WWW-Authenticate = %q, want one challenge", got)
			}
			if got := h.store.Calls(); len(got) != 0 {
				t.Errorf("storage calls = %v, want none", got)
			}
			if len(h.lines) != 1 {
				t.Fatalf("log lines = %+v, want one", h.lines)
			}
			got := h.lines[0]
			got.Millis = 0
			if got != tc.wantLine {
				t.Errorf("log line = %+v, want %+v", got, tc.wantLine)
			}
			sent := strings.TrimSpace(strings.TrimPrefix(tc.authorization, "Bearer"))
			sent = strings.TrimSpace(strings.TrimPrefix(sent, "Basic"))
			secrets := []string{aliceToken, bobToken, malloryToken, sent}
			wantNoSecret(t, "log line", string(h.lines[0].AppendJSON(nil)), secrets...)
			wantNoSecret(t, "body", w.Body.String(), secrets...)
			wantNoSecret(t, "headers", headersText(w), secrets...)
		})
	}
}

func TestAuthAccepts(t *testing.T) {
	tests := []struct {
		name          string
		authorization string
		wantClient    string
	}{
		{"alice's token is alice", "Bearer " + aliceToken, "alice"},
		{"bob's token is bob", "Bearer " + bobToken, "bob"},
		{"lower-case bearer is accepted", "bearer " + aliceToken, "alice"},
		{"upper-case BEARER is accepted", "BEARER " + bobToken, "bob"},
		{"surrounding spaces are ignored", "  Bearer   " + aliceToken + "  ", "alice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newAuthHandler(t)
			w := serve(h, withAuth(request(http.MethodPost, ptr("k"), strings.NewReader(validBody)), tc.authorization))
			if w.Code != http.StatusCreated {
				t.Fatalf("status = %d body = %s, want 201", w.Code, w.Body)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != "" {
				t.Errorf("WWW-Authenticate = %q on a 201, want none", got)
			}
			id := orderID(t, w)
			if len(h.lines) != 1 {
				t.Fatalf("log lines = %+v, want one", h.lines)
			}
			got := h.lines[0]
			got.Millis = 0
			want := eventlog.Line{Outcome: "created", Client: tc.wantClient, Key: "k", Status: 201, OrderID: id}
			if got != want {
				t.Errorf("log line = %+v, want %+v", got, want)
			}
			wantNoSecret(t, "log line", string(h.lines[0].AppendJSON(nil)), aliceToken, bobToken)
			wantNoSecret(t, "body", w.Body.String(), aliceToken, bobToken)
		})
	}
}

// TestAuthMethodAfterToken checks that an authenticated client still gets the
// method and key checks.
func TestAuthMethodAfterToken(t *testing.T) {
	h := newAuthHandler(t)
	w := serve(h, withAuth(request(http.MethodGet, nil, nil), "Bearer "+aliceToken))
	check(t, w, response{400, problemMissingKey, map[string]string{"Allow": "", "WWW-Authenticate": ""}})
	w = serve(h, withAuth(request(http.MethodPut, ptr("k"), strings.NewReader(validBody)), "Bearer "+aliceToken))
	check(t, w, response{405, problemMethodNotAllowed, map[string]string{"Allow": "GET, HEAD, POST", "WWW-Authenticate": ""}})
	w = serve(h, withAuth(request(http.MethodPost, nil, strings.NewReader(validBody)), "Bearer "+aliceToken))
	check(t, w, response{400, problemMissingKey, map[string]string{"WWW-Authenticate": ""}})
	if got := h.store.Calls(); len(got) != 0 {
		t.Errorf("storage calls = %v, want none", got)
	}
	for i, l := range h.lines {
		if l.Client != "alice" {
			t.Errorf("log line %d client = %q, want alice", i, l.Client)
		}
	}
}

func TestClientsShareNoKeys(t *testing.T) {
	h := newAuthHandler(t)
	post := func(token string) *httptest.ResponseRecorder {
		return serve(h, withAuth(request(http.MethodPost, ptr("shared"), strings.NewReader(validBody)), "Bearer "+token))
	}
	alice := post(aliceToken)
	bob := post(bobToken)
	if alice.Code != http.StatusCreated || bob.Code != http.StatusCreated {
		t.Fatalf("statuses = %d, %d, want 201 for each client's first order", alice.Code, bob.Code)
	}
	aliceID, bobID := orderID(t, alice), orderID(t, bob)
	if aliceID == bobID {
		t.Fatalf("alice and bob share order %s, want two orders", aliceID)
	}

	t.Run("bob's retry replays bob's receipt", func(t *testing.T) {
		w := post(bobToken)
		check(t, w, response{200, bob.Body.String(), map[string]string{"Idempotent-Replay": "true"}})
	})
	t.Run("alice's retry replays alice's receipt", func(t *testing.T) {
		w := post(aliceToken)
		check(t, w, response{200, alice.Body.String(), map[string]string{"Idempotent-Replay": "true"}})
	})
	t.Run("each receipt is stored under its client", func(t *testing.T) {
		for key, want := range map[string]string{"result:alice:shared": alice.Body.String(), "result:bob:shared": bob.Body.String()} {
			e, err := h.mem.Get(t.Context(), key)
			if err != nil || e.Value != want {
				t.Errorf("%s = %s, %v; want %s", key, e.Value, err, want)
			}
		}
		if _, err := h.mem.Get(t.Context(), "result:shared"); err == nil {
			t.Errorf("result:shared exists, want the keys scoped to clients")
		}
	})
	t.Run("log lines carry the client", func(t *testing.T) {
		want := []eventlog.Line{
			{Outcome: "created", Client: "alice", Key: "shared", Status: 201, OrderID: aliceID},
			{Outcome: "created", Client: "bob", Key: "shared", Status: 201, OrderID: bobID},
			{Outcome: "replayed", Client: "bob", Key: "shared", Status: 200, OrderID: bobID},
			{Outcome: "replayed", Client: "alice", Key: "shared", Status: 200, OrderID: aliceID},
		}
		if len(h.lines) != len(want) {
			t.Fatalf("log lines = %+v, want %d", h.lines, len(want))
		}
		for i, got := range h.lines {
			got.Millis = 0
			if got != want[i] {
				t.Errorf("log line %d = %+v, want %+v", i, got, want[i])
			}
			if j := string(h.lines[i].AppendJSON(nil)); !strings.Contains(j, `"client":"`+want[i].Client+`"`) {
				t.Errorf("log JSON %d = %s, want the client", i, j)
			}
		}
	})

	lookup := func(token, key string) *httptest.ResponseRecorder {
		return serve(h, withAuth(request(http.MethodGet, ptr(key), nil), "Bearer "+token))
	}
	t.Run("alice's lookup replays alice's receipt", func(t *testing.T) {
		check(t, lookup(aliceToken, "shared"), response{200, alice.Body.String(), map[string]string{"Idempotent-Replay": "true"}})
	})
	t.Run("bob's lookup replays bob's receipt", func(t *testing.T) {
		check(t, lookup(bobToken, "shared"), response{200, bob.Body.String(), map[string]string{"Idempotent-Replay": "true"}})
	})
	t.Run("another client's key is not found", func(t *testing.T) {
		mine := serve(h, withAuth(request(http.MethodPost, ptr("alice-only"), strings.NewReader(validBody)), "Bearer "+aliceToken))
		if mine.Code != http.StatusCreated {
			t.Fatalf("alice's order = %d %s, want 201", mine.Code, mine.Body)
		}
		before := len(h.store.Writes())
		w := lookup(bobToken, "alice-only")
		check(t, w, response{404, problemNotFound, map[string]string{"Idempotent-Replay": ""}})
		if strings.Contains(w.Body.String(), orderID(t, mine)) {
			t.Errorf("bob's lookup %s reveals alice's order", w.Body)
		}
		check(t, lookup(aliceToken, "alice-only"), response{200, mine.Body.String(), map[string]string{"Idempotent-Replay": "true"}})
		if got := h.store.Writes()[before:]; len(got) != 0 {
			t.Errorf("lookups wrote %v, want no writes", got)
		}
		last := h.lines[len(h.lines)-2]
		last.Millis = 0
		if want := (eventlog.Line{Outcome: "not_found", Client: "bob", Key: "alice-only", Status: 404, Error: "intake: no receipt for this key"}); last != want {
			t.Errorf("bob's lookup logged %+v, want %+v", last, want)
		}
	})
}

// TestLongestClientAndKey checks that the longest client id with the
// longest key still makes KV keys KV accepts.
func TestLongestClientAndKey(t *testing.T) {
	id := strings.Repeat("c", auth.MaxClientIDBytes)
	token := "longest-tok-0123456789"
	clients, err := auth.Parse(id + ":" + token)
	if err != nil {
		t.Fatal(err)
	}
	mem := kv.NewMemoryNamespace()
	h := httpapi.New(newService(mem), httpapi.Options{Clients: clients})
	key := strings.Repeat("k", httpapi.MaxIdempotencyKeyBytes)
	w := serve(h, withAuth(request(http.MethodPost, ptr(key), strings.NewReader(validBody)), "Bearer "+token))
	if w.Code != http.StatusCreated {
		t.Fatalf("status = %d body = %s, want 201", w.Code, w.Body)
	}
	if e, err := mem.Get(t.Context(), "result:"+id+":"+key); err != nil || e.Value != w.Body.String() {
		t.Errorf("stored receipt = %s, %v; want %s", e.Value, err, w.Body)
	}
	looked := serve(h, withAuth(request(http.MethodGet, ptr(key), nil), "Bearer "+token))
	check(t, looked, response{200, w.Body.String(), map[string]string{"Idempotent-Replay": "true"}})
}
