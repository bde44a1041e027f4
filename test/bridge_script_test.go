//go:build !js

package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestBridgeScript runs the bridge's own JavaScript tests (workers/,
// *.test.mjs) with Node.js's test runner: what the bridge does where no
// Go code runs, such as the log line of an instance that trapped.
func TestBridgeScript(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(root, "workers", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workers/*.test.mjs: %v", err)
	}
	cmd := exec.Command(nodeBinary(t), append([]string{"--test", "--test-reporter=tap"}, files...)...)
	cmd.Dir = filepath.Join(root, "workers")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if pass, fail := tapCount(string(out), "pass"), tapCount(string(out), "fail"); pass < len(files) || fail != 0 {
		t.Fatalf("node --test: %d passed, %d failed, want every one of %d files' tests to pass\n%s", pass, fail, len(files), out)
	}
}
