package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

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

// TestADeadLetterStaysListedUntilAcknowledged: the key the settler gave
// up on goes to the dead-letter queue; the Worker's consumer records it
// where the admin API lists it, and it stays listed after the key itself
// expired, until an operator acknowledges it.
func TestADeadLetterStaysListedUntilAcknowledged(t *testing.T) {
	w := newWorld(t, map[string]string{"ADMIN_TOKENS": "ops:" + opsToken, "SETTLE_MAX_AGE_SECONDS": "60", "RESULT_TTL_SECONDS": "3600"})
	worker := app.New(w.env)
	admin := func(method, path string) *workers.Response {
		header := http.Header{}
		header.Set("Authorization", "Bearer "+opsToken)
		p, q, _ := strings.Cut(path, "?")
		return worker.Handler.ServeWorker(context.Background(), &workers.Request{Method: method, Path: p, Query: q, Header: header,
			Body: workers.ReaderBody(strings.NewReader(""))})
	}
	type letter struct{ Client, Key, State, OrderID string }
	letters := func() []letter {
		t.Helper()
		resp := admin("GET", "/admin/deadletters")
		var got struct{ DeadLetters []letter }
		if resp.Status != 200 || json.Unmarshal(resp.Body, &got) != nil {
			t.Fatalf("GET /admin/deadletters = %d %s", resp.Status, resp.Body)
		}
		return got.DeadLetters
	}
	w.lose = true
	if resp := w.post(worker.Handler, "k1"); resp.Status != 503 {
		t.Fatalf("order = %d %s", resp.Status, resp.Body)
	}
	w.advance(time.Minute)
	if err := worker.SettleMessage(context.Background(), w.settle.sent()[0]); err != nil {
		t.Fatal(err)
	}
	// Over KV the give-up is checked once reads have caught up.
	if sent := w.settle.sent(); len(sent) == 2 {
		w.advance(w.settle.delays[1])
		if err := worker.SettleMessage(context.Background(), sent[1]); err != nil {
			t.Fatal(err)
		}
	}
	dead := w.dead.sent()
	if len(dead) != 1 {
		t.Fatalf("dead letters sent: %q, want one", dead)
	}
	if got := letters(); len(got) != 0 {
		t.Fatalf("listed %v before the consumer ran, want none", got)
	}
	if err := worker.DeadLetterMessage(context.Background(), "m1", dead[0]); err != nil {
		t.Fatalf("DeadLetterMessage: %v", err)
	}
	got := letters()
	if len(got) != 1 || got[0].Client != "-" || got[0].Key != "k1" || got[0].State != "unresolved" || got[0].OrderID == "" {
		t.Fatalf("dead letters %+v, want k1 unresolved with its order id", got)
	}
	// Long past the key's own expiry, it is listed nowhere else.
	w.advance(30 * 24 * time.Hour)
	if resp := admin("GET", "/admin/orders"); resp.Status != 200 || string(resp.Body) != `{"orders":[]}` {
		t.Fatalf("GET /admin/orders = %d %s, want the key gone", resp.Status, resp.Body)
	}
	if got := letters(); len(got) != 1 || got[0].Key != "k1" {
		t.Fatalf("dead letters after the key expired: %+v, want k1 still", got)
	}
	if resp := admin("DELETE", "/admin/deadletters/-/k2"); resp.Status != 404 {
		t.Errorf("DELETE of a key with no letter = %d %s, want 404", resp.Status, resp.Body)
	}
	if resp := admin("DELETE", "/admin/deadletters/-/k1"); resp.Status != 200 {
		t.Fatalf("DELETE = %d %s, want 200", resp.Status, resp.Body)
	}
	if lines := w.lines("acknowledge"); len(lines) != 1 || lines[0]["admin"] != "ops" || lines[0]["key"] != "k1" || lines[0]["after"] != "acknowledged" {
		t.Errorf("audit lines %v, want ops acknowledging k1", lines)
	}
	if got := letters(); len(got) != 0 {
		t.Errorf("dead letters after the acknowledgement: %+v, want none", got)
	}
	if err := worker.DeadLetterMessage(context.Background(), "m2", []byte("not a message")); err != nil {
		t.Errorf("DeadLetterMessage of a body that is no message = %v, want nil: acknowledged", err)
	}
}
