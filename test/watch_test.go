//go:build !js

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestWatchDirCoversTheWorker checks that wrangler.toml's [build] watch_dir
// names every folder of this module that the Worker's wasm is built from,
// so that `make dev` rebuilds whenever one of them changes.
func TestWatchDirCoversTheWorker(t *testing.T) {
	toml, err := os.ReadFile(filepath.Join(root, "wrangler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^watch_dir = \[(.*)\]$`).FindSubmatch(toml)
	if line == nil {
		t.Fatal("wrangler.toml has no watch_dir line")
	}
	var watched []string
	for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllSubmatch(line[1], -1) {
		watched = append(watched, string(q[1]))
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/edge-orders/edge-orders"
	for _, pkg := range strings.Fields(string(out)) {
		dir, ok := strings.CutPrefix(pkg, module+"/")
		if pkg == module {
			dir, ok = "main.go", true
		}
		if ok && !slices.Contains(watched, dir) {
			t.Errorf("the Worker is built from %s, which watch_dir %v does not name", dir, watched)
		}
	}
}
