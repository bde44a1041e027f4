//go:build !js

// Command bench measures the Go Worker, in KV mode and in ledger mode,
// against the seed's TypeScript Worker (test/reference/seed) and a JavaScript port
// (test/reference/port), all in `wrangler dev` on loopback, in two phases:
// production latency (every binding call delayed as real KV and Durable
// Object calls take) and local saturation (no delays, as shipped). It writes
// one markdown report to stdout and bench/results/. bench/README.md says
// what it measures and why.
//
// Run it from the repository root: go run ./bench (or make bench).
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
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

	// warmup is the unmeasured run each subject gets before a scenario's first round.
	warmup = time.Second
	// buildAttempts and buildRetryWait bound the retries when the Go Worker
	// does not build, which happens while someone is editing it.
	buildAttempts  = 4
	buildRetryWait = time.Minute
	// logLevelVar is the Go Worker's log level setting, where it has one;
	// quietLevel logs errors only.
	logLevelVar = "LOG_LEVEL"
	quietLevel  = "errors"
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
	// A diagnostic: no Idempotency-Key, so a 400 before any storage call. It
	// measures what a request costs apart from storage (runtime, bridge, log).
	{name: "no-storage", body: validOrder, expect: []int{400},
		key: func(string, int64, int, int) string { return "" }},
}

// config is what the flags ask for.
type config struct {
	// duration is one measured run of the saturation phase, latencyDuration
	// of the latency phase (whose requests are slow, so it needs longer runs
	// for the same number of answers).
	duration, latencyDuration time.Duration
	rounds                    int
	maxRequests               int64
	phases                    []string // "crossings", "latency", "saturation", in that order
	// latencyConns and latencyScenarios are the production-latency phase's;
	// conns and scenarios the saturation phase's.
	latencyConns, conns         []int
	latencyScenarios, scenarios []scenario
	delays                      delayModel
	// goVars are extra vars for every Go subject.
	goVars map[string]string
	// quiet adds Go subjects with LOG_LEVEL=errors to the saturation phase:
	// "auto" when config/config.go knows LOG_LEVEL, "on", "off".
	quiet string
	args  []string // the command line, for the report
}

// phase names.
const (
	latencyPhase    = "latency"
	saturationPhase = "saturation"
)

func main() { os.Exit(run()) }

// run benchmarks and reports; it returns the exit code, so that the deferred
// clean-up (stopping every wrangler process) always happens.
func run() int {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if _, err := os.Stat(filepath.Join("bench", "seed", "wrangler.toml")); err != nil {
		fmt.Fprintln(os.Stderr, "bench: run me from the repository root (go run ./bench):", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep := &report{date: time.Now().UTC(), cfg: cfg}
	fmt.Fprintf(os.Stderr, "bench: snapshot and build ...\n")
	dir, err := prepare(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if rep.wasmRaw, rep.wasmGzip, err = wasmSizes(filepath.Join(dir, "build", "edge-orders.wasm")); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	rep.logLevel = knowsLogLevel(dir)

	for _, name := range cfg.phases {
		if name == crossingsPhase {
			fmt.Fprintf(os.Stderr, "bench: crossings: counting the calls between Go and JavaScript per request\n")
			if rep.crossings, err = countCrossings(ctx, cfg, dir); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				return 1
			}
			continue
		}
		p := newPhase(name, cfg, rep.logLevel)
		fmt.Fprintf(os.Stderr, "bench: %s phase: %d subjects, about %s of load\n", name, len(p.subjects), p.estimate(cfg).Round(time.Second))
		err := p.run(ctx, cfg, dir)
		rep.phases = append(rep.phases, p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "bench: interrupted; no report")
			return 1
		}
	}

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
	for _, p := range rep.phases {
		for _, s := range p.subjects {
			logPath := strings.TrimSuffix(path, ".md") + "-" + p.name + "-" + slug(s.name) + ".log"
			if err := os.WriteFile(logPath, []byte(s.logs), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
			}
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
	cfg := config{args: args, goVars: map[string]string{}}
	fs.DurationVar(&cfg.duration, "duration", 2*time.Second, "length of one measured run in the saturation phase")
	fs.DurationVar(&cfg.latencyDuration, "latency-duration", 4*time.Second, "length of one measured run in the latency phase")
	fs.IntVar(&cfg.rounds, "rounds", 3, "measured runs per subject, scenario and connection count")
	quick := fs.Bool("quick", false, "a short look: -duration 1s -latency-duration 1s -rounds 1, unless those are given too")
	phases := fs.String("phases", "crossings,latency,saturation", "phases to run: crossings (Go–JavaScript calls per request, counted), latency (simulated production latency), saturation (local, no delays)")
	latencyConns := fs.String("latency-conns", "1,8", "connection counts of the latency phase")
	latencyScenarios := fs.String("latency-scenarios", "new-key,replay", "scenarios of the latency phase")
	conns := fs.String("conns", "8,32", "connection counts of the saturation phase")
	names := fs.String("scenarios", "new-key,replay,contention", "scenarios of the saturation phase (also: invalid, no-storage)")
	fs.Int64Var(&cfg.maxRequests, "max-requests", 200000, "cap on the requests of one run")
	kvRead := fs.String("kv-read", defaultKVRead, "latency phase: delay of a KV read, p50,p95,p99 in ms (or one fixed ms)")
	kvWrite := fs.String("kv-write", defaultKVWrite, "latency phase: delay of a KV put or delete, p50,p95,p99 in ms (a chosen value: no published figure)")
	doRTT := fs.String("do-rtt", defaultDORoundTrip, "latency phase: one same-region round trip to a Durable Object, p50,p95,p99 in ms")
	doWrite := fs.String("do-write", defaultDOWrite, "latency phase: added to Durable Object calls that write (claim, commit, release): the durability wait, p50,p95,p99 in ms")
	fs.Func("go-var", "NAME=VALUE: a var for every Go Worker subject (repeatable)", func(s string) error {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return fmt.Errorf("%q: want NAME=VALUE", s)
		}
		cfg.goVars[name] = value
		return nil
	})
	fs.StringVar(&cfg.quiet, "quiet", "auto", "saturation phase: also run the Go Worker with "+logLevelVar+"="+quietLevel+": auto (when config/config.go knows "+logLevelVar+"), on, off")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["duration"] {
			cfg.duration = time.Second
		}
		if !set["latency-duration"] {
			cfg.latencyDuration = time.Second
		}
		if !set["rounds"] {
			cfg.rounds = 1
		}
	}
	if cfg.duration <= 0 || cfg.latencyDuration <= 0 || cfg.rounds < 1 || cfg.maxRequests < 1 {
		return cfg, fmt.Errorf("-duration, -latency-duration, -rounds and -max-requests must be positive")
	}
	if !slices.Contains([]string{"auto", "on", "off"}, cfg.quiet) {
		return cfg, fmt.Errorf("-quiet: %q is not auto, on or off", cfg.quiet)
	}
	for _, name := range strings.Split(*phases, ",") {
		name = strings.TrimSpace(name)
		if name != crossingsPhase && name != latencyPhase && name != saturationPhase {
			return cfg, fmt.Errorf("-phases: unknown phase %q", name)
		}
		if !slices.Contains(cfg.phases, name) {
			cfg.phases = append(cfg.phases, name)
		}
	}
	slices.Sort(cfg.phases) // crossings, latency, saturation
	var err error
	if cfg.latencyConns, err = parseConns("-latency-conns", *latencyConns); err != nil {
		return cfg, err
	}
	if cfg.conns, err = parseConns("-conns", *conns); err != nil {
		return cfg, err
	}
	if cfg.latencyScenarios, err = parseScenarios("-latency-scenarios", *latencyScenarios); err != nil {
		return cfg, err
	}
	if cfg.scenarios, err = parseScenarios("-scenarios", *names); err != nil {
		return cfg, err
	}
	for _, l := range []struct {
		flag string
		in   string
		out  *latency
	}{
		{"-kv-read", *kvRead, &cfg.delays.KVRead}, {"-kv-write", *kvWrite, &cfg.delays.KVWrite},
		{"-do-rtt", *doRTT, &cfg.delays.DORoundTrip}, {"-do-write", *doWrite, &cfg.delays.DOWrite},
	} {
		if *l.out, err = parseLatency(l.in); err != nil {
			return cfg, fmt.Errorf("%s: %v", l.flag, err)
		}
	}
	return cfg, nil
}

func parseConns(flag, list string) ([]int, error) {
	var conns []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("%s: %q is not a connection count from 1 to 1024", flag, s)
		}
		conns = append(conns, n)
	}
	return conns, nil
}

func parseScenarios(flag, list string) ([]scenario, error) {
	var out []scenario
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("%s: unknown scenario %q", flag, name)
		}
		out = append(out, scenarios[i])
	}
	return out, nil
}

// knowsLogLevel reports whether the Go Worker in the snapshot at dir reads
// LOG_LEVEL.
func knowsLogLevel(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "config", "config.go"))
	return err == nil && strings.Contains(string(b), `"`+logLevelVar+`"`)
}

// phase is one table of the report: its subjects, each in its own wrangler
// dev, driven with the same load.
type phase struct {
	name      string
	duration  time.Duration // of one measured run
	subjects  []*subject
	scenarios []scenario
	conns     []int
	rows      []row
}

// newPhase lists the subjects of phase name. In the latency phase every
// subject is served through a bench/latency entry that delays its bindings'
// calls; in the saturation phase each is served as shipped.
func newPhase(name string, cfg config, logLevel bool) *phase {
	goVars := func(extra map[string]string) map[string]string {
		v := maps.Clone(cfg.goVars)
		maps.Copy(v, extra)
		return v
	}
	p := &phase{name: name, duration: cfg.duration, scenarios: cfg.scenarios, conns: cfg.conns}
	if name == latencyPhase {
		p.duration, p.scenarios, p.conns = cfg.latencyDuration, cfg.latencyScenarios, cfg.latencyConns
		delays := map[string]string{"WRAP_DELAYS": cfg.delays.wrapDelays()}
		p.subjects = []*subject{
			{name: "Go KV", kind: goKV, opts: wranglerdev.Options{Script: "bench/latency/go.mjs", Vars: goVars(delays)}},
			{name: "Go ledger", kind: goLedger, opts: wranglerdev.Options{Script: "bench/latency/go.mjs", Environment: "ledger", Vars: goVars(delays)}},
			{name: "JS port", kind: jsPort, opts: wranglerdev.Options{Script: "bench/latency/reference.mjs", Config: "test/reference/port/wrangler.toml", Vars: delays}},
			{name: "seed TS", kind: seedTS, opts: wranglerdev.Options{Script: "bench/latency/seed.mjs", Config: "test/reference/seed/wrangler.toml", Vars: delays}},
		}
		return p
	}
	p.subjects = []*subject{
		{name: "Go KV", kind: goKV, opts: wranglerdev.Options{Vars: goVars(nil)}},
		{name: "Go ledger", kind: goLedger, opts: wranglerdev.Options{Environment: "ledger", Vars: goVars(nil)}},
	}
	if cfg.quiet == "on" || cfg.quiet == "auto" && logLevel {
		quiet := map[string]string{logLevelVar: quietLevel}
		p.subjects = append(p.subjects,
			&subject{name: "Go KV " + logLevelVar + "=" + quietLevel, kind: goKV, opts: wranglerdev.Options{Vars: goVars(quiet)}},
			&subject{name: "Go ledger " + logLevelVar + "=" + quietLevel, kind: goLedger, opts: wranglerdev.Options{Environment: "ledger", Vars: goVars(quiet)}})
	}
	p.subjects = append(p.subjects,
		&subject{name: "JS port", kind: jsPort, opts: wranglerdev.Options{Config: "test/reference/port/wrangler.toml"}},
		&subject{name: "seed TS", kind: seedTS, opts: wranglerdev.Options{Config: "test/reference/seed/wrangler.toml"}})
	return p
}

// estimate is how long the phase's load takes, start-up not included.
func (p *phase) estimate(cfg config) time.Duration {
	cells := len(p.scenarios) * len(p.conns) * len(p.subjects)
	return time.Duration(cells) * (warmup + time.Duration(cfg.rounds)*p.duration)
}

// run starts the phase's subjects one after another (so that each cold
// start is timed alone), measures every scenario at every connection
// count, and stops them.
func (p *phase) run(ctx context.Context, cfg config, dir string) error {
	defer func() {
		for _, s := range p.subjects {
			if s.srv != nil {
				s.logs = s.srv.Logs()
				s.goStartsAtEnd = len(s.goStarts())
			}
			s.stop()
		}
	}()
	for _, s := range p.subjects {
		if err := s.start(ctx, dir); err != nil {
			return err
		}
	}
	for _, sc := range p.scenarios {
		for _, conns := range p.conns {
			p.rows = append(p.rows, measure(ctx, cfg, p, sc, conns))
			if ctx.Err() != nil {
				return nil
			}
		}
	}
	return nil
}

// measurement is one subject's share of a row.
type measurement struct {
	rates []float64 // req/s of each round, in round order
	// restarted marks the rounds during which the Go program started in a
	// new isolate, which starts cold.
	restarted []bool
	// cpu is the processor time the subject's processes used over all
	// measured rounds, and answered the expected answers they served.
	cpu      wranglerdev.CPUTime
	answered int
	pooled   Result   // all rounds together
	setup    Result   // warm-up and seeding, not measured
	check    keyCheck // over warm-up and all rounds (checkKeys scenarios)
}

// row is one scenario at one connection count, for every subject of a phase.
type row struct {
	sc    scenario
	conns int
	m     []*measurement // indexed like phase.subjects
}

// measure runs one scenario at one connection count: a warm-up for each
// subject, then the rounds, rotating which subject goes first so that
// machine noise hits all alike.
func measure(ctx context.Context, cfg config, ph *phase, sc scenario, conns int) row {
	subjects := ph.subjects
	r := row{sc: sc, conns: conns, m: make([]*measurement, len(subjects))}
	// runs holds each subject's measured rounds; created its 201s per key,
	// warm-up included.
	runs := make([][]Result, len(subjects))
	created := make([][]Result, len(subjects))
	// load seeds if the scenario needs it, then runs one load against subject i.
	load := func(i int, round string, d time.Duration) Result {
		prefix := fmt.Sprintf("%s-%s-%d-%s-", ph.name, sc.name, conns, round)
		key := func(n int64, c int) string { return sc.key(prefix, n, c, conns) }
		if sc.seeded {
			seed := seedKeys(ctx, subjects[i].srv.URL, conns, func(c int) string { return key(0, c) })
			r.m[i].setup = merge([]Result{r.m[i].setup, seed})
		}
		res := Load{
			URL: subjects[i].srv.URL, Conns: conns, Duration: d, MaxRequests: cfg.maxRequests,
			Request:      func(n int64, c int) (string, string) { return key(n, c), sc.body },
			Expect:       func(status int) bool { return slices.Contains(sc.expect, status) },
			CountCreated: sc.checkKeys,
		}.Run(ctx)
		created[i] = append(created[i], Result{Created: res.Created})
		return res
	}
	for i := range subjects {
		r.m[i] = &measurement{}
		warm := load(i, "warm", warmup)
		r.m[i].setup = merge([]Result{r.m[i].setup, warm})
	}
	for round := range cfg.rounds {
		for k := range subjects {
			i := (k + round) % len(subjects)
			version := subjects[i].version()
			cpu0, cpuErr0 := subjects[i].srv.CPU()
			res := load(i, "r"+strconv.Itoa(round+1), ph.duration)
			if cpu1, cpuErr1 := subjects[i].srv.CPU(); cpuErr0 == nil && cpuErr1 == nil {
				r.m[i].cpu = r.m[i].cpu.Add(cpu1.Sub(cpu0))
				r.m[i].answered += res.OK
			}
			restarted := subjects[i].version() != version
			runs[i] = append(runs[i], res)
			r.m[i].rates = append(r.m[i].rates, res.Rate())
			r.m[i].restarted = append(r.m[i].restarted, restarted)
			note := ""
			if restarted {
				note = " (the Go program started in a new isolate meanwhile)"
			}
			fmt.Fprintf(os.Stderr, "bench: %s, %s, %d conns, round %d/%d, %s: %.0f req/s, p50 %.1f ms, %d sent, %d errors%s\n",
				ph.name, sc.name, conns, round+1, cfg.rounds, subjects[i].name, res.Rate(), millis(res.percentile(50)), res.Sent, res.Errors, note)
		}
	}
	for i := range subjects {
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

// slug turns a subject's name into a file name part: "Go KV LOG_LEVEL=errors"
// becomes "go-kv-log_level-errors".
func slug(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, name)
}
