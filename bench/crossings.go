//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/internal/wranglerdev"
)

const (
	crossingsPhase = "crossings"
	// crossingsRequests is how many requests each count is averaged over.
	crossingsRequests = 20
	// afterResponse is how long a count waits for the work a request leaves
	// for after its response (the KV claim's release).
	afterResponse = 300 * time.Millisecond
)

// crossings is what one mode and scenario cost in calls between Go and
// JavaScript, per request, counted by bench/crossings/entry.mjs.
type crossings struct {
	subject  string // "Go KV", "Go ledger"
	scenario string // "new-key", "replay"
	// imports is the calls from Go into JavaScript per request, by wasm
	// import; resumes the entries from JavaScript into Go.
	imports map[string]float64
	resumes float64
}

// total is all the calls from Go into JavaScript per request.
func (c crossings) total() float64 {
	var t float64
	for _, n := range c.imports {
		t += n
	}
	return t
}

// countCrossings serves the Go Worker in KV and in ledger mode through the
// counting entry and counts, per request, the calls between Go and
// JavaScript of new orders and of replays. In ledger mode the Durable
// Object runs in the same isolate locally, so its calls are counted too.
func countCrossings(ctx context.Context, cfg config, dir string) ([]crossings, error) {
	var out []crossings
	for _, s := range []*subject{
		{name: "Go KV", kind: goKV, opts: wranglerdev.Options{Script: "bench/crossings/entry.mjs", Vars: cfg.goVars}},
		{name: "Go ledger", kind: goLedger, opts: wranglerdev.Options{Script: "bench/crossings/entry.mjs", Environment: "ledger", Vars: cfg.goVars}},
	} {
		counts, err := countSubject(ctx, s, dir)
		if err != nil {
			return out, err
		}
		out = append(out, counts...)
	}
	return out, nil
}

func countSubject(ctx context.Context, s *subject, dir string) ([]crossings, error) {
	if err := s.start(ctx, dir); err != nil {
		return nil, err
	}
	defer s.stop()
	client := &http.Client{Timeout: requestTimeout}
	send := func(key string) error {
		status, answer, err := post(ctx, client, s.srv.URL, key, validOrder)
		if err != nil || (status != http.StatusCreated && status != http.StatusOK) {
			return fmt.Errorf("%s: %s", s.name, describe(status, answer, err))
		}
		return nil
	}
	// Warm up, so that one-time work (the handler, caches, the first use of
	// a ledger object) is not counted.
	for i := range crossingsRequests {
		if err := send(fmt.Sprintf("crossings-warm-%d", i)); err != nil {
			return nil, err
		}
	}
	var out []crossings
	for _, sc := range []string{"new-key", "replay"} {
		if sc == "replay" {
			if err := send("crossings-replay"); err != nil {
				return nil, err
			}
		}
		time.Sleep(afterResponse)
		if _, err := readCrossings(ctx, client, s.srv.URL, true); err != nil {
			return nil, err
		}
		for i := range crossingsRequests {
			key := "crossings-replay"
			if sc == "new-key" {
				key = fmt.Sprintf("crossings-new-%d", i)
			}
			if err := send(key); err != nil {
				return nil, err
			}
		}
		time.Sleep(afterResponse)
		c, err := readCrossings(ctx, client, s.srv.URL, false)
		if err != nil {
			return nil, err
		}
		c.subject, c.scenario = s.name, sc
		for k := range c.imports {
			c.imports[k] /= crossingsRequests
		}
		c.resumes /= crossingsRequests
		out = append(out, c)
		fmt.Fprintf(os.Stderr, "bench: crossings, %s, %s: %.1f calls into JavaScript, %.1f into Go per request\n",
			s.name, sc, c.total(), c.resumes)
	}
	return out, nil
}

// readCrossings reads the counting entry's counts, and zeroes them if reset.
func readCrossings(ctx context.Context, client *http.Client, url string, reset bool) (crossings, error) {
	u := url + "/__bench/crossings"
	if reset {
		u += "?reset"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return crossings{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return crossings{}, err
	}
	defer resp.Body.Close()
	var body struct {
		Imports map[string]float64
		Resumes float64
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return crossings{}, fmt.Errorf("reading the crossings counts: %w", err)
	}
	return crossings{imports: body.Imports, resumes: body.Resumes}, nil
}

// crossingsTable writes the counts as one markdown table: a line per import,
// most used first, a column per subject and scenario.
func crossingsTable(b *strings.Builder, counts []crossings) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	names := map[string]float64{}
	for _, c := range counts {
		for k, n := range c.imports {
			names[k] += n
		}
	}
	order := slices.SortedFunc(maps.Keys(names), func(a, b string) int {
		if names[a] != names[b] {
			if names[a] > names[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	p("| call |")
	for _, c := range counts {
		p(" %s, %s |", c.subject, c.scenario)
	}
	p("\n|---|%s\n", strings.Repeat("--:|", len(counts)))
	line := func(name string, value func(c crossings) float64) {
		p("| %s |", name)
		for _, c := range counts {
			p(" %.1f |", value(c))
		}
		p("\n")
	}
	line("**Go → JavaScript, all**", crossings.total)
	for _, name := range order {
		line(name, func(c crossings) float64 { return c.imports[name] })
	}
	line("**JavaScript → Go (resumes)**", func(c crossings) float64 { return c.resumes })
}
