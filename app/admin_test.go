package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/workers"
)

const opsToken = "ops-token-0123456789abcdef"

// TestAdminTokensTurnTheAdminAPIOn: with ADMIN_TOKENS, both modes list
// the key a lost answer left unknown, and log the listing as an audit
// line; without it, /admin/ is no admin API.
func TestAdminTokensTurnTheAdminAPIOn(t *testing.T) {
	list := func(h workers.Handler) *workers.Response {
		header := http.Header{}
		header.Set("Authorization", "Bearer "+opsToken)
		return h.ServeWorker(context.Background(), &workers.Request{Host: localHost, Method: "GET", Path: "/admin/orders", Header: header,
			Body: workers.ReaderBody(strings.NewReader(""))})
	}
	for _, mode := range []string{"kv", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, map[string]string{"ADMIN_TOKENS": "ops:" + opsToken, "STORAGE": mode})
			if mode == "ledger" {
				mem := ledger.NewMemoryStore()
				mem.Now = w.clock
				w.env.Ledger = func(int) intake.Store { return mem }
			}
			h := app.New(w.env).Handler
			w.lose = true
			if resp := w.post(h, "k1"); resp.Status != 503 {
				t.Fatalf("order with its answer lost = %d %s", resp.Status, resp.Body)
			}
			resp := list(h)
			var got struct {
				Orders []struct{ Key, State string }
			}
			if resp.Status != 200 || json.Unmarshal(resp.Body, &got) != nil || len(got.Orders) != 1 || got.Orders[0].Key != "k1" || got.Orders[0].State != "unknown" {
				t.Fatalf("list = %d %s, want k1 unknown", resp.Status, resp.Body)
			}
			if lines := w.lines("list"); len(lines) != 1 || lines[0]["level"] != "audit" || lines[0]["admin"] != "ops" {
				t.Errorf("audit lines %v, want one by ops", lines)
			}
		})
	}
	t.Run("without ADMIN_TOKENS", func(t *testing.T) {
		w := newWorld(t, nil)
		if resp := list(app.New(w.env).Handler); resp.Status != 400 {
			t.Errorf("GET /admin/orders = %d %s, want the 400 every path answers a GET without a key", resp.Status, resp.Body)
		}
	})
}
