//go:build !js

package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// TestConformanceInWorkerd runs the store packages' checks, compiled to
// wasm by the compiler that built the Worker, inside workerd: kv's against
// its local KV, ledger's against the real Ledger Durable Object (see
// test/conformance).
func TestConformanceInWorkerd(t *testing.T) {
	requireWorker(t)
	t.Parallel() // its own Workers: waits beside the others (go test -parallel, make test)
	compiler := builtBy(t)
	for _, c := range conformanceChecks {
		testBinary, err := filepath.Abs(filepath.Join(root, "build", c.pkg+".test.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		var build *exec.Cmd
		switch compiler {
		case "tinygo":
			// TinyGo's wasm_exec.js passes no flags: they are built in.
			build = exec.Command("tinygo", "test", "-c", "-target", "wasm", "-v", "-run", c.run, "-o", testBinary, "./"+c.pkg)
		default:
			build = exec.Command("go", "test", "-c", "-o", testBinary, "./"+c.pkg)
			build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
		}
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the %s test binary with %s: %v\n%s", c.pkg, compiler, err, out)
		}
	}
	srv, err := wranglerdev.Start(context.Background(), wranglerdev.Options{
		Dir:    root,
		Config: filepath.Join("test", "conformance", "wrangler.toml"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	for _, c := range conformanceChecks {
		t.Run(c.pkg, func(t *testing.T) {
			resp, err := http.Get(srv.URL + "/" + c.pkg + "?run=" + url.QueryEscape(c.run))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			t.Logf("go test -v in workerd (%s):\n%s", compiler, out)
			if resp.StatusCode != 200 || !ranToTheEnd(string(out)) {
				t.Fatalf("the %s tests failed in workerd (status %d); workerd's log:\n%s", c.pkg, resp.StatusCode, srv.Logs())
			}
			for _, want := range c.want {
				// The test's own line, not a subtest's ("Name/sub (").
				if !strings.Contains(string(out), want+" (") {
					t.Fatalf("output lacks %q: the checks did not run", want)
				}
			}
		})
	}
}

// ranToTheEnd reports whether a test binary's -test.v output shows it ran
// to its end and passed: its last line says PASS, and nothing panicked. A
// TinyGo binary that traps inside a test has been answered with status
// 200 and its output cut short.
func ranToTheEnd(out string) bool {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1] == "PASS" && !strings.Contains(out, "\npanic: ")
}

// conformanceChecks are the tests each store package runs in workerd, and
// what their output must show.
var conformanceChecks = []struct {
	pkg, run string
	want     []string
}{
	{"kv", "^(TestNamespace|TestStoreConformanceInWorkerd|TestStoreAdminConformanceInWorkerd)", []string{"--- PASS: TestNamespaceConformance", "--- PASS: TestNamespaceKVRefusesWhatStoresRefuse", "--- PASS: TestStoreConformanceInWorkerd",
		"--- PASS: TestStoreAdminConformanceInWorkerd"}},
	{"ledger", "^TestClient", []string{"--- PASS: TestClientConformance", "--- PASS: TestClientSweepRunsInWorkerd", "--- PASS: TestClientAdminConformance",
		"--- PASS: TestClientListingReadsWhatItLists", "--- PASS: TestClientSendsNoReleaseAgainThatTheObjectAnsweredOverloaded"}},
	{"workers", "^TestBinding", []string{"--- PASS: TestBindingKV", "--- PASS: TestBindingRateLimiter", "--- PASS: TestBindingDurableObjectNamespace",
		"--- PASS: TestBindingQueue", "--- PASS: TestBindingFetcher", "--- PASS: TestBindingAnalyticsEngineDataset"}},
}

// builtBy is the compiler that built the Worker the tests serve, as
// build.sh recorded it: "go" or "tinygo".
func builtBy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "build", "compiler"))
	if err != nil {
		t.Fatalf("which compiler built the Worker: %v", err)
	}
	return strings.TrimSpace(string(b))
}
