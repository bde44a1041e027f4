//go:build !js

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/wranglerdev"
)

// startWorker serves the Worker in its own wrangler dev with fresh state, for
// tests that need another configuration than the shared one.
func startWorker(t *testing.T, opts wranglerdev.Options) *wranglerdev.Server {
	t.Helper()
	opts.Dir = root
	srv, err := wranglerdev.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Stop()
		if t.Failed() {
			t.Logf("--- wrangler output ---\n%s", srv.Logs())
		}
	})
	return srv
}

// call sends a POST with the given headers (name, value pairs) to srv.
func call(t *testing.T, srv *wranglerdev.Server, body string, header ...string) response {
	t.Helper()
	return sendTo(t, srv.URL, http.MethodPost, body, header...)
}

// TestAuthenticatedClients runs the Worker with API tokens, as a secret in an
// env file (what .dev.vars holds locally and `wrangler secret put` in
// production), and checks authentication and per-client keys.
func TestAuthenticatedClients(t *testing.T) {
	requireWorker(t)
	const aliceToken, bobToken = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	env := filepath.Join(t.TempDir(), "secrets.env")
	if err := os.WriteFile(env, []byte("API_TOKENS=alice:"+aliceToken+",bob:"+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startWorker(t, wranglerdev.Options{EnvFile: env})

	t.Run("no token is 401 with a challenge", func(t *testing.T) {
		got := call(t, srv, validOrder, "Idempotency-Key", newKey(t))
		wantProblem(t, got, 401, "unauthorized")
		if got := got.header.Get("WWW-Authenticate"); got != `Bearer realm="edge-orders"` {
			t.Fatalf("WWW-Authenticate = %q", got)
		}
	})

	t.Run("a wrong token is 401 and stores nothing", func(t *testing.T) {
		key := newKey(t)
		got := call(t, srv, validOrder, "Idempotency-Key", key, "Authorization", "Bearer "+aliceToken+"x")
		wantProblem(t, got, 401, "unauthorized")
		if got := got.header.Get("WWW-Authenticate"); !strings.Contains(got, `error="invalid_token"`) {
			t.Fatalf("WWW-Authenticate = %q, want error=\"invalid_token\"", got)
		}
		// The same key with the right token is new: the refusal stored nothing.
		if got := call(t, srv, validOrder, "Idempotency-Key", key, "Authorization", "Bearer "+aliceToken); got.status != 201 {
			t.Fatalf("after a 401, the key = %d %s, want 201", got.status, got.body)
		}
	})

	t.Run("two clients sharing a key get two orders", func(t *testing.T) {
		key := newKey(t)
		alice := call(t, srv, validOrder, "Idempotency-Key", key, "Authorization", "Bearer "+aliceToken)
		bob := call(t, srv, validOrder, "Idempotency-Key", key, "Authorization", "Bearer "+bobToken)
		if alice.status != 201 || bob.status != 201 {
			t.Fatalf("alice %d %s, bob %d %s; want two 201s", alice.status, alice.body, bob.status, bob.body)
		}
		if decodeReceipt(t, alice.body).OrderID == decodeReceipt(t, bob.body).OrderID {
			t.Fatalf("alice and bob share an order: %s", alice.body)
		}
		again := call(t, srv, validOrder, "Idempotency-Key", key, "Authorization", "Bearer "+bobToken)
		if again.status != 200 || again.body != bob.body {
			t.Fatalf("bob's retry = %d %s, want his own receipt %s", again.status, again.body, bob.body)
		}
	})

	t.Run("submit-order.sh passes with API_TOKEN and fails without", func(t *testing.T) {
		script := exec.Command("bash", "submit-order.sh", srv.URL)
		script.Env = append(os.Environ(), "API_TOKEN="+aliceToken)
		if out, err := script.CombinedOutput(); err != nil {
			t.Fatalf("with API_TOKEN: %v\n%s", err, out)
		}
		if out, err := exec.Command("bash", "submit-order.sh", srv.URL).CombinedOutput(); err == nil {
			t.Fatalf("without a token the script passed:\n%s", out)
		}
	})

	t.Run("log lines name the client and never the token", func(t *testing.T) {
		deadline := time.Now().Add(2 * time.Second)
		for !strings.Contains(srv.Logs(), `"client":"bob"`) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		logs := srv.Logs()
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
}

// TestOpenModeSaysSoOnce checks the shared Worker, which has no tokens, logs
// once that it accepts orders from anyone.
func TestOpenModeSaysSoOnce(t *testing.T) {
	requireWorker(t)
	post(t, newKey(t), validOrder)
	if n := waitForLog(t, `"outcome":"auth_disabled"`, 2*time.Second); n != 1 {
		t.Fatalf("auth_disabled logged %d times, want once", n)
	}
}

// TestBadConfigurationIsRefused starts the Worker with settings KV would
// refuse and checks every request is a 500 naming the variable, before any
// KV call.
func TestBadConfigurationIsRefused(t *testing.T) {
	requireWorker(t)
	cases := []struct {
		name, value string
	}{
		{"RESULT_TTL_SECONDS", "30"},
		{"PENDING_TTL_SECONDS", "soon"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s=%s", c.name, c.value), func(t *testing.T) {
			srv := startWorker(t, wranglerdev.Options{Vars: map[string]string{c.name: c.value}})
			for i := 0; i < 2; i++ {
				got := call(t, srv, validOrder, "Idempotency-Key", newKey(t))
				p := wantProblem(t, got, 500, "misconfigured")
				if !strings.Contains(p.Detail, c.name) {
					t.Fatalf("detail %q does not name %s", p.Detail, c.name)
				}
			}
			deadline := time.Now().Add(2 * time.Second)
			for !strings.Contains(srv.Logs(), `"outcome":"misconfigured","error":"`+c.name) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if !strings.Contains(srv.Logs(), `"outcome":"misconfigured","error":"`+c.name) {
				t.Fatalf("no log line names %s:\n%s", c.name, srv.Logs())
			}
		})
	}
}
