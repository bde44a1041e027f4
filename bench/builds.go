//go:build !js

package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// build is what one compiler's Worker measured: its module's size, the
// CPU of its starts (startCPU), and its saturation phase.
type build struct {
	compiler        string
	wasmRaw, wasmGz int
	compiles        []float64 // CPU ms of the module's compile, one per start
	starts          []float64 // CPU ms of instantiation and Go's start, one per start
	phase           *phase
}

// measureBuild reads the module that compiler built into dir.
func measureBuild(compiler, dir string) (build, error) {
	wasm, err := os.ReadFile(filepath.Join(dir, "edge-orders.wasm"))
	if err != nil {
		return build{}, err
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write(wasm)
	w.Close()
	return build{compiler: compiler, wasmRaw: len(wasm), wasmGz: gz.Len()}, nil
}

// buildsTable sets the builds side by side: size, start, and from their
// saturation phases (first connection count, new keys) the Worker's CPU
// per request and its req/s against the seed measured beside it.
func (r *report) buildsTable(b *strings.Builder) {
	if len(r.builds) == 0 {
		return
	}
	b.WriteString("## The builds\n\n")
	b.WriteString("| compiler | wasm bytes | gzip -9 bytes | module compile, CPU ms | Go start, CPU ms | Worker CPU ms per new order, KV / ledger | new-order req/s ÷ seed, KV / ledger |\n|---|---|---|---|---|---|---|\n")
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
		fmt.Fprintf(b, "| %s | %d | %d | %s | %s | %s | %s |\n", bl.compiler, bl.wasmRaw, bl.wasmGz, spread(bl.compiles), spread(bl.starts), strings.Join(cpu, " / "), strings.Join(rate, " / "))
	}
	fmt.Fprintf(b, "\nCPU and req/s at %d connections in each build's saturation phase; the start is CPU, median (min–max) of %d starts of each build in a fresh Node.js process, the builds taking turns (bench/start.mjs): the module's compile, then instantiation and Go's start until main blocks.\n\n", r.builds[0].phase.conns[0], len(r.builds[0].starts))
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
