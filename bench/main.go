//go:build !js

// Command bench measures the Go Worker, in KV mode and in ledger mode,
// against the seed's TypeScript Worker (test/reference/seed) and a
// JavaScript port of this contract (test/reference/port), all under
// `wrangler dev` on loopback, in one interleaved run, as ratios to the seed.
// Two phases: production latency (every binding call delayed as a real KV
// or Durable Object call takes, and an OMS gateway with a delay of its own,
// followed by the settling check: how long the settler takes to store an
// outcome the gateway left unknown) and local saturation (as shipped, no
// delays). The load comes from autocannon. It prints a markdown report and
// writes it to bench/results/; bench/README.md says how to read it.
//
// Run it from the repository root: go run ./bench (or make bench).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// options are the flags.
type options struct {
	rounds                         int
	latencyDuration, satDuration   time.Duration
	latencyConns, saturationConns  []int
	delays                         delayModel
	gateway                        latency
	contentionKeys, contentionConn int
	settleKeys                     int
	// starts is how many times each build is started for its start's
	// CPU, the builds taking turns (startCPU); startOnly measures only that.
	starts    int
	startOnly bool
	// profile, if set, replaces the bench with a CPU profile of the Go
	// Worker (profile.go).
	profile *profileOptions
	// saturationOnly skips the latency phase, the settling check and the
	// TinyGo build: the phase that measures CPU, alone.
	saturationOnly bool
	// baseline, if set, is another checkout whose Go Worker the saturation
	// phase serves beside this one's: a before and an after in one run.
	baseline string
}

// subject is one Worker under test, with its own wrangler dev and state.
type subject struct {
	name string
	// compiler builds a Go subject (build.sh's COMPILER): go or tinygo;
	// empty for the JavaScript ones.
	compiler string
	// yardstick marks the seed's Worker, which every ratio divides by.
	yardstick bool
	// withGateway marks a Go Worker that calls the bench's OMS gateway.
	withGateway bool
	// placedTwice is how many keys of the contention check got two 201s.
	placedTwice *int
	// settles are the keys of the settling check, for a subject withGateway.
	settles []settle
	opts    wranglerdev.Options
	srv     *wranglerdev.Server
}

// cell is one subject's runs of one scenario at one connection count.
type cell struct {
	loads []load
	cpu   wranglerdev.CPUTime // over every run
	// gatewayP50 is the gateway's own median service time in these runs.
	gatewayP50 time.Duration
}

// scenario names: a fresh key per request (201), or one key repeated (200).
const (
	newKey = "new-key"
	replay = "replay"
)

func main() { os.Exit(run()) }

func run() int {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if _, err := os.Stat(filepath.Join("node_modules", ".bin", "autocannon")); err != nil {
		fmt.Fprintln(os.Stderr, "bench: run me from the repository root after make tools (go run ./bench, or make bench):", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if opts.profile != nil {
		if err := profile(ctx, *opts.profile); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		return 0
	}
	if opts.startOnly {
		table, err := startOnly(ctx, opts.starts)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		fmt.Print(table)
		return 0
	}
	rep, err := measure(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	text := rep.String()
	fmt.Print(text)
	path := filepath.Join("bench", "results", time.Now().UTC().Format("20060102T150405Z")+".md")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		err = os.WriteFile(path, []byte(text), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "bench: wrote", path)
	if rep.goDuplicates > 0 {
		fmt.Fprintln(os.Stderr, "bench: FAIL: the Go Worker placed a key's order twice")
		return 1
	}
	if rep.tripsOverFloor() {
		fmt.Fprintln(os.Stderr, "bench: FAIL: a new order made more storage round trips before its answer than its mode's floor")
		return 1
	}
	return 0
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	o := options{}
	fs.IntVar(&o.rounds, "rounds", 3, "measured runs per subject and cell, the subjects' order rotating each round")
	fs.DurationVar(&o.latencyDuration, "latency-duration", 4*time.Second, "one run in the latency phase (whole seconds)")
	fs.DurationVar(&o.satDuration, "duration", 3*time.Second, "one run in the saturation phase (whole seconds)")
	quick := fs.Bool("quick", false, "a short look: one round of 1 s runs")
	latencyConns := fs.String("latency-conns", "1,8", "connection counts of the latency phase")
	satConns := fs.String("conns", "8,32", "connection counts of the saturation phase")
	kvRead := fs.String("kv-read", defaultKVRead, "a KV read's delay, p50,p95,p99 in ms (or one fixed ms)")
	kvWrite := fs.String("kv-write", defaultKVWrite, "a KV write's delay")
	doRTT := fs.String("do-rtt", defaultDORoundTrip, "a round trip to a Durable Object in the same region")
	doWrite := fs.String("do-write", defaultDOWrite, "added to Durable Object calls that write: the durability wait")
	gw := fs.String("gateway", "40,80,150", "the OMS gateway's service time")
	fs.IntVar(&o.contentionKeys, "contention-keys", 30, "keys of the contention check")
	fs.IntVar(&o.contentionConn, "contention-conns", 16, "requests sent at once per key in the contention check")
	fs.IntVar(&o.starts, "starts", 10, "starts of each build, each in a fresh Node.js process, for the start's CPU")
	fs.BoolVar(&o.startOnly, "start-only", false, "only the start's CPU, of both builds, in under a minute")
	fs.IntVar(&o.settleKeys, "settle-keys", 10, "keys of the settling check, one at a time, per Worker with the gateway")
	fs.BoolVar(&o.saturationOnly, "saturation-only", false, "only the local saturation phase of the standard build (and the contention check): CPU, in a few minutes")
	fs.StringVar(&o.baseline, "baseline", "", "serve the Go Worker of this checkout too (with its node_modules) in the saturation phase, as Go KV/ledger (baseline)")
	prof := fs.Bool("profile", false, "instead of the bench, profile the Go Worker's CPU in each mode and scenario through the V8 inspector, and print the top functions")
	po := profileOptions{dir: "."}
	fs.DurationVar(&po.duration, "profile-duration", 10*time.Second, "the load profiled per mode and scenario (whole seconds)")
	fs.IntVar(&po.conns, "profile-conns", 8, "connections of the profiled load")
	fs.IntVar(&po.top, "profile-top", 20, "functions listed per profile")
	fs.StringVar(&po.compiler, "profile-compiler", "go", "the build profiled (build.sh's COMPILER)")
	fs.StringVar(&po.out, "profile-out", "", "a folder to save each profile in whole, as MODE-SCENARIO.cpuprofile (Chrome's DevTools open it)")
	fs.StringVar(&po.dir, "profile-dir", ".", "the checkout whose Go Worker is profiled (with its node_modules)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *prof {
		o.profile = &po
	}
	if *quick {
		o.rounds, o.latencyDuration, o.satDuration, o.contentionKeys, o.starts = 1, time.Second, time.Second, 10, 2
	}
	var err error
	for _, f := range []struct {
		into *latency
		s    string
	}{{&o.delays.KVRead, *kvRead}, {&o.delays.KVWrite, *kvWrite}, {&o.delays.DORoundTrip, *doRTT}, {&o.delays.DOWrite, *doWrite}, {&o.gateway, *gw}} {
		if *f.into, err = parseLatency(f.s); err != nil {
			return o, err
		}
	}
	if o.latencyConns, err = parseInts(*latencyConns); err != nil {
		return o, err
	}
	if o.saturationConns, err = parseInts(*satConns); err != nil {
		return o, err
	}
	if o.rounds < 1 || o.latencyDuration < time.Second || o.satDuration < time.Second {
		return o, fmt.Errorf("want at least one round of runs of at least 1 s")
	}
	if o.settleKeys < 1 {
		return o, fmt.Errorf("want at least one key for the settling check")
	}
	return o, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive whole numbers, comma-separated", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// latencySubjects are served through bench/latency/*.mjs, whose bindings
// wait as the delay model says; the two last call the gateway.
func latencySubjects(o options, gatewayURL string) []*subject {
	vars := func(extra ...string) map[string]string {
		v := map[string]string{"WRAP_DELAYS": o.delays.wrapDelays()}
		for i := 0; i+1 < len(extra); i += 2 {
			v[extra[i]] = extra[i+1]
		}
		return v
	}
	gw := []string{"OMS_URL", gatewayURL, "OMS_TIMEOUT_MS", "5000"}
	return []*subject{
		{name: "Go KV", compiler: "go", opts: wranglerdev.Options{Script: "bench/latency/go.mjs", Vars: vars()}},
		{name: "Go ledger", compiler: "go", opts: wranglerdev.Options{Script: "bench/latency/go.mjs", Environment: "ledger", Vars: vars()}},
		{name: "JS port", opts: wranglerdev.Options{Script: "bench/latency/reference.mjs", Config: "test/reference/port/wrangler.toml", Vars: vars()}},
		{name: "seed TS", yardstick: true, opts: wranglerdev.Options{Script: "bench/latency/seed.mjs", Config: "test/reference/seed/wrangler.toml", Vars: vars()}},
		{name: "Go KV + OMS", compiler: "go", withGateway: true, opts: wranglerdev.Options{Script: "bench/latency/go.mjs", Vars: vars(gw...)}},
		{name: "Go ledger + OMS", compiler: "go", withGateway: true, opts: wranglerdev.Options{Script: "bench/latency/go.mjs", Environment: "ledger", Vars: vars(gw...)}},
	}
}

// saturationSubjects are served as shipped, the Go Worker built by
// compiler; the JS port only beside the standard build. Like with like:
// LOG_LEVEL=errors, since the seed logs nothing and under wrangler dev a
// log line costs milliseconds of CPU that production does not spend.
func saturationSubjects(compiler, baseline string) []*subject {
	subjects := saturationSubjectsOf(compiler, baseline)
	for _, s := range subjects {
		s.opts.Vars = map[string]string{"LOG_LEVEL": "errors"}
	}
	return subjects
}

func saturationSubjectsOf(compiler, baseline string) []*subject {
	if compiler == "tinygo" {
		return []*subject{
			{name: "TinyGo KV", compiler: compiler},
			{name: "TinyGo ledger", compiler: compiler, opts: wranglerdev.Options{Environment: "ledger"}},
			{name: "seed TS", yardstick: true, opts: wranglerdev.Options{Config: "test/reference/seed/wrangler.toml"}},
		}
	}
	subjects := []*subject{
		{name: "Go KV", compiler: "go"},
		{name: "Go ledger", compiler: "go", opts: wranglerdev.Options{Environment: "ledger"}},
		{name: "JS port", opts: wranglerdev.Options{Config: "test/reference/port/wrangler.toml"}},
		{name: "seed TS", yardstick: true, opts: wranglerdev.Options{Config: "test/reference/seed/wrangler.toml"}},
	}
	if baseline != "" {
		subjects = append(subjects,
			&subject{name: "Go KV (baseline)", compiler: "go", opts: wranglerdev.Options{Dir: baseline}},
			&subject{name: "Go ledger (baseline)", compiler: "go", opts: wranglerdev.Options{Dir: baseline, Environment: "ledger"}})
	}
	return subjects
}

// start serves every subject. They start one after another: each Go
// subject's wrangler runs build.sh, and two builds must not write the wasm
// at once.
func start(ctx context.Context, subjects []*subject) error {
	for _, s := range subjects {
		dir, err := os.MkdirTemp("", "edge-orders-bench-")
		if err != nil {
			return err
		}
		if s.opts.Dir == "" {
			s.opts.Dir = "."
		}
		s.opts.StateDir = dir
		if s.compiler != "" {
			s.opts.Env = append(s.opts.Env, "COMPILER="+s.compiler)
		}
		srv, err := wranglerdev.Start(ctx, s.opts)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		s.srv = srv
		fmt.Fprintf(os.Stderr, "bench: %s serves on %s\n", s.name, srv.URL)
	}
	return nil
}

func stopAll(subjects []*subject) {
	for _, s := range subjects {
		if s.srv != nil {
			s.srv.Stop()
			s.srv = nil
		}
		if s.opts.StateDir != "" {
			os.RemoveAll(s.opts.StateDir)
		}
	}
}

// phase is one phase's results: cells[scenario][conns][subject].
type phase struct {
	name     string
	subjects []*subject
	conns    []int
	cells    map[string]map[int][]*cell
}

// runPhase measures every scenario and connection count, each subject in
// turn, the order rotating every round so that the machine's noise falls
// on all alike.
func runPhase(ctx context.Context, p *phase, rounds int, d time.Duration, gw *gateway) error {
	p.cells = map[string]map[int][]*cell{}
	for _, sc := range []string{newKey, replay} {
		p.cells[sc] = map[int][]*cell{}
		for _, conns := range p.conns {
			cells := make([]*cell, len(p.subjects))
			for i := range cells {
				cells[i] = &cell{}
			}
			p.cells[sc][conns] = cells
			var service []time.Duration
			for r := 0; r < rounds+1; r++ { // round 0 warms up, unmeasured
				for j := range p.subjects {
					i := (j + r) % len(p.subjects)
					s := p.subjects[i]
					key := ""
					if sc == replay {
						key = fmt.Sprintf("bench-replay-%d-%d", time.Now().UnixNano(), i)
						if _, err := post(ctx, s.srv.URL, key); err != nil {
							return fmt.Errorf("%s: %w", s.name, err)
						}
					}
					if gw != nil {
						gw.take()
					}
					before, err := s.srv.CPU()
					if err != nil {
						return err
					}
					l, err := autocannon(ctx, s.srv.URL, conns, d, key)
					if err != nil {
						return fmt.Errorf("%s, %s, %d connections: %w", s.name, sc, conns, err)
					}
					after, err := s.srv.CPU()
					if err != nil {
						return err
					}
					calls := []time.Duration(nil)
					if gw != nil {
						calls = gw.take()
					}
					if r == 0 {
						continue
					}
					cells[i].loads = append(cells[i].loads, l)
					cells[i].cpu = cells[i].cpu.Add(after.Sub(before))
					if s.withGateway {
						service = append(service, calls...)
						if sc == replay && len(calls) > 0 {
							return fmt.Errorf("%s: %d gateway calls during replays, want none", s.name, len(calls))
						}
					}
				}
			}
			for i, s := range p.subjects {
				if s.withGateway {
					cells[i].gatewayP50 = medianDuration(service)
				}
			}
			fmt.Fprintf(os.Stderr, "bench: %s, %s, %d connections: done\n", p.name, sc, conns)
		}
	}
	return nil
}

// report is everything a run measured.
type report struct {
	opts         options
	date         time.Time
	builds       []build // the standard build's, then TinyGo's if it ran
	phases       []*phase
	goDuplicates int
	trips        []responseTrips // per Go subject of the latency phase
}

func measure(ctx context.Context, o options) (*report, error) {
	rep := &report{opts: o, date: time.Now().UTC()}
	gw, err := startGateway(o.gateway)
	if err != nil {
		return nil, err
	}
	defer gw.stop()

	if o.saturationOnly {
		sat := &phase{name: "local saturation", subjects: saturationSubjects("go", o.baseline), conns: o.saturationConns}
		return rep, saturate(ctx, rep, sat, "go")
	}
	lat := &phase{name: "production latency", subjects: latencySubjects(o, gw.URL), conns: o.latencyConns}
	defer stopAll(lat.subjects)
	if err := start(ctx, lat.subjects); err != nil {
		return nil, err
	}
	if err := runPhase(ctx, lat, o.rounds, o.latencyDuration, gw); err != nil {
		return nil, err
	}
	for _, s := range lat.subjects {
		if s.compiler == "" {
			continue
		}
		t, err := countTrips(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("%s, round trips: %w", s.name, err)
		}
		rep.trips = append(rep.trips, t)
	}
	for _, s := range lat.subjects {
		if !s.withGateway {
			continue
		}
		if s.settles, err = settling(ctx, s.srv.URL, s.srv.Logs, gw, o.settleKeys); err != nil {
			return nil, fmt.Errorf("%s, settling: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, "bench: %s, settling: done\n", s.name)
	}
	stopAll(lat.subjects)
	rep.phases = append(rep.phases, lat)

	compilers := []string{"go"}
	if _, err := exec.LookPath("tinygo"); err == nil {
		compilers = append(compilers, "tinygo")
	} else {
		fmt.Fprintln(os.Stderr, "bench: no tinygo on PATH: the TinyGo build is left out")
	}
	var kept []string
	defer func() {
		for _, dir := range kept {
			os.RemoveAll(dir)
		}
	}()
	for _, compiler := range compilers {
		name := "local saturation"
		if compiler == "tinygo" {
			name = "local saturation, TinyGo build"
		}
		sat := &phase{name: name, subjects: saturationSubjects(compiler, o.baseline), conns: o.saturationConns}
		if err := saturate(ctx, rep, sat, compiler); err != nil {
			return nil, err
		}
		dir, err := keepBuild()
		if err != nil {
			return nil, err
		}
		kept = append(kept, dir)
	}
	if err := startCPU(ctx, rep.builds, kept, o.starts); err != nil {
		return nil, err
	}
	fmt.Fprintln(os.Stderr, "bench: starts: done")
	return rep, nil
}

// saturate runs phase p and the contention check with the Go Worker built
// by compiler, and measures that build.
func saturate(ctx context.Context, rep *report, p *phase, compiler string) error {
	defer stopAll(p.subjects)
	if err := start(ctx, p.subjects); err != nil {
		return err
	}
	b, err := measureBuild(compiler, "build")
	if err != nil {
		return err
	}
	if err := runPhase(ctx, p, rep.opts.rounds, rep.opts.satDuration, nil); err != nil {
		return err
	}
	for _, s := range p.subjects {
		dup, err := contention(ctx, s.srv.URL, fmt.Sprintf("bench-contention-%d-", time.Now().UnixNano()), rep.opts.contentionKeys, rep.opts.contentionConn)
		if err != nil {
			return fmt.Errorf("%s, contention: %w", s.name, err)
		}
		s.placedTwice = &dup
		if s.compiler != "" {
			rep.goDuplicates += dup
		}
	}
	b.phase = p
	rep.builds = append(rep.builds, b)
	rep.phases = append(rep.phases, p)
	return nil
}

// summary is a cell's figures: medians over its runs.
type summary struct {
	perSecond, p50, p99 float64
	// workerCPU and allCPU are ms of CPU per expected answer: the workerd
	// that runs the Worker, and every process of its wrangler dev.
	workerCPU, allCPU float64
	failed            int
	gatewayP50        time.Duration
}

func (c *cell) summary() summary {
	var s summary
	var ok int
	var rates, p50s, p99s []float64
	for _, l := range c.loads {
		rates, p50s, p99s = append(rates, l.perSecond()), append(p50s, l.Latency.P50), append(p99s, l.Latency.P99)
		ok += l.OK
		s.failed += l.NotOK + l.Errors
	}
	s.perSecond, s.p50, s.p99 = median(rates), median(p50s), median(p99s)
	if ok > 0 {
		s.workerCPU = float64(c.cpu.Worker.Microseconds()) / 1000 / float64(ok)
		s.allCPU = float64(c.cpu.Total().Microseconds()) / 1000 / float64(ok)
	}
	s.gatewayP50 = c.gatewayP50
	return s
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratio is a/b to two places, or n/a.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func (r *report) String() string {
	var b strings.Builder
	o := r.opts
	fmt.Fprintf(&b, "# make bench, %s\n\n", r.date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "%d CPUs, %s; %d measured rounds (latency runs %v, saturation runs %v); load from autocannon.\n\n",
		runtime.NumCPU(), runtime.Version(), o.rounds, o.latencyDuration, o.satDuration)
	fmt.Fprintf(&b, "Delay model: KV read %v, KV write %v, Durable Object round trip %v plus %v for a write; OMS gateway %v.\n\n",
		o.delays.KVRead, o.delays.KVWrite, o.delays.DORoundTrip, o.delays.DOWrite, o.gateway)
	for _, p := range r.phases {
		yard := slices.IndexFunc(p.subjects, func(s *subject) bool { return s.yardstick })
		fmt.Fprintf(&b, "## %s\n\n", p.name)
		b.WriteString("| scenario | conns | Worker | req/s | p50 ms | p99 ms | p50 ÷ seed | req/s ÷ seed | Worker CPU ms/req | all CPU ms/req | failed |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, sc := range []string{newKey, replay} {
			for _, conns := range p.conns {
				cells := p.cells[sc][conns]
				seed := cells[yard].summary()
				for i, s := range p.subjects {
					if s.withGateway {
						continue
					}
					m := cells[i].summary()
					fmt.Fprintf(&b, "| %s | %d | %s | %.0f | %.1f | %.1f | %s | %s | %.2f | %.2f | %d |\n", sc, conns, s.name,
						m.perSecond, m.p50, m.p99, ratio(m.p50, seed.p50), ratio(m.perSecond, seed.perSecond), m.workerCPU, m.allCPU, m.failed)
				}
			}
		}
		b.WriteString("\n")
		if slices.ContainsFunc(p.subjects, func(s *subject) bool { return s.withGateway }) {
			r.gatewayTable(&b, p)
			r.settlingTable(&b, p)
		}
	}
	r.tripsTable(&b)
	r.buildsTable(&b)
	b.WriteString("## Contention\n\n")
	fmt.Fprintf(&b, "%d keys, each sent %d times at once, as shipped:\n\n| Worker | keys placed twice |\n|---|---|\n", o.contentionKeys, o.contentionConn)
	for _, p := range r.phases {
		for _, s := range p.subjects {
			if s.placedTwice != nil {
				fmt.Fprintf(&b, "| %s (%s) | %d |\n", s.name, p.name, *s.placedTwice)
			}
		}
	}
	return b.String()
}

// gatewayTable gives the edge's overhead per new order: the Worker's p50
// minus the gateway's own. Beside it, the same Worker's p50 without the
// gateway, so the gateway call's own cost (with minus without) stands
// apart from the storage path before the answer, which the model puts at
// KV's two round trips (lookup, claim) or the ledger's one (the claim):
// the commit follows the response. The goal for the overhead is
// that path plus 10 ms.
func (r *report) gatewayTable(b *strings.Builder, p *phase) {
	d := r.opts.delays
	kvPath := d.KVRead.P50 + d.KVWrite.P50
	ledgerPath := d.DORoundTrip.P50 + d.DOWrite.P50
	b.WriteString("### The OMS gateway: the edge's overhead per new order\n\n")
	b.WriteString("| Worker | conns | p50 ms | gateway's own p50 ms | overhead ms | p50 without the gateway ms | the gateway call, with − without, ms | storage path at the model's p50 ms |\n|---|---|---|---|---|---|---|---|\n")
	for _, conns := range p.conns {
		for i, s := range p.subjects {
			if !s.withGateway {
				continue
			}
			without := slices.IndexFunc(p.subjects, func(o *subject) bool {
				return !o.withGateway && !o.yardstick && strings.HasPrefix(s.name, o.name+" ")
			})
			m := p.cells[newKey][conns][i].summary()
			base := p.cells[newKey][conns][without].summary()
			gwMS := float64(m.gatewayP50.Microseconds()) / 1000
			path := kvPath
			if s.opts.Environment == "ledger" {
				path = ledgerPath
			}
			fmt.Fprintf(b, "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f |\n", s.name, conns, m.p50, gwMS, m.p50-gwMS, base.p50, m.p50-base.p50, path)
		}
	}
	b.WriteString("\nNo replay reached the gateway (the bench fails if one does).\n\n")
}
