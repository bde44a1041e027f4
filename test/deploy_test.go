//go:build !js

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// environments are wrangler.toml's, "" the top level (KV mode).
var environments = []string{"", "ledger", "ledger-front"}

// TestEveryEnvironmentDeploysDry runs `wrangler deploy --dry-run` for each
// environment of wrangler.toml, offline: wrangler validates the
// configuration, bundles worker.mjs with the wasm and reads the assets as
// a deploy would, and stops before it calls Cloudflare. A binding,
// migration or asset rule that wrangler refuses fails here, not on deploy
// day. It runs after build.sh (make test), whose build the dry run
// reuses.
func TestEveryEnvironmentDeploysDry(t *testing.T) {
	if os.Getenv("EDGE_ORDERS_E2E") != "1" {
		t.Skip("end-to-end tests run with EDGE_ORDERS_E2E=1 (make test)")
	}
	if _, err := os.Stat(filepath.Join(root, "build", "edge-orders.wasm")); err != nil {
		t.Fatalf("no build (run ./build.sh first): %v", err)
	}
	t.Parallel()
	for _, env := range environments {
		name := env
		if name == "" {
			name = "top level (KV mode)"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			cmd, err := wranglerdev.Command(root, "deploy", "--dry-run", "--env", env, "--outdir", out)
			if err != nil {
				t.Fatal(err)
			}
			// build.sh reuses the build make test made; wrangler runs it
			// as the [build] command of every deploy.
			cmd.Env = append(cmd.Env, "EDGE_ORDERS_BUILT=1")
			got, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(got), "--dry-run: exiting now.") {
				t.Fatalf("wrangler deploy --dry-run --env %q: %v\n%s", env, err, got)
			}
			if _, err := os.Stat(filepath.Join(out, "worker.js")); err != nil {
				t.Errorf("the dry run bundled no worker.js: %v\n%s", err, got)
			}
		})
	}
}

// compatibilityDate matches wrangler.toml's compatibility_date line.
var compatibilityDate = regexp.MustCompile(`(?m)^compatibility_date = "(\d{4}-\d{2}-\d{2})"$`)

// TestCompatibilityDateIsCurrent fails when wrangler.toml's
// compatibility_date is past the date the installed workerd supports
// (wrangler would fall back to an older one, so the tests would not run on
// what a deploy gets) or more than 30 days before it: the runtime's newer
// behaviour would go untested. workerd's version is 1.YYYYMMDD.N, its
// supported date. A wrangler upgrade that brings a newer workerd fails
// this until the date follows it, and the tests run on it.
func TestCompatibilityDateIsCurrent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "node_modules", "workerd", "package.json"))
	if err != nil {
		t.Skip("workerd is not installed (make tools)")
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(pkg.Version, ".")
	if len(parts) < 2 {
		t.Fatalf("workerd version %q is not 1.YYYYMMDD.N", pkg.Version)
	}
	supported, err := time.Parse("20060102", parts[1])
	if err != nil {
		t.Fatalf("workerd version %q is not 1.YYYYMMDD.N: %v", pkg.Version, err)
	}
	config, err := os.ReadFile(filepath.Join(root, "wrangler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	m := compatibilityDate.FindSubmatch(config)
	if m == nil {
		t.Fatal("wrangler.toml has no compatibility_date line")
	}
	date, err := time.Parse(time.DateOnly, string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case date.After(supported):
		t.Errorf("compatibility_date %s is past %s, the newest date workerd %s supports", m[1], supported.Format(time.DateOnly), pkg.Version)
	case supported.Sub(date) > 30*24*time.Hour:
		t.Errorf("compatibility_date %s is over 30 days before %s, the date workerd %s supports: move it on, and run make test", m[1], supported.Format(time.DateOnly), pkg.Version)
	}
}

// TestADeployedWorkerWithoutTokensRefusesOrders sends the shared Workers
// (no API_TOKENS, no OPEN_ACCESS) requests as Cloudflare routes a deployed
// Worker's, by a public hostname: wrangler dev takes the URL's host from
// the Host header. Orders are a 500 misconfigured naming the settings that
// choose, the policy page is served, and on loopback orders are placed.
func TestADeployedWorkerWithoutTokensRefusesOrders(t *testing.T) {
	shareWorkers(t)
	forEachMode(t, func(t *testing.T, w *target) {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			req, err := http.NewRequest(method, w.URL()+"/orders", strings.NewReader(validOrder))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = "edge-orders.example.workers.dev"
			req.Header.Set("Idempotency-Key", newKey(t))
			req.Header.Set("Content-Type", "application/json")
			got := do(t, req)
			p := wantProblem(t, got, 500, "misconfigured")
			if !strings.Contains(p.Detail, "API_TOKENS") || !strings.Contains(p.Detail, "OPEN_ACCESS") {
				t.Errorf("%s detail = %q, want it to name API_TOKENS and OPEN_ACCESS", method, p.Detail)
			}
		}
		req, err := http.NewRequest(http.MethodGet, w.URL()+"/idempotency", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "edge-orders.example.workers.dev"
		if got := do(t, req); got.status != 200 {
			t.Errorf("the policy page on a public host = %d %s, want 200", got.status, got.body)
		}
		if got := w.post(t, newKey(t), validOrder); got.status != 201 {
			t.Errorf("an order on loopback = %d %s, want 201", got.status, got.body)
		}
	})
}

// do sends req and reads its answer whole.
func do(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}
