//go:build !js

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// TestAuthenticatedClients runs the Worker with API tokens, as a secret in an
// env file (what .dev.vars holds locally and `wrangler secret put` in
// production), and checks authentication and per-client keys, in both modes.
func TestAuthenticatedClients(t *testing.T) {
	requireWorker(t)
	t.Parallel() // its own Workers: waits beside the others (go test -parallel, make test)
	const aliceToken, bobToken = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	env := filepath.Join(t.TempDir(), "secrets.env")
	if err := os.WriteFile(env, []byte("API_TOKENS=alice:"+aliceToken+",bob:"+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"kv", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // each mode its own Worker
			w := startWorker(t, mode, wranglerdev.Options{EnvFile: env})
			as := func(token string) []string { return []string{"Authorization", "Bearer " + token} }
			post := func(t *testing.T, key string, auth ...string) response {
				t.Helper()
				return w.send(t, "POST", validOrder, append([]string{"Idempotency-Key", key}, auth...)...)
			}

			t.Run("no token is 401 with a challenge", func(t *testing.T) {
				got := post(t, newKey(t))
				wantProblem(t, got, 401, "unauthorized")
				if got := got.header.Get("WWW-Authenticate"); got != `Bearer realm="edge-orders"` {
					t.Fatalf("WWW-Authenticate = %q", got)
				}
			})

			t.Run("a wrong token is 401 and stores nothing", func(t *testing.T) {
				key := newKey(t)
				got := post(t, key, as(aliceToken+"x")...)
				wantProblem(t, got, 401, "unauthorized")
				if got := got.header.Get("WWW-Authenticate"); !strings.Contains(got, `error="invalid_token"`) {
					t.Fatalf("WWW-Authenticate = %q, want error=\"invalid_token\"", got)
				}
				// The same key with the right token is new: the refusal stored nothing.
				if got := post(t, key, as(aliceToken)...); got.status != 201 {
					t.Fatalf("after a 401, the key = %d %s, want 201", got.status, got.body)
				}
			})

			t.Run("two clients sharing a key get two orders", func(t *testing.T) {
				key := newKey(t)
				alice, bob := post(t, key, as(aliceToken)...), post(t, key, as(bobToken)...)
				if alice.status != 201 || bob.status != 201 {
					t.Fatalf("alice %d %s, bob %d %s; want two 201s", alice.status, alice.body, bob.status, bob.body)
				}
				if decodeReceipt(t, alice.body).OrderID == decodeReceipt(t, bob.body).OrderID {
					t.Fatalf("alice and bob share an order: %s", alice.body)
				}
				again := post(t, key, as(bobToken)...)
				if again.status != 200 || again.body != bob.body {
					t.Fatalf("bob's retry = %d %s, want his own receipt %s", again.status, again.body, bob.body)
				}
			})

			t.Run("a lookup sees only the caller's own keys", func(t *testing.T) {
				key := newKey(t)
				if got := post(t, key, as(aliceToken)...); got.status != 201 {
					t.Fatalf("alice = %d %s, want 201", got.status, got.body)
				}
				wantProblem(t, w.send(t, "GET", "", append([]string{"Idempotency-Key", key}, as(bobToken)...)...), 404, "not_found")
				if got := w.send(t, "GET", "", append([]string{"Idempotency-Key", key}, as(aliceToken)...)...); got.status != 200 {
					t.Fatalf("alice's lookup = %d %s, want 200", got.status, got.body)
				}
			})

			t.Run("submit-order.sh passes with API_TOKEN and fails without", func(t *testing.T) {
				script := exec.Command("bash", "../submit-order.sh", w.URL())
				script.Env = append(os.Environ(), "API_TOKEN="+aliceToken)
				if out, err := script.CombinedOutput(); err != nil {
					t.Fatalf("with API_TOKEN: %v\n%s", err, out)
				}
				if out, err := exec.Command("bash", "../submit-order.sh", w.URL()).CombinedOutput(); err == nil {
					t.Fatalf("without a token the script passed:\n%s", out)
				}
			})

			t.Run("log lines name the client and never the token", func(t *testing.T) {
				w.countLog(t, `"client":"bob"`, 10*time.Second)
				logs := w.Logs()
				if !strings.Contains(logs, `{"outcome":"created","client":"bob"`) || !strings.Contains(logs, `{"outcome":"unauthorized"`) {
					t.Fatalf("log lacks the client or the 401:\n%s", logs)
				}
				if strings.Contains(logs, aliceToken) || strings.Contains(logs, bobToken) {
					t.Fatal("a token reached the log")
				}
				if strings.Contains(logs, `"outcome":"auth_disabled"`) {
					t.Fatal("the Worker says it runs open while tokens are set")
				}
			})
		})
	}
}

// TestOpenModeSaysSoOnce checks the shared Workers, which have no tokens,
// log once that they accept orders from anyone.
func TestOpenModeSaysSoOnce(t *testing.T) {
	shareWorkers(t)
	forEachMode(t, func(t *testing.T, w *target) {
		w.post(t, newKey(t), validOrder)
		if n := w.countLog(t, `"outcome":"auth_disabled"`, 10*time.Second); n != 1 {
			t.Fatalf("auth_disabled logged %d times, want once", n)
		}
	})
}

// TestBadConfigurationIsRefused starts the Worker with settings that cannot
// work and checks every request is a 500 naming the variable, before any
// storage call.
func TestBadConfigurationIsRefused(t *testing.T) {
	requireWorker(t)
	t.Parallel() // its own Workers: waits beside the others (go test -parallel, make test)
	cases := []struct {
		mode, name, value string
	}{
		// One a mode: app's native tests check each kind of bad value.
		{"kv", "RESULT_TTL_SECONDS", "30"},
		{"ledger", "KV_FALLBACK_UNTIL", "tomorrow"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s=%s", c.mode, c.name, c.value), func(t *testing.T) {
			t.Parallel() // each waits mostly for its own wrangler dev to start
			w := startWorker(t, c.mode, wranglerdev.Options{Vars: map[string]string{c.name: c.value}})
			for i := 0; i < 2; i++ {
				p := wantProblem(t, w.post(t, newKey(t), validOrder), 500, "misconfigured")
				if !strings.Contains(p.Detail, c.name) {
					t.Fatalf("detail %q does not name %s", p.Detail, c.name)
				}
			}
			// Both requests, and wrangler dev's own probe at start, are logged.
			if n := w.logAtLeast(`"outcome":"misconfigured","error":"`+c.name, 2, 30*time.Second); n < 2 {
				t.Fatalf("%d log lines name %s, want one per request at least:\n%s", n, c.name, w.Logs())
			}
		})
	}
}
