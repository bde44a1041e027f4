//go:build !js

package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/internal/wranglerdev"
)

// TestConformanceInWorkerd runs the store packages' checks, compiled to
// wasm, inside workerd: kv's against its local KV, ledger's against the
// real Ledger Durable Object (see test/conformance).
func TestConformanceInWorkerd(t *testing.T) {
	requireWorker(t)
	t.Parallel() // its own Workers: waits beside the others (go test -parallel, make test)
	for _, pkg := range []string{"kv", "ledger"} {
		testBinary, err := filepath.Abs(filepath.Join(root, "build", pkg+".test.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		build := exec.Command("go", "test", "-c", "-o", testBinary, "./"+pkg)
		build.Dir = root
		build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the %s test binary: %v\n%s", pkg, err, out)
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

	for _, tc := range []struct {
		pkg  string
		want []string
	}{
		{"kv", []string{"--- PASS: TestNamespaceConformance", "--- PASS: TestNamespaceKVRefusesWhatStoresRefuse", "--- PASS: TestStoreConformanceInWorkerd"}},
		{"ledger", []string{"--- PASS: TestClientConformance", "--- PASS: TestClientSweepRunsInWorkerd"}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			resp, err := http.Get(srv.URL + "/" + tc.pkg)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			t.Logf("go test -v in workerd:\n%s", out)
			if resp.StatusCode != 200 {
				t.Fatalf("the %s tests failed in workerd (status %d)", tc.pkg, resp.StatusCode)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(out), want) {
					t.Fatalf("output lacks %q: the checks did not run", want)
				}
			}
		})
	}
}
