//go:build !js

package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSnapshot(t *testing.T) {
	root := t.TempDir()
	files := map[string]os.FileMode{
		"go.mod":                   0o644,
		"build.sh":                 0o755,
		"order/order.go":           0o644,
		"test/reference/port/w.js": 0o644,
		".git/HEAD":                0o644,
		"build/edge-orders.wasm":   0o644,
		".wrangler/state/x":        0o644,
		"bench/results/old.md":     0o644,
		".dev.vars":                0o644,
		"node_modules/.bin/wr":     0o755,
	}
	for name, mode := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(name), mode); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := snapshot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)

	for _, name := range []string{"go.mod", "build.sh", "order/order.go", "test/reference/port/w.js"} {
		t.Run(name+" is copied", func(t *testing.T) {
			info, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := info.Mode().Perm(), files[name]; got != want {
				t.Errorf("mode = %v, want %v", got, want)
			}
		})
	}
	for _, name := range []string{".git", "build", ".wrangler", "bench/results", ".dev.vars"} {
		t.Run(name+" is left out", func(t *testing.T) {
			if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
				t.Errorf("Lstat = %v, want it missing", err)
			}
		})
	}
	t.Run("node_modules is linked", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", ".bin", "wr"))
		if err != nil || string(b) != "node_modules/.bin/wr" {
			t.Errorf("read through the link: %q, %v", b, err)
		}
		if info, err := os.Lstat(filepath.Join(dir, "node_modules")); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Errorf("node_modules is not a symlink: %v, %v", info, err)
		}
	})
}
