//go:build !js

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	oneTo100 := make([]time.Duration, 100)
	for i := range oneTo100 {
		oneTo100[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"no values give 0", nil, 50, 0},
		{"one value is every percentile", []time.Duration{7}, 99, 7},
		{"p50 of 1..100 is 50", oneTo100, 50, 50 * time.Millisecond},
		{"p99 of 1..100 is 99", oneTo100, 99, 99 * time.Millisecond},
		{"p100 is the maximum", oneTo100, 100, 100 * time.Millisecond},
		{"p99 of 1..10 rounds up to the maximum", oneTo100[:10], 99, 10 * time.Millisecond},
		{"p50 of 1..4 is the lower middle", oneTo100[:4], 50, 2 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%d values, %v) = %v, want %v", len(tt.sorted), tt.p, got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"no values give 0", nil, 0},
		{"odd count takes the middle", []float64{300, 100, 200}, 200},
		{"even count averages the middle two", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.xs)
			if got := median(tt.xs); got != tt.want {
				t.Errorf("median(%v) = %v, want %v", tt.xs, got, tt.want)
			}
			if !slices.Equal(in, tt.xs) {
				t.Errorf("median reordered its input: %v, was %v", tt.xs, in)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		a, b float64
		want string
	}{
		{300, 150, "2.00×"},
		{50, 200, "0.25×"},
		{10, 0, "n/a"},
	}
	for _, tt := range tests {
		if got := ratio(tt.a, tt.b); got != tt.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestCheckCreated(t *testing.T) {
	tests := []struct {
		name    string
		created map[string]int
		want    keyCheck
		verdict string
	}{
		{"one 201 per key passes", map[string]int{"a": 1, "b": 1}, keyCheck{Keys: 2}, "yes (2 keys, 0 duplicates)"},
		{"two 201s for a key is a duplicate", map[string]int{"a": 1, "b": 3, "c": 2},
			keyCheck{Keys: 3, Duplicates: 2, Extra: 3}, "NO (3 keys, 2 duplicates: 3 orders too many)"},
		{"a key without a 201 fails", map[string]int{"a": 1, "b": 0},
			keyCheck{Keys: 2, Missing: 1}, "NO (2 keys, 0 duplicates; 1 without a 201)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkCreated(tt.created)
			if got != tt.want {
				t.Errorf("checkCreated(%v) = %+v, want %+v", tt.created, got, tt.want)
			}
			if got.String() != tt.verdict {
				t.Errorf("verdict = %q, want %q", got.String(), tt.verdict)
			}
		})
	}
}

func TestContentionKeysComeInGroupsOfConns(t *testing.T) {
	sc := scenarios[slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == "contention" })]
	const conns = 8
	for n := range int64(24) {
		got, want := sc.key("p-", n, 0, conns), sc.key("p-", n/conns*conns, 0, conns)
		if got != want {
			t.Errorf("request %d has key %q, want its group's %q", n, got, want)
		}
	}
	if sc.key("p-", 7, 0, conns) == sc.key("p-", 8, 0, conns) {
		t.Errorf("requests 7 and 8 share a key; groups should hold %d requests", conns)
	}
}

// orderServer answers like the Workers: 201 for a new key, 200 for a key
// with a receipt, 409 for a key in flight. With atomicClaim false it checks and
// claims in two steps with a pause between, as the JavaScript reference does
// with KV, so concurrent requests for one key can all place an order.
func orderServer(t *testing.T, atomicClaim bool) *httptest.Server {
	var mu sync.Mutex
	done, pending := map[string]bool{}, map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		switch {
		case done[key]:
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
			return
		case pending[key]:
			mu.Unlock()
			w.WriteHeader(http.StatusConflict)
			return
		}
		if !atomicClaim {
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
		}
		pending[key] = true
		mu.Unlock()
		time.Sleep(2 * time.Millisecond) // placing the order
		mu.Lock()
		done[key], pending[key] = true, false
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// contention returns a Load that sends conns requests per key, as the
// contention scenario does.
func contention(url string, conns int) Load {
	sc := scenarios[slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == "contention" })]
	return Load{
		URL: url, Conns: conns, Duration: 300 * time.Millisecond, MaxRequests: 100000,
		Request:      func(n int64, c int) (string, string) { return sc.key("k-", n, c, conns), validOrder },
		Expect:       func(status int) bool { return slices.Contains(sc.expect, status) },
		CountCreated: true,
	}
}

func TestRun(t *testing.T) {
	t.Run("an atomic server places one order per key", func(t *testing.T) {
		r := contention(orderServer(t, true).URL, 8).Run(context.Background())
		check := checkCreated(r.Created)
		if !check.OK() || check.Keys < 2 {
			t.Errorf("check = %v, want exactly one 201 per key over several keys", check)
		}
		if r.Errors != 0 || r.OK != r.Sent || len(r.Latencies) != r.OK {
			t.Errorf("sent %d, ok %d, errors %d (%v), %d latencies; want every request ok and timed", r.Sent, r.OK, r.Errors, r.Samples, len(r.Latencies))
		}
		if r.Statuses[http.StatusConflict] == 0 {
			t.Errorf("statuses %v, want some 409s: requests for one key should overlap", r.Statuses)
		}
	})
	t.Run("a racy server is caught placing duplicates", func(t *testing.T) {
		r := contention(orderServer(t, false).URL, 8).Run(context.Background())
		if check := checkCreated(r.Created); check.Duplicates == 0 || check.OK() {
			t.Errorf("check = %v, want duplicates", check)
		}
	})
	t.Run("the request cap ends the run", func(t *testing.T) {
		l := contention(orderServer(t, true).URL, 4)
		l.Duration, l.MaxRequests = 10*time.Second, 50
		r := l.Run(context.Background())
		if r.Sent != 50 {
			t.Errorf("sent %d, want 50", r.Sent)
		}
		if r.Elapsed > 5*time.Second {
			t.Errorf("run took %v, want it to end at the cap, long before the duration", r.Elapsed)
		}
	})
	t.Run("the duration ends the run", func(t *testing.T) {
		l := contention(orderServer(t, true).URL, 4)
		l.Duration = 200 * time.Millisecond
		r := l.Run(context.Background())
		if r.Sent == 0 || r.Elapsed < l.Duration || r.Elapsed > l.Duration+time.Second {
			t.Errorf("sent %d in %v, want some requests in about %v", r.Sent, r.Elapsed, l.Duration)
		}
	})
	t.Run("wrong statuses and transport failures are errors", func(t *testing.T) {
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1)%3 == 0 {
				http.Error(w, `{"error":"storage_unavailable"}`, http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		defer srv.Close()
		l := contention(srv.URL, 2)
		l.MaxRequests = 30
		l.Expect = func(status int) bool { return status == http.StatusCreated }
		r := l.Run(context.Background())
		if r.Sent != 30 || r.Errors != 10 || r.OK != 20 || r.Statuses[http.StatusServiceUnavailable] != 10 {
			t.Errorf("sent %d, ok %d, errors %d, statuses %v; want 30 sent, 20 ok, 10 errors (503)", r.Sent, r.OK, r.Errors, r.Statuses)
		}
		if len(r.Samples) != 1 || !strings.Contains(r.Samples[0], "status 503") {
			t.Errorf("samples %q, want one describing the 503", r.Samples)
		}

		srv.Close() // now every request fails in transport
		r = l.Run(context.Background())
		if r.Errors != r.Sent || r.Sent == 0 || !strings.HasPrefix(r.Samples[0], "transport: ") {
			t.Errorf("against a closed server: sent %d, errors %d, samples %q; want every request a transport error", r.Sent, r.Errors, r.Samples)
		}
	})
}
