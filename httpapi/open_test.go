package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// TestAClosedWorkerRefusesOrdersOnEveryHost checks Closed: without API
// tokens, every order and lookup is a 500 misconfigured that names the two
// settings, before any storage call, whatever host the request names (a
// loopback one included: under `wrangler dev --ip 0.0.0.0` anyone may send
// Host: localhost); the policy page is served.
func TestAClosedWorkerRefusesOrdersOnEveryHost(t *testing.T) {
	tests := []struct {
		name, method, host, path string
		key                      *string
		wantStatus               int
	}{
		{"a POST to a workers.dev host is refused", http.MethodPost, "edge-orders.example.workers.dev", "/orders", ptr("k"), 500},
		{"a lookup on a custom domain is refused", http.MethodGet, "orders.example.com", "/orders", ptr("k"), 500},
		{"a POST naming 127.0.0.1 is refused", http.MethodPost, "127.0.0.1:8787", "/orders", ptr("k"), 500},
		{"a POST naming localhost is refused", http.MethodPost, "localhost:8787", "/orders", ptr("k"), 500},
		{"a POST naming [::1] is refused", http.MethodPost, "[::1]:8787", "/orders", ptr("k"), 500},
		{"the policy page is served", http.MethodGet, "orders.example.com", httpapi.PolicyPath, nil, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &kvtest.Recording{Namespace: kv.NewMemoryNamespace()}
			h := httpapi.New(newService(store), httpapi.Options{Closed: true})
			r := request(tc.method, tc.key, strings.NewReader(validBody))
			r.URL.Path, r.Host = tc.path, tc.host
			w := serve(h, r)
			if w.Code != tc.wantStatus {
				t.Fatalf("status = %d %s, want %d", w.Code, w.Body, tc.wantStatus)
			}
			if tc.wantStatus != 500 {
				return
			}
			body := w.Body.String()
			if !strings.Contains(body, `"error":"misconfigured"`) || !strings.Contains(body, "API_TOKENS") || !strings.Contains(body, "OPEN_ACCESS") {
				t.Errorf("body = %s, want misconfigured naming API_TOKENS and OPEN_ACCESS", body)
			}
			if w.Header().Get("Content-Type") != problemType {
				t.Errorf("Content-Type = %q, want %s", w.Header().Get("Content-Type"), problemType)
			}
			if got := store.Calls(); len(got) != 0 {
				t.Errorf("storage calls %v, want none", got)
			}
		})
	}
	t.Run("an open Worker serves a public host", func(t *testing.T) {
		h := httpapi.New(newService(kv.NewMemoryNamespace()), httpapi.Options{})
		r := request(http.MethodPost, ptr("k"), strings.NewReader(validBody))
		r.Host = "orders.example.com"
		if w := serve(h, r); w.Code != 201 {
			t.Errorf("status = %d %s, want 201", w.Code, w.Body)
		}
	})
}
