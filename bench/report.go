//go:build !js

package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report is everything one benchmark run prints.
type report struct {
	date   time.Time
	cfg    config
	phases []*phase
	// wasmRaw and wasmGzip are the Go Worker's wasm sizes.
	wasmRaw, wasmGzip int64
	// logLevel is whether the Go Worker reads LOG_LEVEL.
	logLevel bool
	// crossings are the calls between Go and JavaScript per request.
	crossings []crossings
}

// goDuplicates reports whether a Go subject ever gave one key two 201s.
func (r *report) goDuplicates() bool {
	for _, p := range r.phases {
		for _, row := range p.rows {
			for i, m := range row.m {
				if p.subjects[i].kind.isGo() && m.check.Duplicates > 0 {
					return true
				}
			}
		}
	}
	return false
}

// stats is one subject's figures in one row.
type stats struct {
	rate, p50, p99 float64
	// cpu is the processor time per expected answer in ms of the workerd
	// that runs the Worker: its own cost, storage included, apart from
	// wrangler and the load generator; devCPU that of all wrangler dev's
	// processes. 0 where they could not be read.
	cpu, devCPU float64
}

func statsOf(m *measurement) stats {
	s := stats{rate: median(m.rates), p50: millis(m.pooled.percentile(50)), p99: millis(m.pooled.percentile(99))}
	if m.answered > 0 {
		s.cpu = millis(m.cpu.Worker) / float64(m.answered)
		s.devCPU = millis(m.cpu.Total()) / float64(m.answered)
	}
	return s
}

// yardstick returns the index of the seed's subject, the one every ratio
// divides by, or -1.
func (p *phase) yardstick() int {
	return slices.IndexFunc(p.subjects, func(s *subject) bool { return s.kind == seedTS })
}

// String renders the report as markdown.
func (r *report) String() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# edge-orders benchmark: the Go Worker (KV and ledger mode) vs the seed's TypeScript Worker\n\n")
	p("- date: %s UTC\n", r.date.Format("2006-01-02 15:04:05"))
	p("- machine: %d cores (nproc), %s/%s, %s, wrangler %s; load average at the end: %s\n",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), wranglerVersion(), loadAverage())
	p("- command: `go run ./bench %s`\n", strings.Join(r.cfg.args, " "))
	p("- wasm build/edge-orders.wasm: %s raw, %s gzip (BestCompression)\n", size(r.wasmRaw), size(r.wasmGzip))
	if r.logLevel {
		p("- the Go Worker reads %s: the saturation phase also runs it with %s=%s\n", logLevelVar, logLevelVar, quietLevel)
	} else {
		p("- the Go Worker does not read %s yet (config/config.go): it logs one line per request, the seed none\n", logLevelVar)
	}
	if len(r.cfg.goVars) > 0 {
		var vars []string
		for _, k := range slices.Sorted(maps.Keys(r.cfg.goVars)) {
			vars = append(vars, k+"="+r.cfg.goVars[k])
		}
		p("- extra vars for every Go subject: %s\n", strings.Join(vars, ", "))
	}
	p("- load: per phase, every scenario and connection count, %s unmeasured warm-up per subject, then %d rounds "+
		"(of %s in the latency phase, %s in the saturation phase, at most %d requests each) per subject, the subjects' order rotating each round\n",
		warmup, r.cfg.rounds, r.cfg.latencyDuration, r.cfg.duration, r.cfg.maxRequests)
	p("- ratios divide by the seed's TypeScript Worker (seed TS) in the same row: req/s above 1 and p50, p99 below 1 are better than the seed\n")

	for _, ph := range r.phases {
		switch ph.name {
		case latencyPhase:
			p("\n## Production latency: every binding call delayed\n\n")
			p("Each Worker is served through an entry (bench/latency/*.mjs, test/wrapped/wrap.mjs) that waits before each " +
				"KV or Durable Object call, each wait drawn afresh (bench/README.md, Delay model):\n\n")
			d := r.cfg.delays
			p("| call | delay |\n|---|---|\n")
			p("| KV get, getWithMetadata | %s |\n", d.KVRead)
			p("| KV put, delete | %s (chosen: no published figure) |\n", d.KVWrite)
			p("| Durable Object claim, commit, release (write) | round trip %s, plus durability wait %s |\n", d.DORoundTrip, d.DOWrite)
			p("| Durable Object lookup | round trip %s |\n\n", d.DORoundTrip)
			p("Local work adds to every request: the Go Worker's replays, answered from memory with no binding call, show about how much. " +
				"At 8 connections a small machine may queue on the CPU: a p50 well above the 1-connection p50 is local queueing, not the simulated latency.\n\n")
		case saturationPhase:
			p("\n## Local saturation: no simulated latency, as shipped\n\n")
			p("Local KV and Durable Objects answer in well under a millisecond: this measures CPU per request under " +
				"`wrangler dev` on this machine (load generator, wrangler's proxy, workerd, local storage), not production latency.\n\n")
		}
		r.phaseTable(&b, ph)
	}

	r.targets(&b)

	if len(r.crossings) > 0 {
		p("\n## Calls between Go and JavaScript per request, counted\n\n")
		p("bench/crossings/entry.mjs counts every call of a Go runtime import (Go → JavaScript: each syscall/js operation, "+
			"the clock, timers, random bytes) and every resume of the Go program (JavaScript → Go: a callback, a settled promise), "+
			"averaged over %d sequential requests after a warm-up, the work after the response included. "+
			"In ledger mode the Durable Object runs in the same isolate locally, so its calls are in the count. "+
			"bench/README.md explains each call.\n\n", crossingsRequests)
		crossingsTable(&b, r.crossings)
	}

	if r.hasContention() {
		p("\n## Contention: one order per key\n\nCounted over the warm-up and all rounds.\n\n")
		for _, ph := range r.phases {
			for _, row := range ph.rows {
				if !row.sc.checkKeys {
					continue
				}
				for i, m := range row.m {
					all := merge([]Result{m.setup, m.pooled})
					p("- %s, %s, %d conns, %s: exactly one 201 per key: %s; answers %s\n",
						ph.name, row.sc.name, row.conns, ph.subjects[i].name, m.check, counts(all.Statuses))
				}
			}
		}
	}

	if len(r.phases) > 0 {
		p("\n## Start-up\n\n| phase | Worker | cold first request (wrangler's timing) | first POST (client) | Go program starts (ms each) |\n|---|---|---|---|---|\n")
		for _, ph := range r.phases {
			for _, s := range ph.subjects {
				starts := "—"
				if s.kind.isGo() {
					starts = fmt.Sprint(goStartMillis(s.logs))
				}
				p("| %s | %s | %s | %s | %s |\n", ph.name, s.name, coldMS(s), ms(s.firstPOST), starts)
			}
		}
		p("\nThe cold first request is wranglerdev's readiness probe, the isolate's first; for the Go Worker it includes instantiating the wasm and starting the Go runtime (go_started). " +
			"A Go program started again means a new isolate; locally the ledger's Durable Object runs in the Worker's isolate and shares its Go program.\n")

		p("\n## Rounds\n\n| phase | scenario | conns | Worker | req/s per round | sent |\n|---|---|--:|---|---|--:|\n")
		for _, ph := range r.phases {
			for _, row := range ph.rows {
				for i, m := range row.m {
					p("| %s | %s | %d | %s | %s | %d |\n", ph.name, row.sc.name, row.conns, ph.subjects[i].name, rates(m), m.pooled.Sent)
				}
			}
		}
	}

	var notes []string
	for _, ph := range r.phases {
		for _, row := range ph.rows {
			for i, m := range row.m {
				where := fmt.Sprintf("%s, %s, %d conns, %s", ph.name, row.sc.name, row.conns, ph.subjects[i].name)
				if m.pooled.Errors > 0 {
					notes = append(notes, fmt.Sprintf("%s: %d errors, e.g. %s", where, m.pooled.Errors, strings.Join(m.pooled.Samples, " | ")))
				}
				if m.setup.Errors > 0 {
					notes = append(notes, fmt.Sprintf("%s, warm-up and seeding (not measured): %d errors, e.g. %s", where, m.setup.Errors, strings.Join(m.setup.Samples, " | ")))
				}
				if slices.Contains(m.restarted, true) {
					notes = append(notes, where+": "+restartNote)
				}
			}
		}
	}
	if len(notes) > 0 {
		p("\n## Notes\n\n")
		for _, n := range notes {
			p("- %s\n", n)
		}
	}
	return b.String()
}

// phaseTable writes one phase's table: a line per scenario, connection
// count and subject.
func (r *report) phaseTable(b *strings.Builder, ph *phase) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("| scenario | conns | Worker | req/s | p50 ms | p99 ms | Worker CPU ms/req | all CPU ms/req | req/s ÷ seed | p50 ÷ seed | p99 ÷ seed | Worker CPU ÷ seed | errors |\n")
	p("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	ref := ph.yardstick()
	for _, row := range ph.rows {
		var seed stats
		if ref >= 0 {
			seed = statsOf(row.m[ref])
		}
		for i, m := range row.m {
			s := statsOf(m)
			mark := ""
			if slices.Contains(m.restarted, true) {
				mark = "\\*"
			}
			p("| %s | %d | %s%s | %.0f | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %s |\n",
				row.sc.name, row.conns, ph.subjects[i].name, mark, s.rate, s.p50, s.p99, cpuCell(s.cpu), cpuCell(s.devCPU),
				ratio(s.rate, seed.rate), ratio(s.p50, seed.p50), ratio(s.p99, seed.p99), cpuRatio(s.cpu, seed.cpu), errorCell(m.pooled))
		}
	}
	p("\nreq/s: median over the rounds of expected answers per second. p50, p99: over every round's expected answers, " +
		"as the client sees them. Worker CPU: processor time of the workerd process that runs the Worker (its local storage included), " +
		"all CPU: of every process of its wrangler dev (that workerd, wrangler's proxy workerd and Node.js), " +
		"over all rounds per expected answer, read from /proc in 10 ms ticks. errors: wrong statuses and transport failures over all rounds.")
	if slices.ContainsFunc(ph.rows, func(row row) bool {
		return slices.ContainsFunc(row.m, func(m *measurement) bool { return slices.Contains(m.restarted, true) })
	}) {
		p(" %s", restartNote)
	}
	p("\n")
}

// target is one of the performance goals, checked against every matching
// line of a phase.
type target struct {
	phase, scenario string // scenario "" matches every scenario
	kinds           []kind
	metric          string // "p50", "p99" or "req/s"
	atMost          bool   // the ratio to the seed must be at most bound, else at least
	bound           float64
}

// targets are the goals for the Go Worker, as ratios to the seed.
var targets = []target{
	{phase: latencyPhase, scenario: "new-key", kinds: []kind{goKV}, metric: "p50", atMost: true, bound: 0.65},
	{phase: latencyPhase, scenario: "new-key", kinds: []kind{goLedger}, metric: "p50", atMost: true, bound: 0.3},
	{phase: latencyPhase, scenario: "replay", kinds: []kind{goKV, goLedger}, metric: "p50", atMost: true, bound: 1.0},
	{phase: saturationPhase, scenario: "new-key", kinds: []kind{goKV}, metric: "req/s", bound: 1.0},
	{phase: saturationPhase, scenario: "new-key", kinds: []kind{goLedger}, metric: "req/s", bound: 1.5},
	{phase: saturationPhase, scenario: "replay", kinds: []kind{goKV, goLedger}, metric: "req/s", bound: 1.2},
	{phase: saturationPhase, kinds: []kind{goKV, goLedger}, metric: "p99", atMost: true, bound: 1.2},
}

// targets writes the check of every target against every line it applies to.
func (r *report) targets(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	var lines []string
	met := 0
	for _, t := range targets {
		for _, ph := range r.phases {
			ref := ph.yardstick()
			if ph.name != t.phase || ref < 0 {
				continue
			}
			for _, row := range ph.rows {
				if t.scenario != "" && row.sc.name != t.scenario {
					continue
				}
				seed := statsOf(row.m[ref])
				for i, m := range row.m {
					if !slices.Contains(t.kinds, ph.subjects[i].kind) {
						continue
					}
					got, want := t.ratio(statsOf(m), seed), "≥"
					if t.atMost {
						want = "≤"
					}
					verdict := "missed"
					if t.ok(got) {
						verdict, met = "met", met+1
					}
					lines = append(lines, fmt.Sprintf("| %s | %s | %d | %s | %s | %.2f× | %s %.2f× | %s |",
						ph.name, row.sc.name, row.conns, ph.subjects[i].name, t.metric, got, want, t.bound, verdict))
				}
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	p("\n## Targets\n\n%d of %d met.\n\n| phase | scenario | conns | Worker | metric | ÷ seed | target | |\n|---|---|--:|---|---|--:|--:|---|\n", met, len(lines))
	for _, l := range lines {
		p("%s\n", l)
	}
}

// ratio is the target's metric of s divided by the seed's; 0 when the seed
// has none.
func (t target) ratio(s, seed stats) float64 {
	var a, b float64
	switch t.metric {
	case "p50":
		a, b = s.p50, seed.p50
	case "p99":
		a, b = s.p99, seed.p99
	default:
		a, b = s.rate, seed.rate
	}
	if b == 0 {
		return 0
	}
	return a / b
}

func (t target) ok(ratio float64) bool {
	if ratio == 0 {
		return false
	}
	if t.atMost {
		return ratio <= t.bound
	}
	return ratio >= t.bound
}

func (r *report) hasContention() bool {
	return slices.ContainsFunc(r.phases, func(ph *phase) bool {
		return slices.ContainsFunc(ph.rows, func(row row) bool { return row.sc.checkKeys })
	})
}

// goStartMillis returns the ms of every go_started line in logs.
func goStartMillis(logs string) []float64 {
	var out []float64
	for _, m := range goStartedLine.FindAllStringSubmatch(logs, -1) {
		var v float64
		fmt.Sscan(m[1], &v)
		out = append(out, float64(int(v+0.5)))
	}
	return out
}

// wasmSizes returns the size of the file at path, raw and gzipped at
// BestCompression.
func wasmSizes(path string) (raw, gz int64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return 0, 0, err
	}
	if _, err := zw.Write(b); err != nil {
		return 0, 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, 0, err
	}
	return int64(len(b)), int64(buf.Len()), nil
}

// wranglerVersion reads the installed wrangler's version, or "unknown".
func wranglerVersion() string {
	b, err := os.ReadFile(filepath.Join("node_modules", "wrangler", "package.json"))
	if err != nil {
		return "unknown"
	}
	var pkg struct{ Version string }
	if json.Unmarshal(b, &pkg) != nil || pkg.Version == "" {
		return "unknown"
	}
	return pkg.Version
}

// loadAverage is the 1, 5 and 15 minute load averages, or "unknown": others
// using the machine show up here.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

func size(n int64) string { return fmt.Sprintf("%d bytes (%.1f KB)", n, float64(n)/1024) }

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", millis(d)) }

func coldMS(s *subject) string {
	if s.cold == "" {
		return "not logged"
	}
	return fmt.Sprintf("%.0f ms (%s)", s.coldMS, s.cold)
}

// cpuRatio is ratio for CPU figures, n/a where either could not be read.
func cpuRatio(a, b float64) string {
	if a == 0 {
		return "n/a"
	}
	return ratio(a, b)
}

// cpuCell shows a CPU figure, or – where it could not be read.
func cpuCell(ms float64) string {
	if ms == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", ms)
}

// errorCell shows a count of errors with its share of the requests sent.
func errorCell(r Result) string {
	if r.Errors == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%.1f%%)", r.Errors, 100*float64(r.Errors)/float64(r.Sent))
}

// counts renders answers by status, in status order: "200: 12, 201: 3".
func counts(byStatus map[int]int) string {
	var s []string
	for _, code := range slices.Sorted(maps.Keys(byStatus)) {
		s = append(s, fmt.Sprintf("%d: %d", code, byStatus[code]))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// restartNote explains the \* mark.
const restartNote = "\\* a round during which the Go program started in a new isolate: a new isolate starts cold."

// rates lists a measurement's req/s per round, marking restarted rounds with \*.
func rates(m *measurement) string {
	s := make([]string, len(m.rates))
	for i, x := range m.rates {
		s[i] = fmt.Sprintf("%.0f", x)
		if m.restarted[i] {
			s[i] += "\\*"
		}
	}
	return strings.Join(s, ", ")
}
