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

// TestKVConformanceInWorkerd runs the kv package's store checks, compiled to
// wasm, inside workerd against its local KV (see test/kvconformance).
func TestKVConformanceInWorkerd(t *testing.T) {
	requireWorker(t)
	testBinary, err := filepath.Abs(filepath.Join(root, "build", "kv.test.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "test", "-c", "-o", testBinary, "./kv")
	build.Dir = root
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the kv test binary: %v\n%s", err, out)
	}
	srv, err := wranglerdev.Start(context.Background(), wranglerdev.Options{
		Dir:    root,
		Config: filepath.Join("test", "kvconformance", "wrangler.toml"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	t.Logf("go test -v in workerd:\n%s", out)
	if resp.StatusCode != 200 {
		t.Fatalf("the kv tests failed in workerd (status %d)", resp.StatusCode)
	}
	for _, want := range []string{"--- PASS: TestWorkersConformance", "--- PASS: TestWorkersKVRefusesWhatStoresRefuse"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("output lacks %q: the checks did not run", want)
		}
	}
}
