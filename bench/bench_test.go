//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestParseAutocannon(t *testing.T) {
	// The members bench reads, as autocannon 8 writes them with --json.
	out := []byte(`{"title":null,"url":"http://127.0.0.1:1","latency":{"average":12.5,"p50":11,"p99":40,"max":52},` +
		`"requests":{"average":400},"duration":2.01,"errors":1,"timeouts":0,"2xx":800,"non2xx":3}`)
	l, err := parseAutocannon(out)
	if err != nil {
		t.Fatal(err)
	}
	if l.OK != 800 || l.NotOK != 3 || l.Errors != 1 || l.Latency.P50 != 11 || l.Latency.P99 != 40 {
		t.Fatalf("parsed %+v", l)
	}
	if got := l.perSecond(); got < 397 || got > 399 {
		t.Errorf("perSecond = %v, want 800 / 2.01", got)
	}
	if _, err := parseAutocannon([]byte("Running 2s test")); err == nil {
		t.Error("a report that is not JSON was read")
	}
}

func TestMedianAndRatio(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3 = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 4 = %v", got)
	}
	if got := ratio(3, 4); got != "0.75×" {
		t.Errorf("ratio = %q", got)
	}
	if got := ratio(3, 0); got != "n/a" {
		t.Errorf("ratio with no yardstick = %q", got)
	}
}

// TestDrawMatchesThePercentiles checks the Go copy of sampleDelay at the
// points its model goes through (TestSampleDelayInNode checks the
// JavaScript one).
func TestDrawMatchesThePercentiles(t *testing.T) {
	l := latency{P50: 40, P95: 80, P99: 150}
	for _, c := range []struct{ u, want float64 }{{0, 20}, {0.5, 40}, {0.95, 80}, {0.99, 150}} {
		if got := l.draw(c.u); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("draw(%v) = %v, want %v", c.u, got, c.want)
		}
	}
	if got := (latency{30, 30, 30}).draw(0.7); got != 30 {
		t.Errorf("a fixed delay drew %v", got)
	}
}

func TestGatewayAcceptsAndTimes(t *testing.T) {
	g, err := startGateway(latency{P50: 20, P95: 20, P99: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	resp, err := http.Post(g.URL, "application/json", bytes.NewReader([]byte(`{"orderId":"o-1"}`)))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct{ OrderID string }
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if resp.StatusCode != 201 || answer.OrderID != "o-1" {
		t.Fatalf("gateway = %d %+v, want 201 naming the order", resp.StatusCode, answer)
	}
	if s := g.take(); len(s) != 1 || s[0] < 20*time.Millisecond {
		t.Fatalf("service times %v, want one of at least the 20 ms delay", s)
	}
	if s := g.take(); len(s) != 0 {
		t.Fatalf("take kept %v", s)
	}
}

// TestContentionCountsDuplicates runs the check against a server that
// places every request's order, as a Worker without idempotency would,
// and one that places one per key.
func TestContentionCountsDuplicates(t *testing.T) {
	for _, c := range []struct {
		name     string
		exact    bool
		wantDups int
	}{{"no idempotency: every key twice", false, 3}, {"one order per key", true, 0}} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]bool{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				key := r.Header.Get("Idempotency-Key")
				first := !seen[key]
				seen[key] = true
				mu.Unlock()
				if first || !c.exact {
					w.WriteHeader(201)
					return
				}
				w.WriteHeader(200)
			}))
			defer srv.Close()
			got, err := contention(context.Background(), srv.URL, "k", 3, 4)
			if err != nil || got != c.wantDups {
				t.Fatalf("contention = %d, %v; want %d", got, err, c.wantDups)
			}
		})
	}
}
