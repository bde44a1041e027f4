//go:build !js

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/internal/wranglerdev"
)

// kind says which Worker a subject runs.
type kind int

const (
	goKV     kind = iota // the Go Worker in KV mode (top-level wrangler.toml)
	goLedger             // the Go Worker in ledger mode (--env ledger)
	jsPort               // the JavaScript port, test/reference/port
	seedTS               // the seed's TypeScript Worker, test/reference/seed: the yardstick
)

func (k kind) isGo() bool { return k == goKV || k == goLedger }

// subject is one Worker under test in one phase, served by its own
// `wrangler dev` from the shared snapshot, with its own fresh KV (and
// Durable Object) state.
type subject struct {
	name string // as the report shows it, e.g. "Go KV"
	kind kind
	// opts says what to serve; Dir and StateDir are filled in by start.
	opts wranglerdev.Options

	srv   *wranglerdev.Server
	state string
	// cold is wrangler's log line for the isolate's first request.
	cold      string
	coldMS    float64
	firstPOST time.Duration
	// Kept when the subject stops: wrangler's output, and how many times
	// the Go program started.
	logs          string
	goStartsAtEnd int
}

var (
	// wranglerRequestLine is wrangler's log line for one request, with its timing.
	wranglerRequestLine = regexp.MustCompile(`\[wrangler:info\] ([A-Z]+ \S+ \d{3})[^(\n]*\((\d+)ms\)`)
	// goStartedLine is the JS entry's log line when it starts the Go program.
	goStartedLine = regexp.MustCompile(`\{"event":"go_started","ms":([0-9.eE+-]+)\}`)
)

// start serves the subject from the snapshot in dir and times its first
// requests; on failure it cleans up after itself.
func (s *subject) start(ctx context.Context, dir string) error {
	var err error
	if s.state, err = os.MkdirTemp("", "edge-orders-bench-state-"); err != nil {
		return err
	}
	opts := s.opts
	opts.Dir, opts.StateDir = dir, s.state
	s.srv, err = wranglerdev.Start(ctx, opts)
	if err == nil {
		err = s.timeCold(ctx)
	}
	if err != nil {
		s.stop()
		return fmt.Errorf("starting %s: %w", s.name, err)
	}
	return nil
}

// timeCold records the Worker's cold start. wranglerdev.Start's readiness
// probe is the isolate's first request, so the client cannot time it; wrangler
// logs its duration, which is what we report. The first POST, timed here by
// the client, then finds the isolate (and the Go program) already running.
func (s *subject) timeCold(ctx context.Context) error {
	client := &http.Client{Timeout: requestTimeout}
	t := time.Now()
	status, answer, err := post(ctx, client, s.srv.URL, "bench-first-post", validOrder)
	s.firstPOST = time.Since(t)
	if err != nil || status != http.StatusCreated {
		return fmt.Errorf("first POST to %s: %s", s.name, describe(status, answer, err))
	}
	// wrangler logs a request once it has answered it; give the line a moment.
	for range 50 {
		if m := wranglerRequestLine.FindStringSubmatch(s.srv.Logs()); m != nil {
			s.cold = m[1]
			s.coldMS, _ = strconv.ParseFloat(m[2], 64)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil // the report says the timing is missing
}

// goStarts returns the ms of every go_started line logged so far: one per
// isolate that started the Go program.
func (s *subject) goStarts() []float64 {
	var ms []float64
	for _, m := range goStartedLine.FindAllStringSubmatch(s.srv.Logs(), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		ms = append(ms, v)
	}
	return ms
}

// version changes whenever the Go program starts in a new isolate (a Durable
// Object's isolate included), which starts cold.
func (s *subject) version() int { return len(s.goStarts()) }

// stop ends the subject's wrangler, if it runs, and removes its state.
func (s *subject) stop() {
	if s.srv != nil {
		s.srv.Stop()
	}
	if s.state != "" {
		os.RemoveAll(s.state)
	}
}

// prepare makes the snapshot every subject is served from and builds the Go
// Worker in it once, retrying for a while if it does not build (which
// happens while someone is editing it). It then takes the [build] section out
// of the snapshot's wrangler.toml, so that the several wrangler processes
// serving the Go Worker neither rebuild it at start (each would rewrite the
// wasm the others serve, and they would reload) nor watch the sources.
// Everything else in wrangler.toml stays as shipped.
func prepare(ctx context.Context) (dir string, err error) {
	for attempt := 1; ; attempt++ {
		if dir, err = snapshot("."); err != nil {
			return "", err
		}
		out, err := runBuild(ctx, dir)
		if err == nil {
			if err := stripBuildSection(filepath.Join(dir, "wrangler.toml")); err != nil {
				os.RemoveAll(dir)
				return "", err
			}
			return dir, nil
		}
		os.RemoveAll(dir)
		if attempt == buildAttempts || ctx.Err() != nil {
			return "", fmt.Errorf("build.sh: %v\n%s", err, lastLines(out, 15))
		}
		fmt.Fprintf(os.Stderr, "bench: the Go Worker did not build (attempt %d of %d; is someone editing it?), retrying in %s:\n%s\n",
			attempt, buildAttempts, buildRetryWait, lastLines(out, 15))
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(buildRetryWait):
		}
	}
}

// runBuild runs the snapshot's build.sh and returns its output.
func runBuild(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "./build.sh")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stripBuildSection removes the [build] table from the wrangler.toml at
// path: its header and every line up to the next table header.
func stripBuildSection(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out []string
	inBuild := false
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "[") {
			inBuild = t == "[build]"
		}
		if !inBuild {
			out = append(out, line)
		}
	}
	return os.WriteFile(path, []byte(strings.Join(out, "")), 0o644)
}
