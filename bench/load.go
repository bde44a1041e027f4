//go:build !js

package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// requestTimeout bounds one request, so a stuck Worker delays the end of a run
// by at most this much.
const requestTimeout = 10 * time.Second

// maxSamples is how many distinct unexpected answers a Result keeps to show.
const maxSamples = 3

// Load is one run of requests against one Worker: Conns goroutines, each on
// its own keep-alive connection, send POSTs until Duration has passed or
// MaxRequests have been sent, whichever comes first. Requests in flight when
// the time is up are waited for, not cancelled, so every sent request has an
// answer or an error.
type Load struct {
	URL         string
	Conns       int
	Duration    time.Duration
	MaxRequests int64
	// Request returns the Idempotency-Key and the body of request n (0, 1, ...
	// across all connections), sent on connection c.
	Request func(n int64, c int) (key, body string)
	// Expect reports whether status is a right answer to this load.
	Expect func(status int) bool
	// CountCreated makes Result.Created count the 201s per key.
	CountCreated bool
}

// Result is what one Load saw.
type Result struct {
	// Sent counts the requests sent; each is either OK or an error.
	Sent, OK, Errors int
	// Elapsed runs from the start to the last answer.
	Elapsed time.Duration
	// Latencies holds the latency of every OK answer, unsorted.
	Latencies []time.Duration
	// Statuses counts the answers by HTTP status, unexpected ones included.
	Statuses map[int]int
	// Samples describes up to maxSamples distinct errors.
	Samples []string
	// Created maps every key sent to its number of 201s (CountCreated only).
	Created map[string]int
}

// Rate is the OK answers per second; errors do not count as throughput.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// Run sends the load and returns what came back. Cancelling ctx stops it early
// (the requests in flight then fail and count as errors).
func (l Load) Run(ctx context.Context) Result {
	// One transport, one connection per goroutine: the Workers see exactly
	// Conns concurrent keep-alive connections.
	tr := &http.Transport{MaxIdleConns: l.Conns, MaxIdleConnsPerHost: l.Conns, MaxConnsPerHost: l.Conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: requestTimeout}

	var next atomic.Int64
	parts := make([]Result, l.Conns)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(l.Duration)
	for c := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &parts[c]
			p.Statuses = map[int]int{}
			if l.CountCreated {
				p.Created = map[string]int{}
			}
			for ctx.Err() == nil && time.Now().Before(deadline) {
				n := next.Add(1) - 1
				if n >= l.MaxRequests {
					return
				}
				key, body := l.Request(n, c)
				t := time.Now()
				status, answer, err := post(ctx, client, l.URL, key, body)
				latency := time.Since(t)
				p.record(key, status, latency, l.Expect(status) && err == nil, describe(status, answer, err))
			}
		}()
	}
	wg.Wait()
	r := merge(parts)
	r.Elapsed = time.Since(start)
	return r
}

// percentile is the p-th percentile of the OK answers' latencies.
func (r Result) percentile(p float64) time.Duration {
	return percentile(slices.Sorted(slices.Values(r.Latencies)), p)
}

// record adds one request's outcome to p; problem is only used when !ok.
func (p *Result) record(key string, status int, latency time.Duration, ok bool, problem string) {
	p.Sent++
	if status != 0 {
		p.Statuses[status]++
	}
	if p.Created != nil {
		p.Created[key] += 0 // a key without a 201 must show up in the check
		if status == http.StatusCreated {
			p.Created[key]++
		}
	}
	if ok {
		p.OK++
		p.Latencies = append(p.Latencies, latency)
		return
	}
	p.Errors++
	p.addSample(problem)
}

func (p *Result) addSample(s string) {
	if len(p.Samples) < maxSamples && !slices.Contains(p.Samples, s) {
		p.Samples = append(p.Samples, s)
	}
}

// merge adds up results; it is how rounds are pooled too. Elapsed is the sum.
func merge(parts []Result) Result {
	r := Result{Statuses: map[int]int{}}
	for _, p := range parts {
		r.Sent += p.Sent
		r.OK += p.OK
		r.Errors += p.Errors
		r.Elapsed += p.Elapsed
		r.Latencies = append(r.Latencies, p.Latencies...)
		for s, n := range p.Statuses {
			r.Statuses[s] += n
		}
		for _, s := range p.Samples {
			r.addSample(s)
		}
		if p.Created != nil && r.Created == nil {
			r.Created = map[string]int{}
		}
		for k, n := range p.Created {
			r.Created[k] += n
		}
	}
	return r
}

// post sends one order under key (none if key is "") and reads the whole
// answer, so the connection can be reused.
func post(ctx context.Context, client *http.Client, url, key, body string) (status int, answer string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b), err
}

// describe names an unexpected answer for the report, without the key (which
// would make every sample distinct).
func describe(status int, answer string, err error) string {
	if err != nil {
		return "transport: " + err.Error()
	}
	if len(answer) > 120 {
		answer = answer[:120] + "..."
	}
	return fmt.Sprintf("status %d: %s", status, strings.TrimSpace(answer))
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted, by the
// nearest-rank method: the smallest value that at least p% of values do not
// exceed. It returns 0 for no values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// median returns the middle of xs (the mean of the two middle values for an
// even count), or 0 for none. It does not change xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// ratio formats a/b as "1.23×", or "n/a" when b is 0.
func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// keyCheck is the contention invariant: every key places exactly one order.
type keyCheck struct {
	// Keys counts the keys sent; Duplicates those with more than one 201
	// (Extra is how many 201s too many in all), Missing those with none.
	Keys, Duplicates, Extra, Missing int
}

// checkCreated checks created, the 201s per key as Result.Created counts them.
func checkCreated(created map[string]int) keyCheck {
	c := keyCheck{Keys: len(created)}
	for _, n := range created {
		switch {
		case n == 0:
			c.Missing++
		case n > 1:
			c.Duplicates++
			c.Extra += n - 1
		}
	}
	return c
}

// OK reports whether every key got exactly one 201.
func (c keyCheck) OK() bool { return c.Duplicates == 0 && c.Missing == 0 }

// String is the report's verdict, e.g. "yes (120 keys, 0 duplicates)".
func (c keyCheck) String() string {
	verdict := "yes"
	if !c.OK() {
		verdict = "NO"
	}
	s := fmt.Sprintf("%s (%d keys, %d duplicates", verdict, c.Keys, c.Duplicates)
	if c.Extra > 0 {
		s += fmt.Sprintf(": %d orders too many", c.Extra)
	}
	if c.Missing > 0 {
		s += fmt.Sprintf("; %d without a 201", c.Missing)
	}
	return s + ")"
}
