//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/api/apitest"
	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// The admin tests' client and admin, and their tokens.
const (
	adminDesk      = "admin-desk"
	adminDeskToken = "admin-desk-token-0123456789"
	adminName      = "oncall"
	adminToken     = "oncall-admin-token-0123456789"
)

// adminWorkers are a KV and a ledger Worker with API_TOKENS, ADMIN_TOKENS
// and the fake OMS, started once for the admin tests.
type adminWorkers struct {
	oms        *fakeOMS
	kv, ledger *target
}

var (
	adminOnce sync.Once
	admins    *adminWorkers
	adminErr  error
)

// startAdmin starts the admin tests' Workers, beside the shared gateway's
// fake OMS, once for the package (TestMain starts them with the gateway's
// for a whole run); they stop with the package.
func startAdmin(t *testing.T) *adminWorkers {
	t.Helper()
	g := startGateway(t)
	adminOnce.Do(func() { initAdmin(g) })
	if adminErr != nil {
		t.Fatal(adminErr)
	}
	return admins
}

// initAdmin is startAdmin's work, done once; its error is adminErr.
func initAdmin(g *gatewayWorkers) {
	dir, err := os.MkdirTemp("", "edge-orders-e2e-admin-")
	if err != nil {
		adminErr = err
		return
	}
	env := filepath.Join(dir, "admin.vars")
	secrets := "API_TOKENS=" + adminDesk + ":" + adminDeskToken + "\nADMIN_TOKENS=" + adminName + ":" + adminToken + "\n"
	if adminErr = os.WriteFile(env, []byte(secrets), 0o600); adminErr != nil {
		return
	}
	a := &adminWorkers{oms: g.oms}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, mode := range []string{"kv", "ledger"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := startTarget(mode, wrappedOptions(wranglerdev.Options{Vars: g.vars, EnvFile: env}))
			errs[i] = err
			if mode == "kv" {
				a.kv = w
			} else {
				a.ledger = w
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			adminErr = err
		}
	}
	admins = a
}

// stopAdmin stops what startAdmin started, printing the Workers' logs if
// the run failed; stopGateway stops the fake OMS.
func stopAdmin(failed bool) {
	if admins == nil {
		return
	}
	for _, w := range []*target{admins.kv, admins.ledger} {
		if w == nil {
			continue
		}
		w.srv.Stop()
		if failed {
			fmt.Fprintf(os.Stderr, "--- wrangler output, admin %s mode ---\n%s\n", w.mode, w.srv.Logs())
		}
		os.RemoveAll(w.state)
	}
}

// forEachAdminMode runs test against the KV and the ledger admin Workers,
// both at once.
func forEachAdminMode(t *testing.T, test func(t *testing.T, a *adminWorkers, w *target)) {
	t.Helper()
	a := startAdmin(t)
	for _, w := range []*target{a.kv, a.ledger} {
		t.Run(w.mode, func(t *testing.T) { t.Parallel(); test(t, a, w) })
	}
}

// admin makes one request of the admin API with token ("" for none).
func (w *target) admin(t *testing.T, method, path, token, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, w.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.StatusCode != http.StatusMethodNotAllowed {
		apitest.CheckResponse(t, req, resp.StatusCode, resp.Header, b)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// adminEntry is an entry of the admin API.
type adminEntry struct {
	Client, Key, State, OrderID string
	Attempts                    int
	NextAttemptAt               string
	Receipt                     json.RawMessage
}

// keyPath is the admin path of the desk's key.
func keyPath(key string) string {
	return "/admin/orders/" + adminDesk + "/" + url.PathEscape(key)
}

// deskPost places body under key as the desk.
func (w *target) deskPost(t *testing.T, key, body string) response {
	t.Helper()
	return w.send(t, http.MethodPost, body, "Idempotency-Key", key, "Content-Type", "application/json", "Authorization", "Bearer "+adminDeskToken)
}

// TestAdminResolvesAnOrderWhoseAnswerWasLost: the OMS accepts the order
// and the answer is lost, and the settler's calls fail; the operator sees
// the key as unknown, resolves it as accepted, and the client's retry gets
// that receipt without another call to the OMS.
func TestAdminResolvesAnOrderWhoseAnswerWasLost(t *testing.T) {
	shareWorkers(t)
	forEachAdminMode(t, func(t *testing.T, a *adminWorkers, w *target) {
		symbol, key := newSymbol(t), newKey(t)
		a.oms.script(symbol, drop, failBefore, failBefore, failBefore, failBefore, failBefore, failBefore, failBefore, failBefore)
		wantUnknown(t, w.deskPost(t, key, gatewayOrder(symbol)))

		// The settler may hold the key for the moment of its call, when
		// it is in progress, not unknown: the list is asked again then.
		var list response
		var listed *adminEntry
		for deadline := time.Now().Add(settleWithin); listed == nil && !time.Now().After(deadline); {
			list = w.admin(t, "GET", "/admin/orders?state=unknown&client="+adminDesk, adminToken, "")
			var page struct{ Orders []adminEntry }
			if list.status != 200 || json.Unmarshal([]byte(list.body), &page) != nil {
				t.Fatalf("list = %d %s, want 200", list.status, list.body)
			}
			for i := range page.Orders {
				if page.Orders[i].Key == key {
					listed = &page.Orders[i]
				}
			}
			if listed == nil {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if listed == nil || listed.State != "unknown" || listed.Client != adminDesk || listed.OrderID == "" || listed.Attempts < 1 {
			t.Fatalf("list %s lacks %s as unknown with its order id", list.body, key)
		}

		// The settler may hold the key for the moment of its call: the
		// resolve is answered 409 in_progress then, and asked again.
		var resolved response
		for deadline := time.Now().Add(settleWithin); ; {
			resolved = w.admin(t, "POST", keyPath(key)+"/resolve", adminToken, `{"status":"accepted","note":"found in the OMS"}`)
			if resolved.status != 409 || !strings.Contains(resolved.body, `"in_progress"`) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		var got adminEntry
		if resolved.status != 200 || json.Unmarshal([]byte(resolved.body), &got) != nil || got.State != "accepted" || got.OrderID != listed.OrderID {
			t.Fatalf("resolve = %d %s, want 200 accepted for %s", resolved.status, resolved.body, listed.OrderID)
		}
		r := decodeReceipt(t, string(got.Receipt))
		if r.OrderID != listed.OrderID || r.Status != "accepted" {
			t.Fatalf("resolved receipt %s, want %s accepted", got.Receipt, listed.OrderID)
		}
		calls := len(a.oms.orderIDs(symbol))

		retry := w.deskPost(t, key, gatewayOrder(symbol))
		if retry.status != 200 || retry.body != string(got.Receipt) || retry.header.Get("Idempotent-Replay") != "true" {
			t.Fatalf("the client's retry = %d %s, want the replay of %s", retry.status, retry.body, got.Receipt)
		}
		if n := len(a.oms.orderIDs(symbol)); n != calls {
			t.Errorf("OMS calls = %d after the retry, want %d: the retry replays the operator's answer", n, calls)
		}
		wantOneOrderID(t, a.oms, symbol, r)
		if !w.sawLog(`"action":"resolve","admin":"`+adminName+`"`, 10*time.Second) {
			t.Errorf("no audit line of the resolve in the log")
		}
		if strings.Contains(w.Logs(), adminToken) || strings.Contains(w.Logs(), adminDeskToken) {
			t.Errorf("a token reached the log")
		}
	})
}

// TestAdminPurge: a final key is purged and a retry under it is a new
// order; an unknown one is refused and kept.
func TestAdminPurge(t *testing.T) {
	shareWorkers(t)
	forEachAdminMode(t, func(t *testing.T, a *adminWorkers, w *target) {
		t.Run("a final key is purged and its retry is a new order", func(t *testing.T) {
			symbol, key := newSymbol(t), newKey(t)
			first := w.deskPost(t, key, gatewayOrder(symbol))
			if first.status != 201 {
				t.Fatalf("order = %d %s", first.status, first.body)
			}
			// The receipt is committed after the response: the purge waits
			// until the detail says it is stored.
			for deadline := time.Now().Add(settleWithin); ; {
				var d adminEntry
				detail := w.admin(t, "GET", keyPath(key), adminToken, "")
				if json.Unmarshal([]byte(detail.body), &d) == nil && d.State == "accepted" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the receipt was not stored within %v: detail %d %s", settleWithin, detail.status, detail.body)
				}
				time.Sleep(20 * time.Millisecond)
			}
			purged := w.admin(t, "DELETE", keyPath(key), adminToken, "")
			var got adminEntry
			if purged.status != 200 || json.Unmarshal([]byte(purged.body), &got) != nil || string(got.Receipt) != first.body {
				t.Fatalf("purge = %d %s, want 200 with the receipt %s", purged.status, purged.body, first.body)
			}
			if again := w.admin(t, "GET", keyPath(key), adminToken, ""); again.status != 404 {
				t.Errorf("detail after the purge = %d %s, want 404", again.status, again.body)
			}
			// KV's delete is seen at once where it was made; elsewhere
			// it takes up to 60 s.
			retry := w.deskPost(t, key, gatewayOrder(symbol))
			if retry.status != 201 || retry.header.Get("Idempotent-Replay") != "" {
				t.Fatalf("a retry after the purge = %d %s, want 201: a new order", retry.status, retry.body)
			}
			if n := len(a.oms.orderIDs(symbol)); n != 2 {
				t.Errorf("OMS calls = %d, want 2: the retry after the purge reached the OMS", n)
			}
		})
		t.Run("an unknown key is not purged", func(t *testing.T) {
			symbol, key := newSymbol(t), newKey(t)
			a.oms.script(symbol, drop, failBefore, failBefore, failBefore, failBefore, failBefore, failBefore, failBefore, failBefore)
			first := w.deskPost(t, key, gatewayOrder(symbol))
			wantUnknown(t, first)
			// The settler, due a second later, may be on the key by the
			// time a loaded machine asks: in progress, and not purged
			// either. The OMS fails all its calls.
			refused := w.admin(t, "DELETE", keyPath(key), adminToken, "")
			if strings.Contains(refused.body, `"in_progress"`) {
				wantProblem(t, refused, 409, "in_progress")
			} else {
				wantProblem(t, refused, 409, "outcome_not_final")
			}
			detail := w.admin(t, "GET", keyPath(key), adminToken, "")
			var got adminEntry
			if detail.status != 200 || json.Unmarshal([]byte(detail.body), &got) != nil || got.State != "unknown" && got.State != "in_progress" ||
				!strings.Contains(first.body, `"orderId":"`+got.OrderID+`"`) {
				t.Errorf("detail after the refused purge = %d %s, want the key still unknown (or in progress), with the order id of %s", detail.status, detail.body, first.body)
			}
		})
	})
}

// TestAdminTokensAreSeparate: a client's token is refused on /admin/, an
// admin's places no order, and a Worker without ADMIN_TOKENS answers
// /admin/ as any other path.
func TestAdminTokensAreSeparate(t *testing.T) {
	shareWorkers(t)
	forEachAdminMode(t, func(t *testing.T, a *adminWorkers, w *target) {
		t.Run("a client token on the admin API is forbidden", func(t *testing.T) {
			wantProblem(t, w.admin(t, "GET", "/admin/orders", adminDeskToken, ""), 403, "forbidden")
		})
		t.Run("no token on the admin API is unauthorized", func(t *testing.T) {
			wantProblem(t, w.admin(t, "GET", "/admin/orders", "", ""), 401, "unauthorized")
		})
		t.Run("an admin token places no order", func(t *testing.T) {
			symbol, key := newSymbol(t), newKey(t)
			got := w.send(t, http.MethodPost, gatewayOrder(symbol), "Idempotency-Key", key, "Content-Type", "application/json", "Authorization", "Bearer "+adminToken)
			wantProblem(t, got, 401, "unauthorized")
			if n := len(a.oms.orderIDs(symbol)); n != 0 {
				t.Errorf("OMS calls = %d, want none", n)
			}
		})
	})
	t.Run("without ADMIN_TOKENS /admin/ answers as before", func(t *testing.T) {
		g := startGateway(t)
		for _, w := range []*target{g.kv, g.ledger} {
			t.Run(w.mode, func(t *testing.T) {
				key := newKey(t)
				for _, path := range []string{"/admin/orders/-/" + key, "/admin/orders"} {
					req := func(p string) response {
						r, err := http.NewRequest("GET", w.URL()+p, nil)
						if err != nil {
							t.Fatal(err)
						}
						r.Header.Set("Idempotency-Key", key)
						resp, err := httpClient.Do(r)
						if err != nil {
							t.Fatal(err)
						}
						defer resp.Body.Close()
						b, _ := io.ReadAll(resp.Body)
						return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
					}
					admin, orders := req(path), req("/orders")
					if admin.status != 404 || admin.status != orders.status || admin.body != orders.body {
						t.Errorf("GET %s = %d %s, want what /orders answers: %d %s (the lookup's 404)", path, admin.status, admin.body, orders.status, orders.body)
					}
				}
			})
		}
	})
}

// TestAdminReachesADotKey: the runtime's URL parser removes a path
// segment . or .., percent-encoded too, so the key .. has no path of its
// own; the query form reaches it, and resolves it.
func TestAdminReachesADotKey(t *testing.T) {
	shareWorkers(t)
	forEachAdminMode(t, func(t *testing.T, a *adminWorkers, w *target) {
		symbol := newSymbol(t)
		a.oms.script(symbol, drop, failBefore, failBefore, failBefore, failBefore, failBefore, failBefore, failBefore, failBefore)
		wantUnknown(t, w.deskPost(t, "..", gatewayOrder(symbol)))
		if got := w.admin(t, "GET", "/admin/orders/"+adminDesk+"/%2E%2E", adminToken, ""); strings.Contains(got.body, `"key":".."`) && !strings.Contains(got.body, `"orders"`) {
			t.Logf("the runtime kept the segment %%2E%%2E: %d %s", got.status, got.body)
		}
		query := "?client=" + adminDesk + "&key=%2E%2E"
		var d adminEntry
		if got := w.admin(t, "GET", "/admin/order"+query, adminToken, ""); got.status != 200 || json.Unmarshal([]byte(got.body), &d) != nil || d.Key != ".." || (d.State != "unknown" && d.State != "in_progress") {
			t.Fatalf("GET /admin/order%s = %d %s, want .. unknown (or in progress, the settler on it)", query, got.status, got.body)
		}
		var resolved response
		for deadline := time.Now().Add(settleWithin); ; {
			resolved = w.admin(t, "POST", "/admin/order/resolve"+query, adminToken, `{"status":"accepted"}`)
			if resolved.status != 409 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if resolved.status != 200 || !strings.Contains(resolved.body, `"state":"accepted"`) {
			t.Fatalf("resolve = %d %s, want 200 accepted", resolved.status, resolved.body)
		}
		if retry := w.deskPost(t, "..", gatewayOrder(symbol)); retry.status != 200 || retry.header.Get("Idempotent-Replay") != "true" {
			t.Errorf("the client's retry = %d %s, want the replay", retry.status, retry.body)
		}
	})
}
