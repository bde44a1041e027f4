//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// startCPU starts each build's Go program n times, each in a fresh Node.js
// process (bench/start.mjs), the builds taking turns, and adds each start's
// CPU to its build: the module's compile, then its instantiation and Go's
// start until main blocks. kept[i] holds builds[i]'s files. CPU, not wall
// time: on a shared machine a start's wall time moves with the load.
func startCPU(ctx context.Context, builds []build, kept []string, n int) error {
	node := filepath.Join("node_modules", ".bin", "node")
	for round := range n {
		for j := range builds {
			i := (round + j) % len(builds)
			out, err := exec.CommandContext(ctx, node, filepath.Join("bench", "start.mjs"), kept[i]).Output()
			if err != nil {
				return fmt.Errorf("%s build, start %d: %w", builds[i].compiler, round+1, err)
			}
			var s struct{ CompileMs, StartMs float64 }
			if err := json.Unmarshal(out, &s); err != nil {
				return fmt.Errorf("%s build, start %d: %w: %s", builds[i].compiler, round+1, err, out)
			}
			builds[i].compiles = append(builds[i].compiles, s.CompileMs)
			builds[i].starts = append(builds[i].starts, s.StartMs)
		}
	}
	return nil
}

// startOnly builds the Worker with each compiler found (standard Go, and
// the pinned TinyGo where installed) into a folder of its own, and
// measures n starts of each (startCPU): make bench's start rows alone,
// in under a minute.
func startOnly(ctx context.Context, n int) (string, error) {
	compilers := []string{"go"}
	if _, err := exec.LookPath("tinygo"); err == nil {
		compilers = append(compilers, "tinygo")
	}
	var builds []build
	var kept []string
	defer func() {
		for _, dir := range kept {
			os.RemoveAll(dir)
		}
	}()
	for _, compiler := range compilers {
		dir, err := os.MkdirTemp("", "edge-orders-bench-start-")
		if err != nil {
			return "", err
		}
		kept = append(kept, dir)
		cmd := exec.CommandContext(ctx, "./build.sh")
		cmd.Env = append(os.Environ(), "COMPILER="+compiler, "BUILD_DIR="+dir, "EDGE_ORDERS_BUILT=")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s build: %w\n%s", compiler, err, out)
		}
		b, err := measureBuild(compiler, dir)
		if err != nil {
			return "", err
		}
		builds = append(builds, b)
	}
	if err := startCPU(ctx, builds, kept, n); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| compiler | wasm bytes | gzip -9 bytes | module compile, CPU ms | Go start, CPU ms |\n|---|---|---|---|---|\n")
	for _, bl := range builds {
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s |\n", bl.compiler, bl.wasmRaw, bl.wasmGz, spread(bl.compiles), spread(bl.starts))
	}
	fmt.Fprintf(&b, "\nCPU of %d starts of each build, each in a fresh Node.js process, the builds taking turns (bench/start.mjs): median (min–max).\n", n)
	return b.String(), nil
}

// spread is ms's median (min–max), or n/a for none.
func spread(ms []float64) string {
	if len(ms) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f (%.1f–%.1f)", median(ms), slices.Min(ms), slices.Max(ms))
}
