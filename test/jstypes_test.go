//go:build !js

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestJSClientTypesMatchItsCode type-checks clients/js/index.d.ts against
// index.js with tsc, TypeScript's compiler from npm: a typed caller's use
// (typecheck/usage.ts) compiles against the declarations, and every
// declared export is in the code with a type the declaration admits, and
// nothing more (typecheck/conformance.ts). It runs in a folder of its own
// where index.js is impl.js, so that the two are told apart. It needs
// `make tools`; under make test (EDGE_ORDERS_E2E=1) a missing tsc fails.
func TestJSClientTypesMatchItsCode(t *testing.T) {
	tsc, err := filepath.Abs(filepath.Join(root, "node_modules", ".bin", "tsc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tsc); err != nil {
		if os.Getenv("EDGE_ORDERS_E2E") == "1" {
			t.Fatalf("tsc is not installed (make tools): %v", err)
		}
		t.Skip("tsc is not installed (make tools)")
	}
	t.Parallel()
	js := filepath.Join(root, "clients", "js")
	dir := t.TempDir()
	copies := map[string]string{
		"typecheck/tsconfig.json":  "tsconfig.json",
		"typecheck/usage.ts":       "usage.ts",
		"typecheck/conformance.ts": "conformance.ts",
		"index.d.ts":               "index.d.ts",
		"index.js":                 "impl.js",
	}
	for from, to := range copies {
		b, err := os.ReadFile(filepath.Join(js, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(tsc, "-p", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(tsc)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: index.d.ts does not match index.js (clients/js/typecheck): %v\n%s", err, out)
	}
}
