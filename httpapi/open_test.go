package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// TestAnOpenWorkerServesOrdersOnLoopbackOnly checks LoopbackOnly: without
// API tokens, a request routed by a public hostname (a deployed Worker's)
// is a 500 misconfigured that names the two settings, before any storage
// call; one for a loopback host (wrangler dev's) is served; the policy
// page is served everywhere.
func TestAnOpenWorkerServesOrdersOnLoopbackOnly(t *testing.T) {
	tests := []struct {
		name, method, host, path string
		key                      *string
		wantStatus               int
	}{
		{"a POST to a workers.dev host is refused", http.MethodPost, "edge-orders.example.workers.dev", "/orders", ptr("k"), 500},
		{"a lookup on a custom domain is refused", http.MethodGet, "orders.example.com", "/orders", ptr("k"), 500},
		{"a host that only starts like loopback is refused", http.MethodPost, "127.0.0.1.example.com", "/", ptr("k"), 500},
		{"localhost.example.com is refused", http.MethodPost, "localhost.example.com:8787", "/", ptr("k"), 500},
		{"wrangler dev on 127.0.0.1 is served", http.MethodPost, "127.0.0.1:8787", "/orders", ptr("k"), 201},
		{"another address in 127.0.0.0/8 is served", http.MethodPost, "127.1.2.3", "/orders", ptr("k"), 201},
		{"localhost is served", http.MethodPost, "localhost:8787", "/orders", ptr("k"), 201},
		{"[::1] is served", http.MethodPost, "[::1]:8787", "/orders", ptr("k"), 201},
		{"the policy page is served on a public host", http.MethodGet, "orders.example.com", httpapi.PolicyPath, nil, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &kvtest.Recording{Namespace: kv.NewMemoryNamespace()}
			h := httpapi.New(newService(store), httpapi.Options{LoopbackOnly: true})
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
	t.Run("without LoopbackOnly a public host is served", func(t *testing.T) {
		h := httpapi.New(newService(kv.NewMemoryNamespace()), httpapi.Options{})
		r := request(http.MethodPost, ptr("k"), strings.NewReader(validBody))
		r.Host = "orders.example.com"
		if w := serve(h, r); w.Code != 201 {
			t.Errorf("status = %d %s, want 201", w.Code, w.Body)
		}
	})
}
