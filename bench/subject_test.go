//go:build !js

package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStripBuildSection(t *testing.T) {
	in := `name = "edge-orders"
main = "worker.mjs"

# Builds the wasm.
[build]
command = "./build.sh"
watch_dir = ["main.go", "kv"]

[[kv_namespaces]]
binding = "ORDERS"

[env.ledger]
[env.ledger.vars]
STORAGE = "ledger"
`
	want := `name = "edge-orders"
main = "worker.mjs"

# Builds the wasm.
[[kv_namespaces]]
binding = "ORDERS"

[env.ledger]
[env.ledger.vars]
STORAGE = "ledger"
`
	path := filepath.Join(t.TempDir(), "wrangler.toml")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := stripBuildSection(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Go KV":                      "go-kv",
		"Go ledger LOG_LEVEL=errors": "go-ledger-log_level-errors",
		"seed TS":                    "seed-ts",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
