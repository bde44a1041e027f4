//go:build !js

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// step is what the fake OMS does with one call.
type step int

const (
	// accept acts on the order and answers 201, or answers a repeated
	// order id with its original outcome, as the gateway contract asks.
	accept step = iota
	// reject refuses the order for good (422 with a reason).
	reject
	// failBefore answers 503 without acting.
	failBefore
	// failAfter acts on the order, then answers 503.
	failAfter
	// hang acts on the order and never answers: the Worker times out.
	hang
	// drop acts on the order and drops the connection without an answer.
	drop
	// gated waits until the test opens the symbol's gate, then accepts.
	gated
)

func (s step) String() string {
	return [...]string{"accept", "reject", "503 before acting", "503 after acting", "accept, never answer", "accept, drop the connection", "gated"}[s]
}

// omsToken is the OMS_TOKEN the gateway Workers send; the fake refuses
// calls without it (a 401 without the order, which is an unknown outcome).
const omsToken = "oms-test-token-0123456789"

// rejectReason is what the fake says when it rejects.
const rejectReason = "insufficient buying power"

// fakeOMS is the order-management system the Worker calls in these tests:
// a real HTTP server on loopback. Each test drives its own symbol, so the
// fake's script and its record are per symbol: every order id a symbol's
// calls carried, in order, and what was done with each order.
type fakeOMS struct {
	URL string
	srv *http.Server

	mu    sync.Mutex
	calls map[string][]string // symbol → the order id of each call
	// at is when each of a symbol's calls arrived; inCall and mostInCall
	// count a symbol's calls in progress, now and at most.
	at         map[string][]time.Time
	inCall     map[string]int
	mostInCall map[string]int
	// via counts the calls that came through a service binding (X-Via).
	via     map[string]int
	faulted map[string]int    // symbol → its calls that failed or got no answer
	acted   map[string]int    // order id → the status it was given for good
	scripts map[string][]step // symbol → the steps of its next calls; then accept
	gates   map[string]chan struct{}
	arrived map[string]chan struct{} // closed at a gated call's arrival
	chaos   float64                  // share of unscripted calls that fail at random
}

func startFakeOMS() (*fakeOMS, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeOMS{URL: "http://" + l.Addr().String() + "/orders", calls: map[string][]string{}, acted: map[string]int{}, via: map[string]int{}, faulted: map[string]int{},
		at: map[string][]time.Time{}, inCall: map[string]int{}, mostInCall: map[string]int{},
		scripts: map[string][]step{}, gates: map[string]chan struct{}{}, arrived: map[string]chan struct{}{}}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve)}
	go f.srv.Serve(l)
	return f, nil
}

// stop ends the server and every call still waiting.
func (f *fakeOMS) stop() {
	f.mu.Lock()
	for _, g := range f.gates {
		select {
		case <-g:
		default:
			close(g)
		}
	}
	f.mu.Unlock()
	f.srv.Close()
}

// script sets what the next calls for symbol do, then accept; a gated step
// gets a gate that open opens.
func (f *fakeOMS) script(symbol string, steps ...step) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scripts[symbol] = steps
	f.gates[symbol] = make(chan struct{})
	f.arrived[symbol] = make(chan struct{})
}

// open lets symbol's gated calls go on.
func (f *fakeOMS) open(symbol string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.gates[symbol])
}

// waitArrival waits until a gated call for symbol has arrived.
func (f *fakeOMS) waitArrival(t *testing.T, symbol string) {
	t.Helper()
	f.mu.Lock()
	arrived := f.arrived[symbol]
	f.mu.Unlock()
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatalf("no gateway call for %s in 20 s", symbol)
	}
}

// setChaos makes share of the unscripted calls fail at random.
func (f *fakeOMS) setChaos(share float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chaos = share
}

// orderIDs returns the order id of every call for symbol, in order.
func (f *fakeOMS) orderIDs(symbol string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls[symbol]...)
}

// callTimes returns when each call for symbol arrived, in order.
func (f *fakeOMS) callTimes(symbol string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.at[symbol]...)
}

// mostAtOnce is the most calls for symbol that were in progress at once.
func (f *fakeOMS) mostAtOnce(symbol string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mostInCall[symbol]
}

// accepted reports whether the fake placed orderID (and did not refuse it).
func (f *fakeOMS) accepted(orderID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acted[orderID] == http.StatusCreated
}

// faults is how many calls for symbol failed or got no answer, scripted or
// by chaos.
func (f *fakeOMS) faults(symbol string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.faulted[symbol]
}

// viaBinding is how many calls for symbol came through a service binding.
func (f *fakeOMS) viaBinding(symbol string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.via[symbol]
}

// placement is the body the gateway receives.
type placement struct {
	OrderID    string  `json:"orderId"`
	ClientID   string  `json:"clientId"`
	Symbol     string  `json:"symbol"`
	Side       string  `json:"side"`
	Quantity   float64 `json:"quantity"`
	AcceptedAt string  `json:"acceptedAt"`
}

func (f *fakeOMS) serve(w http.ResponseWriter, r *http.Request) {
	var p placement
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+omsToken ||
		r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &p) != nil ||
		p.OrderID == "" || r.Header.Get("Idempotency-Key") != p.OrderID {
		http.Error(w, "not a gateway call: "+string(body), http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	f.calls[p.Symbol] = append(f.calls[p.Symbol], p.OrderID)
	f.at[p.Symbol] = append(f.at[p.Symbol], time.Now())
	f.inCall[p.Symbol]++
	f.mostInCall[p.Symbol] = max(f.mostInCall[p.Symbol], f.inCall[p.Symbol])
	defer func() {
		f.mu.Lock()
		f.inCall[p.Symbol]--
		f.mu.Unlock()
	}()
	if r.Header.Get("X-Via") == "service-binding" {
		f.via[p.Symbol]++
	}
	s := accept
	if steps := f.scripts[p.Symbol]; len(steps) > 0 {
		s, f.scripts[p.Symbol] = steps[0], steps[1:]
	} else if f.chaos > 0 && rand.Float64() < f.chaos {
		s = []step{failBefore, failAfter, hang, drop}[rand.IntN(4)]
	}
	if s == failBefore || s == failAfter || s == hang || s == drop {
		f.faulted[p.Symbol]++
	}
	gate, arrived := f.gates[p.Symbol], f.arrived[p.Symbol]
	f.mu.Unlock()

	if s == gated {
		close(arrived)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if s == failBefore {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	status := f.act(p.OrderID, s == reject)
	switch s {
	case failAfter:
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	case hang:
		<-r.Context().Done()
		return
	case drop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	answer := map[string]string{"orderId": p.OrderID, "status": "accepted"}
	if status == http.StatusUnprocessableEntity {
		answer = map[string]string{"orderId": p.OrderID, "status": "rejected", "reason": rejectReason}
	}
	json.NewEncoder(w).Encode(answer)
}

// act places or refuses orderID once; a repeated order id keeps its first
// outcome, whatever the call asks.
func (f *fakeOMS) act(orderID string, refuse bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if status, ok := f.acted[orderID]; ok {
		return status
	}
	status := http.StatusCreated
	if refuse {
		status = http.StatusUnprocessableEntity
	}
	f.acted[orderID] = status
	return status
}

// omsTimeout is OMS_TIMEOUT_MS for the gateway Workers: short, so that
// the tests of calls that never answer stay quick.
const omsTimeout = 1500 * time.Millisecond

// gatewayWorkers are Workers with OMS_URL set to the fake OMS, served
// through test/wrapped/entry.mjs: KV mode, and ledger mode with a second
// location (ledger-front) that binds its class. Started on first use.
type gatewayWorkers struct {
	oms *fakeOMS
	// vars are the Workers' vars, for tests that start one of their own.
	vars              map[string]string
	kv, ledger, front *target
}

var (
	gatewayOnce sync.Once
	gateway     *gatewayWorkers
	gatewayErr  error
)

// startGateway starts the fake OMS and its Workers, once for the package;
// TestMain stops them.
func startGateway(t *testing.T) *gatewayWorkers {
	t.Helper()
	requireWorker(t)
	gatewayOnce.Do(func() {
		oms, err := startFakeOMS()
		if err != nil {
			gatewayErr = err
			return
		}
		g := &gatewayWorkers{oms: oms}
		gateway = g
		// The sweep of lost settle messages takes a key a second past its
		// due time, so that its test need not wait a minute.
		vars := map[string]string{"OMS_URL": oms.URL, "OMS_TOKEN": omsToken, "OMS_TIMEOUT_MS": fmt.Sprint(omsTimeout.Milliseconds()),
			"SETTLE_SWEEP_GRACE_SECONDS": "1"}
		g.vars = vars
		registry, err := os.MkdirTemp("", "edge-orders-e2e-registry-")
		if err != nil {
			gatewayErr = err
			return
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Add(2)
		go func() {
			defer wg.Done()
			g.kv, errs[0] = startTarget("kv", wrappedOptions(wranglerdev.Options{Vars: vars}))
		}()
		go func() {
			defer wg.Done()
			g.ledger, errs[1] = startTarget("ledger", wrappedOptions(wranglerdev.Options{Vars: vars, Registry: registry}))
		}()
		wg.Wait()
		if gatewayErr = errors.Join(errs...); gatewayErr != nil {
			return
		}
		g.front, gatewayErr = startTarget("ledger", wrappedOptions(wranglerdev.Options{Vars: vars, Registry: registry, Environment: "ledger-front"}))
	})
	if gatewayErr != nil {
		t.Fatal(gatewayErr)
	}
	return gateway
}

// stopGateway stops what startGateway started, printing the Workers' logs
// if the run failed.
func stopGateway(failed bool) {
	if gateway == nil {
		return
	}
	for _, w := range []*target{gateway.kv, gateway.ledger, gateway.front} {
		if w == nil {
			continue
		}
		w.srv.Stop()
		if failed {
			fmt.Fprintf(os.Stderr, "--- wrangler output, gateway %s mode ---\n%s\n", w.mode, w.srv.Logs())
		}
		os.RemoveAll(w.state)
	}
	gateway.oms.stop()
}
