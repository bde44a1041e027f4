//go:build !js

// Command bench measures the Go Worker against the JavaScript reference
// (bench/reference) under the same load, both in `wrangler dev` on loopback,
// and writes one markdown report to stdout and bench/results/.
//
// Run it from the repository root: go run ./bench (or make bench).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/edge-orders/edge-orders/internal/wranglerdev"
)

const (
	validOrder   = `{"symbol":"MSFT","side":"buy","quantity":100}`
	invalidOrder = `{"symbol":"MSFT","side":"hold","quantity":100}`

	// warmup is the unmeasured run each Worker gets before a scenario's first round.
	warmup = time.Second
	// buildAttempts and buildRetryWait bound the retries when the Go Worker
	// does not build, which happens while someone is editing it.
	buildAttempts  = 4
	buildRetryWait = time.Minute
	// referenceDir holds the JavaScript reference Worker.
	referenceDir = "bench/reference"
)

// scenario is one kind of load: which key and body each request sends and
// which answers are right.
type scenario struct {
	name   string
	body   string
	expect []int
	// key returns the Idempotency-Key of request n on connection c; prefix
	// makes the keys of each run distinct.
	key func(prefix string, n int64, c, conns int) string
	// seeded scenarios first POST key(prefix, 0, c, conns) once per connection.
	seeded bool
	// checkKeys counts the 201s per key and checks there is exactly one.
	checkKeys bool
}

func freshKey(prefix string, n int64, _, _ int) string { return prefix + strconv.FormatInt(n, 10) }

// scenarios lists every scenario, in report order.
var scenarios = []scenario{
	{name: "new-key", body: validOrder, expect: []int{201}, key: freshKey},
	{name: "replay", body: validOrder, expect: []int{200}, seeded: true,
		key: func(prefix string, _ int64, c, _ int) string { return prefix + "conn" + strconv.Itoa(c) }},
	{name: "invalid", body: invalidOrder, expect: []int{422}, key: freshKey},
	// Requests are numbered in the order they are sent, so the conns requests
	// that share a key are sent at about the same moment.
	{name: "contention", body: validOrder, expect: []int{201, 200, 409}, checkKeys: true,
		key: func(prefix string, n int64, _, conns int) string {
			return prefix + strconv.FormatInt(n/int64(conns), 10)
		}},
	// A diagnostic: no Idempotency-Key, so a 400 before any KV call. It
	// measures what a request costs apart from storage (runtime, bridge, log).
	{name: "no-storage", body: validOrder, expect: []int{400},
		key: func(string, int64, int, int) string { return "" }},
}

// config is what the flags ask for.
type config struct {
	duration    time.Duration
	rounds      int
	conns       []int
	scenarios   []scenario
	maxRequests int64
}

func main() { os.Exit(run()) }

// run benchmarks and reports; it returns the exit code, so that the deferred
// clean-up (stopping both wrangler processes) always happens.
func run() int {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if _, err := os.Stat(filepath.Join(referenceDir, "wrangler.toml")); err != nil {
		fmt.Fprintln(os.Stderr, "bench: run me from the repository root (go run ./bench):", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	goW, err := startWorker(ctx, "Go", "wrangler.toml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: starting the Go Worker:", err)
		return 1
	}
	defer goW.stop()
	jsW, err := startWorker(ctx, "JS", filepath.Join(referenceDir, "wrangler.toml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: starting the JS reference:", err)
		return 1
	}
	defer jsW.stop()

	rep := &report{date: time.Now().UTC(), cfg: cfg, workers: [2]*worker{goW, jsW}}
	if rep.wasmRaw, rep.wasmGzip, err = wasmSizes(filepath.Join(goW.dir, "build", "edge-orders.wasm")); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	for _, sc := range cfg.scenarios {
		for _, conns := range cfg.conns {
			rep.rows = append(rep.rows, measure(ctx, cfg, sc, conns, rep.workers))
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "bench: interrupted; no report")
		return 1
	}
	rep.finish()

	text := rep.String()
	fmt.Print(text)
	path := filepath.Join("bench", "results", rep.date.Format("20060102T150405Z")+".md")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "bench: wrote", path)
	// The wrangler output explains errors and restarts; keep it beside the report.
	for _, w := range rep.workers {
		logPath := strings.TrimSuffix(path, ".md") + "-" + strings.ToLower(w.name) + ".log"
		if err := os.WriteFile(logPath, []byte(w.srv.Logs()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}
	if rep.goDuplicates() {
		fmt.Fprintln(os.Stderr, "bench: FAIL: the Go Worker placed more than one order for a key")
		return 1
	}
	return 0
}

// parseFlags reads the command line.
func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	cfg := config{}
	fs.DurationVar(&cfg.duration, "duration", 4*time.Second, "length of one measured run")
	fs.IntVar(&cfg.rounds, "rounds", 3, "measured runs per Worker, scenario and connection count")
	conns := fs.String("conns", "8,32", "comma-separated connection counts")
	names := fs.String("scenarios", "new-key,replay,invalid,contention,no-storage", "comma-separated scenarios")
	fs.Int64Var(&cfg.maxRequests, "max-requests", 200000, "cap on the requests of one run")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.duration <= 0 || cfg.rounds < 1 || cfg.maxRequests < 1 {
		return cfg, fmt.Errorf("-duration, -rounds and -max-requests must be positive")
	}
	for _, s := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1024 {
			return cfg, fmt.Errorf("-conns: %q is not a connection count from 1 to 1024", s)
		}
		cfg.conns = append(cfg.conns, n)
	}
	for _, name := range strings.Split(*names, ",") {
		i := slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == strings.TrimSpace(name) })
		if i < 0 {
			return cfg, fmt.Errorf("-scenarios: unknown scenario %q", name)
		}
		cfg.scenarios = append(cfg.scenarios, scenarios[i])
	}
	return cfg, nil
}

// worker is one Worker under test, served by its own `wrangler dev` from its
// own snapshot of the repository, with its own fresh KV state.
type worker struct {
	name  string // "Go" or "JS"
	srv   *wranglerdev.Server
	dir   string // the snapshot
	state string
	// cold is wrangler's log line for the isolate's first request.
	cold      string
	coldMS    float64
	firstPOST time.Duration
}

var (
	// wranglerRequestLine is wrangler's log line for one request, with its timing.
	wranglerRequestLine = regexp.MustCompile(`\[wrangler:info\] ([A-Z]+ \S+ \d{3})[^(\n]*\((\d+)ms\)`)
	// goStartedLine is the JS entry's log line when it starts the Go program.
	goStartedLine = regexp.MustCompile(`\{"event":"go_started","ms":([0-9.eE+-]+)\}`)
)

// startWorker serves the Worker of config (relative to the repository root)
// from a snapshot, retrying for a while if the Go Worker does not build, and
// times its first requests.
func startWorker(ctx context.Context, name, config string) (*worker, error) {
	for attempt := 1; ; attempt++ {
		w, err := tryStart(ctx, name, config)
		if err == nil {
			return w, nil
		}
		buildFailed := strings.Contains(err.Error(), "Running custom build")
		if !buildFailed || attempt == buildAttempts {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "bench: the %s Worker did not build (attempt %d of %d; is someone editing it?), retrying in %s:\n%s\n",
			name, attempt, buildAttempts, buildRetryWait, lastLines(err.Error(), 15))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(buildRetryWait):
		}
	}
}

// tryStart makes a snapshot and a state folder and serves the Worker from
// them; on failure it removes both.
func tryStart(ctx context.Context, name, config string) (*worker, error) {
	w := &worker{name: name}
	var err error
	if w.dir, err = snapshot("."); err != nil {
		return nil, err
	}
	if w.state, err = os.MkdirTemp("", "edge-orders-bench-state-"); err != nil {
		os.RemoveAll(w.dir)
		return nil, err
	}
	w.srv, err = wranglerdev.Start(ctx, wranglerdev.Options{Dir: w.dir, Config: config, StateDir: w.state})
	if err == nil {
		err = w.timeCold(ctx)
	}
	if err != nil {
		w.stop()
		return nil, err
	}
	return w, nil
}

// timeCold records the Worker's cold start. wranglerdev.Start's readiness
// probe is the isolate's first request, so the client cannot time it; wrangler
// logs its duration, which is what we report. The first POST, timed here by
// the client, then finds the isolate (and the Go program) already running.
func (w *worker) timeCold(ctx context.Context) error {
	client := &http.Client{Timeout: requestTimeout}
	t := time.Now()
	status, answer, err := post(ctx, client, w.srv.URL, "bench-first-post", validOrder)
	w.firstPOST = time.Since(t)
	if err != nil || status != http.StatusCreated {
		return fmt.Errorf("first POST to the %s Worker: %s", w.name, describe(status, answer, err))
	}
	// wrangler logs a request once it has answered it; give the line a moment.
	for range 50 {
		if m := wranglerRequestLine.FindStringSubmatch(w.srv.Logs()); m != nil {
			w.cold = m[1]
			w.coldMS, _ = strconv.ParseFloat(m[2], 64)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil // the report says the timing is missing
}

// goStarts returns the ms of every go_started line logged so far: one per
// isolate that started the Go program.
func (w *worker) goStarts() []float64 {
	var ms []float64
	for _, m := range goStartedLine.FindAllStringSubmatch(w.srv.Logs(), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		ms = append(ms, v)
	}
	return ms
}

// builds counts the times wrangler has run the Worker's build command; more
// than one means the sources changed while it ran.
func (w *worker) builds() int { return strings.Count(w.srv.Logs(), "[custom build] Running") }

// version changes whenever wrangler rebuilds the Worker or starts the Go
// program in a new isolate.
func (w *worker) version() int { return w.builds() + len(w.goStarts()) }

// stop ends the Worker's wrangler, if it runs, and removes its snapshot and state.
func (w *worker) stop() {
	if w.srv != nil {
		w.srv.Stop()
	}
	os.RemoveAll(w.dir)
	os.RemoveAll(w.state)
}

// measurement is one Worker's share of a row.
type measurement struct {
	rates []float64 // req/s of each round, in round order
	// rebuilt marks the rounds during which wrangler rebuilt the Go Worker or
	// started a new isolate: the build competes for the CPU, the code may have
	// changed, and a new isolate starts cold.
	rebuilt []bool
	pooled  Result   // all rounds together
	setup   Result   // warm-up and seeding, not measured
	check   keyCheck // over warm-up and all rounds (checkKeys scenarios)
}

// row is one scenario at one connection count, for both Workers.
type row struct {
	sc    scenario
	conns int
	m     [2]*measurement // indexed like report.workers
}

// measure runs one scenario at one connection count: a warm-up for each
// Worker, then the rounds, alternating which Worker goes first.
func measure(ctx context.Context, cfg config, sc scenario, conns int, workers [2]*worker) row {
	r := row{sc: sc, conns: conns}
	// runs holds each Worker's measured rounds; created its 201s per key,
	// warm-up included.
	var runs, created [2][]Result
	// load seeds if the scenario needs it, then runs one load against Worker i.
	load := func(i int, phase string, d time.Duration) Result {
		prefix := fmt.Sprintf("%s-%d-%s-", sc.name, conns, phase)
		key := func(n int64, c int) string { return sc.key(prefix, n, c, conns) }
		if sc.seeded {
			seed := seedKeys(ctx, workers[i].srv.URL, conns, func(c int) string { return key(0, c) })
			r.m[i].setup = merge([]Result{r.m[i].setup, seed})
		}
		res := Load{
			URL: workers[i].srv.URL, Conns: conns, Duration: d, MaxRequests: cfg.maxRequests,
			Request:      func(n int64, c int) (string, string) { return key(n, c), sc.body },
			Expect:       func(status int) bool { return slices.Contains(sc.expect, status) },
			CountCreated: sc.checkKeys,
		}.Run(ctx)
		created[i] = append(created[i], Result{Created: res.Created})
		return res
	}
	for i := range workers {
		r.m[i] = &measurement{}
		warm := load(i, "warm", warmup)
		r.m[i].setup = merge([]Result{r.m[i].setup, warm})
	}
	for round := range cfg.rounds {
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			version := workers[0].version()
			res := load(i, "r"+strconv.Itoa(round+1), cfg.duration)
			rebuilt := workers[0].version() != version
			runs[i] = append(runs[i], res)
			r.m[i].rates = append(r.m[i].rates, res.Rate())
			r.m[i].rebuilt = append(r.m[i].rebuilt, rebuilt)
			note := ""
			if rebuilt {
				note = " (wrangler rebuilt or restarted the Go Worker meanwhile)"
			}
			fmt.Fprintf(os.Stderr, "bench: %s, %d conns, round %d/%d, %s: %.0f req/s, %d sent, %d errors%s\n",
				sc.name, conns, round+1, cfg.rounds, workers[i].name, res.Rate(), res.Sent, res.Errors, note)
		}
	}
	for i := range workers {
		r.m[i].pooled = merge(runs[i])
		if sc.checkKeys {
			r.m[i].check = checkCreated(merge(created[i]).Created)
		}
	}
	return r
}

// seedKeys POSTs a valid order once under each connection's key, so that the
// run can replay them; a seed that does not get its 201 is an error.
func seedKeys(ctx context.Context, url string, conns int, key func(c int) string) Result {
	client := &http.Client{Timeout: requestTimeout}
	r := Result{Statuses: map[int]int{}}
	for c := range conns {
		t := time.Now()
		status, answer, err := post(ctx, client, url, key(c), validOrder)
		r.record(key(c), status, time.Since(t), err == nil && status == http.StatusCreated, "seed: "+describe(status, answer, err))
	}
	return r
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
