//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// latency is a delay distribution given by its percentiles, in ms. The
// wrapping entry (test/wrapped/wrap.mjs, sampleDelay) draws each call's delay
// from it: piecewise log-linear through p50/2, p50, p95, p99 and 2·p99.
type latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// parseLatency reads "p50,p95,p99" in ms, e.g. "7,50,250"; one number is a
// fixed delay.
func parseLatency(s string) (latency, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 1 && len(parts) != 3 {
		return latency{}, fmt.Errorf("%q: want p50,p95,p99 in ms, or one fixed ms", s)
	}
	var v [3]float64
	for i, p := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || x < 0 {
			return latency{}, fmt.Errorf("%q: %q is not a number of ms", s, p)
		}
		v[i] = x
	}
	if len(parts) == 1 {
		return latency{v[0], v[0], v[0]}, nil
	}
	if v[0] > v[1] || v[1] > v[2] {
		return latency{}, fmt.Errorf("%q: want p50 <= p95 <= p99", s)
	}
	return latency{v[0], v[1], v[2]}, nil
}

func (l latency) String() string {
	if l.P50 == l.P95 && l.P95 == l.P99 {
		return fmt.Sprintf("%g ms fixed", l.P50)
	}
	return fmt.Sprintf("p50 %g, p95 %g, p99 %g ms", l.P50, l.P95, l.P99)
}

// delayModel is what each binding call waits in production-latency mode.
// bench/README.md gives the sources of the defaults.
type delayModel struct {
	// KVRead is a KV get or getWithMetadata; KVWrite a put or delete.
	KVRead, KVWrite latency
	// DORoundTrip is one call from the Worker to a Durable Object in the same
	// region; DOWrite is the extra wait of a call that writes (claim,
	// commit, release) until the write is durable.
	DORoundTrip, DOWrite latency
}

// Defaults of the delay model; see bench/README.md for where they come from.
const (
	defaultKVRead      = "7,50,250"
	defaultKVWrite     = "30,100,300"
	defaultDORoundTrip = "10,25,60"
	defaultDOWrite     = "5,15,40"
)

// wrapDelays is the WRAP_DELAYS value that makes wrap.mjs apply the model:
// each binding method's delay, an array meaning the sum of its parts.
func (m delayModel) wrapDelays() string {
	write := []latency{m.DORoundTrip, m.DOWrite}
	delays := map[string]any{
		"ORDERS.get":             m.KVRead,
		"ORDERS.getWithMetadata": m.KVRead,
		"ORDERS.list":            m.KVRead,
		"ORDERS.put":             m.KVWrite,
		"ORDERS.delete":          m.KVWrite,
		"LEDGER.claim":           write,
		"LEDGER.commit":          write,
		"LEDGER.release":         write,
		"LEDGER.*":               m.DORoundTrip, // lookup, sweep, stats
	}
	b, err := json.Marshal(delays)
	if err != nil {
		panic(err) // numbers and strings only
	}
	return string(b)
}
