//go:build !js

package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// gateway is the OMS gateway the Go Worker calls in the latency phase: it
// waits a delay drawn from its distribution, accepts the order as the
// gateway contract asks (docs/operating.md), and records how long
// each call took on its side, so the edge's own share of a new order's
// latency can be told apart. An order whose symbol starts with
// settleMarker is refused with a 503 on its first call, so that the
// Worker's settler has an unknown outcome to settle; the gateway records
// the order id of each of its calls instead of their service times.
type gateway struct {
	URL   string
	delay latency
	srv   *http.Server

	mu          sync.Mutex
	service     []time.Duration
	markedCalls map[string][]string // a marked symbol → the order id of each call
}

// settleMarker starts the symbol of an order whose first gateway call the
// bench's gateway refuses. Each such order has a symbol of its own, so
// that its calls can be told apart from every other order's.
const settleMarker = "SETTLE"

func startGateway(delay latency) (*gateway, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &gateway{URL: "http://" + l.Addr().String() + "/orders", delay: delay, markedCalls: map[string][]string{}}
	g.srv = &http.Server{Handler: g}
	go g.srv.Serve(l)
	return g, nil
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	var p struct {
		OrderID string `json:"orderId"`
		Symbol  string `json:"symbol"`
	}
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.OrderID == "" {
		http.Error(w, "not an order", http.StatusBadRequest)
		return
	}
	marked := strings.HasPrefix(p.Symbol, settleMarker)
	first := false
	if marked {
		// Recorded on arrival: by the time the Worker stores the answer,
		// its call is on the record.
		g.mu.Lock()
		g.markedCalls[p.Symbol] = append(g.markedCalls[p.Symbol], p.OrderID)
		first = len(g.markedCalls[p.Symbol]) == 1
		g.mu.Unlock()
	}
	time.Sleep(time.Duration(g.delay.draw(rand.Float64()) * float64(time.Millisecond)))
	if first {
		// Without an orderId: an answer that says to try again, never a
		// refusal (oms.ReadAnswer).
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]string{"orderId": p.OrderID, "status": "accepted"})
	if !marked {
		g.mu.Lock()
		g.service = append(g.service, time.Since(began))
		g.mu.Unlock()
	}
}

// calls returns the order id of each call for the marked symbol, in order.
func (g *gateway) calls(symbol string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.markedCalls[symbol]...)
}

// take returns the service times recorded since the last take.
func (g *gateway) take() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.service
	g.service = nil
	return s
}

func (g *gateway) stop() { g.srv.Close() }

// draw is wrap.mjs's sampleDelay in Go: the quantile function, piecewise
// linear in log(ms) through (0, p50/2), (0.5, p50), (0.95, p95),
// (0.99, p99) and (1, 2·p99), at u in [0, 1).
func (l latency) draw(u float64) float64 {
	if l.P50 <= 0 {
		return 0
	}
	if l.P50 == l.P95 && l.P95 == l.P99 {
		return l.P50
	}
	points := [][2]float64{{0, l.P50 / 2}, {0.5, l.P50}, {0.95, l.P95}, {0.99, l.P99}, {1, 2 * l.P99}}
	for i := 1; i < len(points); i++ {
		u0, d0, u1, d1 := points[i-1][0], points[i-1][1], points[i][0], points[i][1]
		if u < u1 || i == len(points)-1 {
			t := min(1, (u-u0)/(u1-u0))
			return d0 * math.Pow(d1/d0, t)
		}
	}
	return l.P50
}

// median of ds; 0 for none.
func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
