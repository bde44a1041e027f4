//go:build !js

package e2e

import (
	"encoding/json"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLockListsEveryPlatformsBinary fails for a package in package-lock.json
// whose optional dependency has no entry in the lock: npm installs only
// what the lock lists (npm/cli#4828), so a lock written on Linux without
// workerd's macOS and Windows packages leaves those machines without a
// workerd, and wrangler fails at their first make dev.
func TestLockListsEveryPlatformsBinary(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Version              string            `json:"version"`
			OptionalDependencies map[string]string `json:"optionalDependencies"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	for _, at := range slices.Sorted(maps.Keys(lock.Packages)) {
		for _, dep := range slices.Sorted(maps.Keys(lock.Packages[at].OptionalDependencies)) {
			if !resolves(lock.Packages, at, dep) {
				t.Errorf("package-lock.json: %s's optional dependency %s has no entry: npm will never install it", at, dep)
			}
		}
	}
	// The one that matters most, named: every platform wrangler runs on.
	for _, platform := range []string{"darwin-64", "darwin-arm64", "linux-64", "linux-arm64", "windows-64"} {
		if _, ok := lock.Packages["node_modules/@cloudflare/workerd-"+platform]; !ok {
			t.Errorf("package-lock.json lists no @cloudflare/workerd-%s", platform)
		}
	}
}

// resolves reports whether dep, required by the package at (a lock key,
// "" for the root), has an entry where Node.js would find it: in at's own
// node_modules or in that of a folder above it.
func resolves[V any](packages map[string]V, at, dep string) bool {
	for dir := at; ; {
		key := path.Join(dir, "node_modules", dep)
		if _, ok := packages[key]; ok {
			return true
		}
		if dir == "" {
			return false
		}
		i := strings.LastIndex(dir, "node_modules/")
		if i < 0 {
			dir = ""
		} else {
			dir = strings.TrimSuffix(dir[:i], "/")
		}
	}
}
