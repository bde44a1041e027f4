//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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
	var answer struct{ OrderID, Status string }
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if resp.StatusCode != 201 || answer.OrderID != "o-1" || answer.Status != "accepted" {
		t.Fatalf("gateway = %d %+v, want 201 naming the order as accepted", resp.StatusCode, answer)
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

func TestGatewayRefusesAMarkedOrdersFirstCall(t *testing.T) {
	g, err := startGateway(latency{P50: 1, P95: 1, P99: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	symbol := settleMarker + "-1"
	var got []int
	for _, id := range []string{"o-1", "o-1"} {
		resp, err := http.Post(g.URL, "application/json", strings.NewReader(`{"orderId":"`+id+`","symbol":"`+symbol+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got = append(got, resp.StatusCode)
	}
	if !slices.Equal(got, []int{503, 201}) {
		t.Errorf("statuses = %v, want 503, then 201", got)
	}
	if calls := g.calls(symbol); !slices.Equal(calls, []string{"o-1", "o-1"}) {
		t.Errorf("calls = %q, want the order id of both", calls)
	}
	if s := g.take(); len(s) != 0 {
		t.Errorf("service times %v, want none for a marked order", s)
	}
}

// TestSettlingChecksTheOrderID runs the settling check against a fake
// Worker whose settler calls the gateway again 100 ms after the unknown
// outcome, with the same order id or with a new one.
func TestSettlingChecksTheOrderID(t *testing.T) {
	for _, c := range []struct {
		name      string
		newID     bool
		wantError bool
	}{{"settled with one order id", false, false}, {"a second order id fails", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			g, err := startGateway(latency{P50: 1, P95: 1, P99: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer g.stop()
			worker := httptest.NewServer(fakeSettlingWorker(t, g.URL, c.newID))
			defer worker.Close()
			logs := func() string { return "a line for another key\n" }
			settles, err := settling(context.Background(), worker.URL, logs, g, 2)
			if gotError := err != nil; gotError != c.wantError {
				t.Fatalf("settling = %v, %v; want an error: %v", settles, err, c.wantError)
			}
			if c.wantError {
				t.Log(err)
				return
			}
			for _, s := range settles {
				if s.took < 100*time.Millisecond || s.gatewayCalls != 2 {
					t.Errorf("settle = %+v, want at least the settler's 100 ms, and 2 calls", s)
				}
			}
		})
	}
}

// fakeSettlingWorker answers a POST by calling the gateway with a new
// order id; when the gateway refuses, it answers 503 outcome_unknown and
// calls again 100 ms later (with another order id if newID), and a lookup
// answers 200 once that call accepted.
func fakeSettlingWorker(t *testing.T, gatewayURL string, newID bool) http.Handler {
	var mu sync.Mutex
	receipts := map[string]string{}
	call := func(orderID, symbol string) int {
		resp, err := http.Post(gatewayURL, "application/json", strings.NewReader(`{"orderId":"`+orderID+`","symbol":"`+symbol+`"}`))
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if r.Method == http.MethodGet {
			mu.Lock()
			receipt, ok := receipts[key]
			mu.Unlock()
			if !ok {
				w.WriteHeader(503)
				return
			}
			w.Write([]byte(receipt))
			return
		}
		var o struct{ Symbol string }
		json.NewDecoder(r.Body).Decode(&o)
		orderID := "id-" + key
		if call(orderID, o.Symbol) != 503 {
			t.Error("the gateway accepted a marked order's first call")
		}
		go func() {
			time.Sleep(100 * time.Millisecond)
			again := orderID
			if newID {
				again += "-again"
			}
			if call(again, o.Symbol) == 201 {
				mu.Lock()
				receipts[key] = `{"orderId":"` + again + `"}`
				mu.Unlock()
			}
		}()
		w.WriteHeader(503)
		w.Write([]byte(`{"error":"outcome_unknown","orderId":"` + orderID + `"}`))
	})
}
