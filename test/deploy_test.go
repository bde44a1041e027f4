//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/deploy"
	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// environments are wrangler.toml's, "" the top level (KV mode).
var environments = []string{"", "ledger", "ledger-front"}

// TestEveryEnvironmentDeploysDry runs make deploy DRY=1 for each
// environment of wrangler.toml, offline: package deploy has wrangler read
// the config, finds no placeholder and no setting the Worker cannot run
// with, and runs `wrangler deploy --dry-run`, which builds, bundles and
// validates; a wrangler warning anywhere fails it. A binding, migration or
// asset rule that wrangler refuses fails here, not on deploy day. Then it
// prints, and does not run, its commands: the deploy and, where a
// dead-letter queue is consumed, the update that gives it 14 days
// (1209600 s). It runs after build.sh (make test), whose build the dry
// run reuses.
func TestEveryEnvironmentDeploysDry(t *testing.T) {
	requireBuild(t)
	t.Parallel()
	want := map[string][]string{
		"":             {`wrangler deploy --env ""`, "wrangler queues update edge-orders-settle-dlq --message-retention-period-secs 1209600"},
		"ledger":       {"wrangler deploy --env ledger"},
		"ledger-front": {"wrangler deploy --env ledger-front"},
	}
	for _, env := range environments {
		name := env
		if name == "" {
			name = "top level (KV mode)"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("make", "-s", "deploy", "ENV="+env, "DRY=1")
			cmd.Dir = root
			// build.sh reuses the build make test made; wrangler runs it
			// as the [build] command of every deploy.
			cmd.Env = append(os.Environ(), "EDGE_ORDERS_BUILT=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make deploy ENV=%s DRY=1: %v\n%s", env, err, out)
			}
			var got []string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "wrangler ") {
					got = append(got, line)
				}
			}
			if !slices.Equal(got, want[env]) {
				t.Errorf("commands = %q, want %q\n%s", got, want[env], out)
			}
		})
	}
}

// requireBuild skips unless the end-to-end run is on, and fails without
// build.sh's build.
func requireBuild(t *testing.T) {
	t.Helper()
	if os.Getenv("EDGE_ORDERS_E2E") != "1" {
		t.Skip("end-to-end tests run with EDGE_ORDERS_E2E=1 (make test)")
	}
	if _, err := os.Stat(filepath.Join(root, "build", "edge-orders.wasm")); err != nil {
		t.Fatalf("no build (run ./build.sh first): %v", err)
	}
}

// TestADryRunFailsWherePlantedSettingsWouldFail plants, in a copy of
// wrangler.toml or in make deploy's SECRETS file, what Cloudflare would
// refuse or the Worker could not run with, and checks that the dry run
// fails on each with one line naming it, quoting no secret.
func TestADryRunFailsWherePlantedSettingsWouldFail(t *testing.T) {
	requireBuild(t)
	t.Parallel()
	shipped, err := os.ReadFile(filepath.Join(root, "wrangler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env, old, new, want string
		// secrets, if set, is the SECRETS file's content.
		secrets string
	}{
		{"a bad token list in SECRETS", "", "", "", "API_TOKENS: entry 1 is not of the form client-id:token",
			"API_TOKENS=desk-a=0123456789abcdef0123456789abcdef\n"},
		{"an all-zero KV id", "ledger",
			"[[env.ledger.kv_namespaces]]\nbinding = \"ORDERS\"\n",
			"[[env.ledger.kv_namespaces]]\nbinding = \"ORDERS\"\nid = \"00000000000000000000000000000000\"\n",
			`a placeholder Cloudflare would refuse: kv_namespaces[0].id = "00000000000000000000000000000000"`, ""},
		{"OPEN_ACCESS=1", "", "OPEN_ACCESS = \"false\"\n", "OPEN_ACCESS = \"1\"\n",
			`OPEN_ACCESS: "1" is neither "true" nor "false"`, ""},
		{"open access with required tokens", "", "OPEN_ACCESS = \"false\"\n", "OPEN_ACCESS = \"true\"\n",
			`OPEN_ACCESS is "true", but [secrets] requires API_TOKENS`, ""},
		{"a var wrangler warns is missing from an environment", "ledger-front",
			"DEAD_LETTER_QUEUE = \"edge-orders-settle-dlq\"\n\n[[env.ledger-front.", "\n[[env.ledger-front.",
			"wrangler warns: ▲ [WARNING] Processing", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(string(shipped), tc.old) {
				t.Fatalf("wrangler.toml has no %q to plant in", tc.old)
			}
			planted := strings.Replace(string(shipped), tc.old, tc.new, 1)
			// Beside wrangler.toml, so that its paths read the same.
			f, err := os.CreateTemp(root, ".planted-*.toml")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(f.Name()) })
			if _, err := f.WriteString(planted); err != nil {
				t.Fatal(err)
			}
			f.Close()
			opts := deploy.Options{Dir: root, Config: filepath.Base(f.Name()), Env: tc.env, Environ: []string{"EDGE_ORDERS_BUILT=1"}}
			if tc.secrets != "" {
				opts.SecretsFile = filepath.Join(t.TempDir(), "secrets.env")
				if err := os.WriteFile(opts.SecretsFile, []byte(tc.secrets), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, out, err := deploy.DryRun(opts)
			if err == nil {
				t.Fatalf("the dry run passed\n%s", out)
			}
			line, _, _ := strings.Cut(err.Error(), "\n")
			if !strings.Contains(line, tc.want) {
				t.Errorf("the dry run failed with %q, want one line with %q", line, tc.want)
			}
			if strings.Contains(err.Error(), "0123456789abcdef0123456789abcdef") {
				t.Errorf("the failure quotes a secret: %s", err)
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

// TestAWorkerNotToldToRunOpenRefusesOrdersOnLoopback serves the Worker
// under wrangler dev without API_TOKENS and with OPEN_ACCESS "false": its
// orders are a 500 misconfigured naming the settings that choose, on the
// loopback address too (which anyone may name under wrangler dev --ip
// 0.0.0.0), and the policy page is served. The shared Workers run open
// because the harness says so (wranglerdev), and serve a public host.
func TestAWorkerNotToldToRunOpenRefusesOrdersOnLoopback(t *testing.T) {
	requireWorker(t)
	t.Parallel()
	closed := startWorker(t, "kv", wranglerdev.Options{Vars: map[string]string{"OPEN_ACCESS": "false"}})
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		req, err := http.NewRequest(method, closed.URL()+"/orders", strings.NewReader(validOrder))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Idempotency-Key", newKey(t))
		req.Header.Set("Content-Type", "application/json")
		p := wantProblem(t, do(t, req), 500, "misconfigured")
		if !strings.Contains(p.Detail, "API_TOKENS") || !strings.Contains(p.Detail, "OPEN_ACCESS") {
			t.Errorf("%s detail = %q, want it to name API_TOKENS and OPEN_ACCESS", method, p.Detail)
		}
	}
	policy, err := http.NewRequest(http.MethodGet, closed.URL()+"/idempotency", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := do(t, policy); got.status != 200 {
		t.Errorf("the policy page = %d %s, want 200", got.status, got.body)
	}
	holdSharedWorkers(t)
	req, err := http.NewRequest(http.MethodPost, kvWorker.URL()+"/orders", strings.NewReader(validOrder))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "edge-orders.example.workers.dev"
	req.Header.Set("Idempotency-Key", newKey(t))
	req.Header.Set("Content-Type", "application/json")
	if got := do(t, req); got.status != 201 {
		t.Errorf("an order to the open shared Worker on a public host = %d %s, want 201", got.status, got.body)
	}
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

// TestADeployWithoutItsSecretIsRefused runs make deploy for KV mode, for
// real, against a stand-in for Cloudflare's API (CLOUDFLARE_API_BASE_URL)
// on which the Worker does not exist yet. Without SECRETS, wrangler's own
// check refuses: API_TOKENS is required ([secrets]) and not set, and
// nothing is created. With SECRETS, the deploy goes on, provisions, and
// uploads the Worker with API_TOKENS as a secret; the stand-in refuses the
// upload, which ends the test there.
func TestADeployWithoutItsSecretIsRefused(t *testing.T) {
	requireBuild(t)
	t.Parallel()
	secrets := filepath.Join(t.TempDir(), "secrets.env")
	const tokens = "desk-a:0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(secrets, []byte("API_TOKENS="+tokens+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, secrets string
		want          string
		wantCreated   bool
	}{
		{"without SECRETS it is refused, and nothing is created", "", "The following required secrets have not been set: API_TOKENS", false},
		{"with SECRETS the upload carries API_TOKENS as a secret", secrets, "stand-in for Cloudflare: uploads stop here", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeCloudflare(t)
			cmd := exec.Command("make", "-s", "deploy", "ENV=", "SECRETS="+tc.secrets)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "EDGE_ORDERS_BUILT=1", "CI=true", "WRANGLER_SEND_METRICS=false",
				"CLOUDFLARE_API_BASE_URL="+api.URL+"/client/v4", "CLOUDFLARE_API_TOKEN=stand-in",
				"CLOUDFLARE_ACCOUNT_ID=0123456789abcdef0123456789abcdef")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("make deploy = %v, want a failure saying %q\n%s", err, tc.want, out)
			}
			created, upload := api.seen()
			if created != tc.wantCreated {
				t.Errorf("resources created = %v, want %v\n%s", created, tc.wantCreated, out)
			}
			if tc.wantCreated && !strings.Contains(upload, `{"name":"API_TOKENS","type":"secret_text","text":"`+tokens+`"}`) {
				t.Errorf("the upload's bindings carry no API_TOKENS secret:\n%.2000s", upload)
			}
		})
	}
}

// fakeCloudflare answers as much of Cloudflare's API as a first deploy
// needs up to the upload, for an account where the Worker does not exist.
type fakeCloudflare struct {
	*httptest.Server
	mu      sync.Mutex
	created bool
	upload  string
}

func newFakeCloudflare(t *testing.T) *fakeCloudflare {
	f := &fakeCloudflare{}
	ok := func(w http.ResponseWriter, result string) {
		fmt.Fprintf(w, `{"success":true,"errors":[],"messages":[],"result":%s,"result_info":{"page":1,"per_page":100,"count":0,"total_count":0}}`, result)
	}
	fail := func(w http.ResponseWriter, status, code int, message string) {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"success":false,"errors":[{"code":%d,"message":%q}],"messages":[],"result":null}`, code, message)
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		path := r.URL.Path
		switch {
		case r.Method == http.MethodPost && (strings.HasSuffix(path, "/storage/kv/namespaces") || strings.HasSuffix(path, "/queues")):
			f.mu.Lock()
			f.created = true
			f.mu.Unlock()
			ok(w, `{"id":"6d3c5e0a9b1f4e2d8c7b6a5f4e3d2c1b","queue_id":"5e0a9b1f","queue_name":"created"}`)
		case r.Method == http.MethodPut && strings.Contains(path, "/workers/scripts/"):
			f.mu.Lock()
			f.upload = string(body)
			f.mu.Unlock()
			fail(w, 400, 10021, "stand-in for Cloudflare: uploads stop here")
		case strings.HasSuffix(path, "/assets-upload-session"):
			ok(w, `{"jwt":"stand-in","buckets":[]}`)
		case strings.HasSuffix(path, "/workers/subdomain"):
			ok(w, `{"subdomain":"stand-in"}`)
		case strings.Contains(path, "/workers/services/"):
			fail(w, 404, 10090, "This Worker does not exist on your account.")
		case strings.Contains(path, "/workers/scripts/"):
			fail(w, 404, 10007, "This Worker does not exist on your account.")
		default: // lists: no queues, no namespaces
			ok(w, `[]`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// seen reports whether anything was created, and the upload's body.
func (f *fakeCloudflare) seen() (created bool, upload string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.created, f.upload
}
