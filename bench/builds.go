//go:build !js

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// build is what one compiler's Worker measured: its module's size, how
// long its Go program took to start, and its saturation phase.
type build struct {
	compiler        string
	wasmRaw, wasmGz int
	starts          []float64 // ms, one for each go_started log line
	phase           *phase
}

// measureBuild reads the module that compiler built into build/, as the
// phase's Workers serve it.
func measureBuild(compiler string) (build, error) {
	wasm, err := os.ReadFile(filepath.Join("build", "edge-orders.wasm"))
	if err != nil {
		return build{}, err
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write(wasm)
	w.Close()
	return build{compiler: compiler, wasmRaw: len(wasm), wasmGz: gz.Len()}, nil
}

// goStarts reads every go_started line (worker.mjs's, once per Go
// instance) from logs.
func goStarts(logs string) []float64 {
	var ms []float64
	for _, line := range strings.Split(logs, "\n") {
		var e struct {
			Event string  `json:"event"`
			MS    float64 `json:"ms"`
		}
		if i := strings.Index(line, `{"event":"go_started"`); i >= 0 && json.Unmarshal([]byte(line[i:]), &e) == nil {
			ms = append(ms, e.MS)
		}
	}
	return ms
}

// buildsTable sets the builds side by side: size, start, and from their
// saturation phases (first connection count, new keys) the Worker's CPU
// per request and its req/s against the seed measured beside it.
func (r *report) buildsTable(b *strings.Builder) {
	if len(r.builds) == 0 {
		return
	}
	b.WriteString("## The builds\n\n")
	b.WriteString("| compiler | wasm bytes | gzip -9 bytes | Go start ms, median (min–max, n) | Worker CPU ms per new order, KV / ledger | new-order req/s ÷ seed, KV / ledger |\n|---|---|---|---|---|---|\n")
	for _, bl := range r.builds {
		p := bl.phase
		conns := p.conns[0]
		cells := p.cells[newKey][conns]
		yard := slices.IndexFunc(p.subjects, func(s *subject) bool { return s.yardstick })
		seed := cells[yard].summary()
		var cpu, rate []string
		for i, s := range p.subjects {
			if s.compiler == "" {
				continue
			}
			m := cells[i].summary()
			cpu = append(cpu, fmt.Sprintf("%.2f", m.workerCPU))
			rate = append(rate, ratio(m.perSecond, seed.perSecond))
		}
		start := "n/a"
		if len(bl.starts) > 0 {
			start = fmt.Sprintf("%.0f (%.0f–%.0f, %d)", median(bl.starts), slices.Min(bl.starts), slices.Max(bl.starts), len(bl.starts))
		}
		fmt.Fprintf(b, "| %s | %d | %d | %s | %s | %s |\n", bl.compiler, bl.wasmRaw, bl.wasmGz, start, strings.Join(cpu, " / "), strings.Join(rate, " / "))
	}
	fmt.Fprintf(b, "\nCPU and req/s at %d connections in each build's saturation phase; the start is worker.mjs's go_started, from new WebAssembly.Instance until main blocks.\n\n", r.builds[0].phase.conns[0])
}

// buildFiles are what build.sh leaves in build/ for one compiler's Worker.
var buildFiles = []string{"edge-orders.wasm", "wasm_exec.js", "compiler", "tinygo.inputs"}

// keepBuild copies the build in build/ aside, into a folder of its own, so
// that startTimes can serve it again after another compiler's build.
func keepBuild() (string, error) {
	dir, err := os.MkdirTemp("", "edge-orders-bench-build-")
	if err != nil {
		return "", err
	}
	return dir, copyFiles(dir, "build")
}

func copyFiles(to, from string) error {
	for _, f := range buildFiles {
		data, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, f), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startTimes serves each build n times more in a fresh wrangler dev, the
// builds taking turns, and adds each start's go_started to its build: one
// start per isolate is too few to tell 5 ms from 20 on a shared machine.
// build.sh does not run (EDGE_ORDERS_BUILT=1): each start serves the build
// that kept[i] holds, copied back into build/.
func startTimes(ctx context.Context, builds []build, kept []string, n int) error {
	for round := range n {
		for j := range builds {
			i := (round + j) % len(builds)
			if err := copyFiles("build", kept[i]); err != nil {
				return err
			}
			state, err := os.MkdirTemp("", "edge-orders-bench-")
			if err != nil {
				return err
			}
			srv, err := wranglerdev.Start(ctx, wranglerdev.Options{Dir: ".", StateDir: state,
				Vars: map[string]string{"LOG_LEVEL": "errors"},
				Env:  []string{"EDGE_ORDERS_BUILT=1", "COMPILER=" + builds[i].compiler}})
			if err != nil {
				os.RemoveAll(state)
				return fmt.Errorf("%s build, start %d: %w", builds[i].compiler, round+1, err)
			}
			// wrangler dev is ready once the Worker answered, so its Go
			// program has started; its go_started line follows on
			// wrangler's output.
			var starts []float64
			for deadline := time.Now().Add(10 * time.Second); len(starts) == 0 && time.Now().Before(deadline); {
				if starts = goStarts(srv.Logs()); len(starts) == 0 {
					time.Sleep(20 * time.Millisecond)
				}
			}
			srv.Stop()
			os.RemoveAll(state)
			if len(starts) == 0 {
				return fmt.Errorf("%s build, start %d: no go_started line in its log", builds[i].compiler, round+1)
			}
			builds[i].starts = append(builds[i].starts, starts...)
		}
	}
	return nil
}
