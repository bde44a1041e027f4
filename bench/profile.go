//go:build !js

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/inspector"
	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// profileOptions are the flags of go run ./bench -profile.
type profileOptions struct {
	duration time.Duration
	conns    int
	top      int
	compiler string
	// dir serves the Go Worker from another checkout (with its own
	// node_modules): a before to compare with.
	dir string
	// out, if set, is a folder where each profile is saved whole, as
	// MODE-SCENARIO.cpuprofile.
	out string
}

// profileRun is one scenario's profile of one mode.
type profileRun struct {
	mode, scenario string
	answers        int
	busy           time.Duration
	samples        int
	entries        []inspector.Entry
}

// profile serves the Go Worker in KV mode and in ledger mode, as shipped
// but with LOG_LEVEL=errors and the wasm module's function names kept
// (build.sh's WASM_NAMES), and takes a CPU profile of its isolate through
// the V8 inspector under each scenario's load, after a warm-up. It prints,
// per mode and scenario, the isolate's busy time per answer and the
// functions with the most self time.
func profile(ctx context.Context, o profileOptions) error {
	modes := []struct{ name, env string }{{"KV", ""}, {"ledger", "ledger"}}
	var runs []profileRun
	for _, m := range modes {
		dir, err := os.MkdirTemp("", "edge-orders-profile-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		srv, err := wranglerdev.Start(ctx, wranglerdev.Options{
			Dir: o.dir, StateDir: dir, Environment: m.env, StartTimeout: 4 * time.Minute,
			Vars: map[string]string{"LOG_LEVEL": "errors"},
			Env:  []string{"COMPILER=" + o.compiler, "WASM_NAMES=1"},
		})
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		fmt.Fprintf(os.Stderr, "bench: profiling %s on %s\n", m.name, srv.URL)
		for _, sc := range []string{newKey, replay} {
			r, err := profileScenario(ctx, srv, o, m.name, sc)
			if err != nil {
				srv.Stop()
				return fmt.Errorf("%s, %s: %w", m.name, sc, err)
			}
			runs = append(runs, r)
		}
		srv.Stop()
	}
	fmt.Print(profileReport(runs, o))
	return nil
}

// profileScenario warms the Worker up with a second of the scenario's
// load, then profiles o.duration of it.
func profileScenario(ctx context.Context, srv *wranglerdev.Server, o profileOptions, mode, sc string) (profileRun, error) {
	key := ""
	if sc == replay {
		key = fmt.Sprintf("bench-profile-%d", time.Now().UnixNano())
		if _, err := post(ctx, srv.URL, key); err != nil {
			return profileRun{}, err
		}
	}
	if _, err := autocannon(ctx, srv.URL, o.conns, time.Second, key); err != nil {
		return profileRun{}, err
	}
	conn, err := inspector.Connect(ctx, srv.Inspector)
	if err != nil {
		return profileRun{}, err
	}
	defer conn.Close()
	if err := conn.StartProfiling(ctx, 100*time.Microsecond); err != nil {
		return profileRun{}, err
	}
	l, err := autocannon(ctx, srv.URL, o.conns, o.duration, key)
	if err != nil {
		return profileRun{}, err
	}
	// Let the work after the last responses settle into the profile.
	time.Sleep(500 * time.Millisecond)
	p, err := conn.StopProfiling(ctx)
	if err != nil {
		return profileRun{}, err
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return profileRun{}, err
		}
		name := strings.ToLower(mode) + "-" + sc + ".cpuprofile"
		if err := os.WriteFile(filepath.Join(o.out, name), p.Raw, 0o644); err != nil {
			return profileRun{}, err
		}
	}
	entries, busy := p.SelfTime()
	return profileRun{mode: mode, scenario: sc, answers: l.OK, busy: busy, samples: len(p.Samples), entries: entries}, nil
}

// profileReport writes each run's top entries as a markdown table.
func profileReport(runs []profileRun, o profileOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# CPU profile of the Go Worker (%s build), %d connections, %v a scenario\n\n", o.compiler, o.conns, o.duration)
	for _, r := range runs {
		perAnswer := 0.0
		if r.answers > 0 {
			perAnswer = float64(r.busy.Microseconds()) / 1000 / float64(r.answers)
		}
		fmt.Fprintf(&b, "## %s, %s: %d answers, the isolate busy %.2f ms per answer (%d samples)\n\n", r.mode, r.scenario, r.answers, perAnswer, r.samples)
		var wasm, goRuntime time.Duration
		for _, e := range r.entries {
			if name, ok := strings.CutPrefix(e.Function, inspector.WasmPrefix); ok {
				wasm += e.Self
				if strings.HasPrefix(name, "runtime.") || strings.HasPrefix(name, "internal_runtime") {
					goRuntime += e.Self
				}
			}
		}
		if r.busy > 0 {
			fmt.Fprintf(&b, "In Go's wasm: %.0f%%, of which Go's runtime (scheduler, allocator, collector) %.0f%%; the rest is JavaScript (bridge.mjs, wasm_exec.js, the runtime's APIs and bindings), V8's collector, (program) and (native).\n\n",
				100*float64(wasm)/float64(r.busy), 100*float64(goRuntime)/float64(r.busy))
		}
		b.WriteString("| self | ms per answer | function |\n|---|---|---|\n")
		for i, e := range r.entries {
			if i == o.top {
				break
			}
			ms := 0.0
			if r.answers > 0 {
				ms = float64(e.Self.Microseconds()) / 1000 / float64(r.answers)
			}
			fmt.Fprintf(&b, "| %.1f%% | %.3f | `%s` |\n", 100*e.Share, ms, e.Function)
		}
		b.WriteString("\n")
	}
	return b.String()
}
