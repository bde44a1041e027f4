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
	date    time.Time
	cfg     config
	workers [2]*worker // Go, JS
	rows    []row
	// wasmRaw and wasmGzip are the Go Worker's wasm sizes when it started.
	wasmRaw, wasmGzip int64

	// Read by finish, once the load is over.
	goStarts []float64 // ms of every go_started line
	goBuilds int       // times wrangler ran build.sh
}

// finish reads what the Go Worker's log says after the load: a rebuild or a
// new isolate in the middle would make the rows mix versions or cold starts.
func (r *report) finish() {
	r.goStarts = r.workers[0].goStarts()
	r.goBuilds = r.workers[0].builds()
}

// goDuplicates reports whether the Go Worker ever gave one key two 201s.
func (r *report) goDuplicates() bool {
	return slices.ContainsFunc(r.rows, func(row row) bool { return row.m[0].check.Duplicates > 0 })
}

// String renders the report as markdown.
func (r *report) String() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	goW, jsW := r.workers[0], r.workers[1]

	p("# edge-orders benchmark: Go Worker vs JavaScript reference\n\n")
	p("- date: %s UTC\n", r.date.Format("2006-01-02 15:04:05"))
	p("- machine: %d cores (nproc), %s/%s, %s, wrangler %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), wranglerVersion())
	p("- wasm build/edge-orders.wasm: %s raw, %s gzip (BestCompression)\n", size(r.wasmRaw), size(r.wasmGzip))
	if len(r.goStarts) > 0 {
		p("- Go start-up (go_started: instantiate + runtime start): %.0f ms\n", r.goStarts[0])
	} else {
		p("- Go start-up: no go_started line in the Go Worker's log\n")
	}
	p("- cold first request, as wrangler timed it (the isolate's first request is wranglerdev's readiness probe): Go %s, JS %s\n",
		coldMS(goW), coldMS(jsW))
	p("- first POST after start-up, as the client sees it (isolate already warm): Go %s, JS %s\n",
		ms(goW.firstPOST), ms(jsW.firstPOST))
	p("- load: %d rounds of %s (at most %d requests each) per Worker, scenario and connection count; "+
		"Workers interleaved (Go, JS, then JS, Go, ...); %s unmeasured warm-up per Worker before each scenario's first round\n\n",
		r.cfg.rounds, r.cfg.duration, r.cfg.maxRequests, warmup)

	p("| scenario | conns | expect | Go req/s | JS req/s | Go/JS req/s | Go p50 ms | JS p50 ms | Go p99 ms | JS p99 ms | Go/JS p99 | Go errors | JS errors |\n")
	p("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range r.rows {
		var rate, p50, p99 [2]float64
		for i, m := range row.m {
			lat := slices.Sorted(slices.Values(m.pooled.Latencies))
			rate[i] = median(m.rates)
			p50[i] = millis(percentile(lat, 50))
			p99[i] = millis(percentile(lat, 99))
		}
		p("| %s%s | %d | %s | %.0f | %.0f | %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %s |\n",
			row.sc.name, restartMark(row), row.conns, statuses(row.sc.expect), rate[0], rate[1], ratio(rate[0], rate[1]),
			p50[0], p50[1], p99[0], p99[1], ratio(p99[0], p99[1]), errorCell(row.m[0].pooled), errorCell(row.m[1].pooled))
	}
	p("\nreq/s: median over the rounds of expected answers per second. p50, p99: over every round's expected answers. " +
		"errors: wrong statuses and transport failures over all rounds. Go/JS p99 above 1 means Go is slower.")
	if slices.ContainsFunc(r.rows, func(row row) bool { return restartMark(row) != "" }) {
		p(" %s", restartNote)
	}
	p("\n")

	if slices.ContainsFunc(r.rows, func(row row) bool { return row.sc.checkKeys }) {
		p("\n## Contention: one order per key\n\nCounted over the warm-up and all rounds.\n\n")
		for _, row := range r.rows {
			if !row.sc.checkKeys {
				continue
			}
			for i, m := range row.m {
				all := merge([]Result{m.setup, m.pooled})
				p("- %s, %d conns, %s: exactly one 201 per key: %s; answers %s\n",
					row.sc.name, row.conns, r.workers[i].name, m.check, counts(all.Statuses))
			}
		}
	}

	p("\n## Rounds\n\n| scenario | conns | Go req/s per round | JS req/s per round | Go sent | JS sent |\n|---|--:|---|---|--:|--:|\n")
	for _, row := range r.rows {
		p("| %s | %d | %s | %s | %d | %d |\n", row.sc.name, row.conns,
			rates(row.m[0]), rates(row.m[1]), row.m[0].pooled.Sent, row.m[1].pooled.Sent)
	}
	if slices.ContainsFunc(r.rows, func(row row) bool { return restartMark(row) != "" }) {
		p("\n%s\n", restartNote)
	}

	var notes []string
	for _, row := range r.rows {
		for i, m := range row.m {
			where := fmt.Sprintf("%s, %d conns, %s", row.sc.name, row.conns, r.workers[i].name)
			if m.pooled.Errors > 0 {
				notes = append(notes, fmt.Sprintf("%s: %d errors, e.g. %s", where, m.pooled.Errors, strings.Join(m.pooled.Samples, " | ")))
			}
			if m.setup.Errors > 0 {
				notes = append(notes, fmt.Sprintf("%s, warm-up and seeding (not measured): %d errors, e.g. %s", where, m.setup.Errors, strings.Join(m.setup.Samples, " | ")))
			}
		}
	}
	if len(r.goStarts) > 1 {
		notes = append(notes, fmt.Sprintf("the Go program started %d times (go_started ms: %v): a new isolate mid-run", len(r.goStarts), r.goStarts))
	}
	if r.goBuilds > 1 {
		notes = append(notes, fmt.Sprintf("wrangler ran build.sh %d times: later rounds may measure other code", r.goBuilds))
	}
	if len(notes) > 0 {
		p("\n## Notes\n\n")
		for _, n := range notes {
			p("- %s\n", n)
		}
	}
	return b.String()
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

func size(n int64) string { return fmt.Sprintf("%d bytes (%.1f KB)", n, float64(n)/1024) }

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", millis(d)) }

func coldMS(w *worker) string {
	if w.cold == "" {
		return "not logged"
	}
	return fmt.Sprintf("%.0f ms (%s)", w.coldMS, w.cold)
}

// errorCell shows a count of errors with its share of the requests sent.
func errorCell(r Result) string {
	if r.Errors == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%.1f%%)", r.Errors, 100*float64(r.Errors)/float64(r.Sent))
}

// statuses renders expected statuses as "201/200/409".
func statuses(codes []int) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, "/")
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

// restartNote explains restartMark.
const restartNote = "\\* a round during which wrangler rebuilt the Go Worker or started it in a new isolate: " +
	"a build competes for the CPU, the code may differ, and a new isolate starts cold."

// restartMark is "\\*" (a markdown asterisk) for a row with such a round.
func restartMark(row row) string {
	if slices.Contains(row.m[0].rebuilt, true) || slices.Contains(row.m[1].rebuilt, true) {
		return "\\*"
	}
	return ""
}

// rates lists a measurement's req/s per round, marking rebuilt rounds with *.
func rates(m *measurement) string {
	s := make([]string, len(m.rates))
	for i, x := range m.rates {
		s[i] = fmt.Sprintf("%.0f", x)
		if m.rebuilt[i] {
			s[i] += "\\*"
		}
	}
	return strings.Join(s, ", ")
}
