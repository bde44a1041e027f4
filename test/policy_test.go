//go:build !js

package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/api/apitest"
)

// describedBy is the Link of every problem about the key.
const describedBy = `</idempotency>; rel="describedby"`

// TestPublishedPolicy checks the IETF draft's published policy in the
// compiled Worker, in each mode: the page at /idempotency with the figures
// wrangler.toml configures, the Link to it on exactly the problems about
// the key, and a lookup that says when its outcome expires where the store
// knows it.
func TestPublishedPolicy(t *testing.T) {
	shareWorkers(t)
	forEachMode(t, func(t *testing.T, w *target) {
		t.Run("the policy states the running configuration", func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, w.URL()+"/idempotency", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Idempotency-Key", newKey(t)) // ignored: not a key route
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			page := string(apitest.CheckHTTPResponse(t, resp))
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/markdown; charset=utf-8" {
				t.Fatalf("GET /idempotency = %d %s, want 200 text/markdown:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), page)
			}
			want := []string{
				"# Idempotency policy",
				"1 to 255 printable ASCII characters",
				"kept 86400 seconds (24 hours, `RESULT_TTL_SECONDS`) after it is stored",
				"waits up to 2000 ms (`IN_PROGRESS_WAIT_MS`)",
				"`Retry-After: 60` (`PENDING_TTL_SECONDS`",
				"`422 idempotency_key_reused`",
				"no order-management system configured",
				"`Link: " + describedBy + "`",
			}
			if w.mode == "ledger" {
				want = append(want, "in the `Idempotency-Expires` response header")
			} else {
				want = append(want, "A lookup does not say when an outcome expires")
			}
			for _, s := range want {
				if !strings.Contains(page, s) {
					t.Errorf("the page does not say %q:\n%s", s, page)
				}
			}
		})

		t.Run("problems about the key link the policy, and no others", func(t *testing.T) {
			key := newKey(t)
			if got := w.post(t, key, validOrder); got.status != http.StatusCreated {
				t.Fatalf("POST = %d %s, want 201", got.status, got.body)
			}
			tests := []struct {
				name   string
				got    func() response
				status int
				code   string
				link   bool
			}{
				{"a missing key", func() response {
					return w.send(t, http.MethodPost, validOrder, "Content-Type", "application/json")
				}, 400, "missing_idempotency_key", true},
				{"a key sent twice", func() response { return w.post(t, key+", "+key, validOrder) }, 400, "invalid_idempotency_key", true},
				{"a key reused for another order", func() response {
					return w.post(t, key, `{"symbol":"MSFT","side":"sell","quantity":1}`)
				}, 422, "idempotency_key_reused", true},
				{"an invalid order", func() response { return w.post(t, newKey(t), `{"symbol":"MSFT"}`) }, 422, "invalid_order", false},
				{"a lookup of a free key", func() response { return w.lookup(t, newKey(t)) }, 404, "not_found", false},
				{"a wrong method", func() response { return w.send(t, http.MethodPut, "", "Idempotency-Key", key) }, 405, "method_not_allowed", false},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					got := tc.got()
					wantProblem(t, got, tc.status, tc.code)
					want := ""
					if tc.link {
						want = describedBy
					}
					if links := got.header.Values("Link"); len(links) > 1 || got.header.Get("Link") != want {
						t.Errorf("Link = %q on %s, want %q", links, tc.code, want)
					}
				})
			}
		})

		t.Run("a lookup says when its outcome expires where the store knows", func(t *testing.T) {
			key := newKey(t)
			created := w.post(t, key, validOrder)
			if created.status != http.StatusCreated || created.header.Get("Idempotency-Expires") != "" {
				t.Fatalf("POST = %d %s, Idempotency-Expires %q; want 201 without", created.status, created.body, created.header.Get("Idempotency-Expires"))
			}
			looked := w.lookup(t, key)
			if looked.status != http.StatusOK || looked.body != created.body {
				t.Fatalf("lookup = %d %s, want 200 and the receipt byte for byte: %s", looked.status, looked.body, created.body)
			}
			told := looked.header.Get("Idempotency-Expires")
			if w.mode == "kv" {
				if told != "" {
					t.Errorf("KV mode's lookup says Idempotency-Expires: %s, want nothing: KV does not tell", told)
				}
				return
			}
			// Without an OMS the ledger keeps a receipt RESULT_TTL_SECONDS
			// from its commit, a moment after its acceptance.
			expires, err := time.Parse(time.RFC3339Nano, told)
			from := time.UnixMilli(0)
			if r, perr := parseReceipt(created.body); perr == nil {
				from, _ = time.Parse(time.RFC3339Nano, r.AcceptedAt)
			}
			if lo := from.Add(24 * time.Hour); err != nil || expires.Before(lo) || expires.After(lo.Add(10*time.Second)) {
				t.Errorf("Idempotency-Expires = %q, want the receipt's acceptedAt plus 24 hours, within seconds: %v", told, lo)
			}
		})
	})
}
