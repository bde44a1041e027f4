//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// gatewayOrder is an order for symbol: each test, or each key of a test,
// has a symbol of its own, by which the fake OMS scripts and counts.
func gatewayOrder(symbol string) string {
	return fmt.Sprintf(`{"symbol":%q,"side":"buy","quantity":100}`, symbol)
}

// newSymbol returns a symbol no other test uses.
func newSymbol(t *testing.T) string {
	return strings.NewReplacer("/", "-", " ", "_").Replace(newKey(t))
}

// forEachGatewayMode runs test against the KV and the ledger gateway
// Workers, both at once.
func forEachGatewayMode(t *testing.T, test func(t *testing.T, g *gatewayWorkers, w *target)) {
	t.Helper()
	g := startGateway(t)
	for _, w := range []*target{g.kv, g.ledger} {
		t.Run(w.mode, func(t *testing.T) { t.Parallel(); test(t, g, w) })
	}
}

// wantOneOrderID fails t unless every gateway call for symbol carried the
// receipt's order id: however many calls there were, the OMS saw one order.
func wantOneOrderID(t *testing.T, oms *fakeOMS, symbol string, r receipt) {
	t.Helper()
	ids := oms.orderIDs(symbol)
	if len(ids) == 0 {
		t.Fatalf("the gateway saw no call for %s", symbol)
	}
	for _, id := range ids {
		if id != r.OrderID {
			t.Fatalf("the gateway saw order ids %v for one key, want only the receipt's %s", ids, r.OrderID)
		}
	}
}

// TestGatewayPlacesEachOrderOnce checks the call itself: a new order
// reaches the gateway once, with the receipt's order id, and its replays
// and lookups never reach it.
func TestGatewayPlacesEachOrderOnce(t *testing.T) {
	shareWorkers(t)
	forEachGatewayMode(t, func(t *testing.T, g *gatewayWorkers, w *target) {
		symbol, key := newSymbol(t), newKey(t)
		first := w.post(t, key, gatewayOrder(symbol))
		if first.status != 201 {
			t.Fatalf("first = %d %s, want 201", first.status, first.body)
		}
		r := decodeReceipt(t, first.body)
		for _, again := range []response{w.post(t, key, gatewayOrder(symbol)), w.lookup(t, key)} {
			if again.status != 200 || again.body != first.body {
				t.Fatalf("retry = %d %s, want the 200 replay of %s", again.status, again.body, first.body)
			}
		}
		wantOneOrderID(t, g.oms, symbol, r)
		if n := len(g.oms.orderIDs(symbol)); n != 1 {
			t.Fatalf("gateway calls = %d, want 1: replays and lookups never reach it", n)
		}
	})
}

// TestConcurrentDuplicatesReachTheGatewayOnce sends one key's requests at
// once while the gateway holds its first call: within one instance in KV
// mode, and over two processes in ledger mode (ledger and ledger-front).
func TestConcurrentDuplicatesReachTheGatewayOnce(t *testing.T) {
	shareWorkers(t)
	g := startGateway(t)
	for _, c := range []struct {
		name     string
		into     []*target
		tolerate int // answers other than the one receipt that may come back: none
	}{
		{"kv, one instance", []*target{g.kv}, 0},
		{"ledger, two locations", []*target{g.ledger, g.front}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			symbol, key := newSymbol(t), newKey(t)
			g.oms.script(symbol, gated)
			const duplicates = 8
			got := make([]response, duplicates)
			var wg sync.WaitGroup
			for i := range got {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i] = c.into[i%len(c.into)].post(t, key, gatewayOrder(symbol))
				}()
			}
			g.oms.waitArrival(t, symbol)
			g.oms.open(symbol)
			wg.Wait()
			bodies, created := map[string]bool{}, 0
			for _, r := range got {
				switch r.status {
				case 201:
					created++
					bodies[r.body] = true
				case 200:
					bodies[r.body] = true
				default:
					t.Errorf("answer %d %s, want only the receipt (the duplicates wait out the first)", r.status, r.body)
				}
			}
			if created != 1 || len(bodies) != 1 {
				t.Fatalf("%d created and %d distinct receipts, want one of each", created, len(bodies))
			}
			var body string
			for b := range bodies {
				body = b
			}
			wantOneOrderID(t, g.oms, symbol, decodeReceipt(t, body))
			if n := len(g.oms.orderIDs(symbol)); n != 1 {
				t.Fatalf("gateway calls = %d, want 1", n)
			}
		})
	}
}

// TestUnknownOutcomeIsRetriable makes the gateway fail in each way that
// leaves the order's fate unknown. The first attempt must answer a
// retriable 503 within the timeout and a little, and a lookup then says
// so (or that the settler is on it, or has stored the receipt); an
// immediate retry must
// end with a receipt: 201 if it asked the OMS itself, or 200 if the
// settler, due a second later, asked first (a loaded machine's retry may
// come after it); and the gateway must have seen only the receipt's order
// id, twice: the failed call, and the retry's or the settler's.
func TestUnknownOutcomeIsRetriable(t *testing.T) {
	shareWorkers(t)
	forEachGatewayMode(t, func(t *testing.T, g *gatewayWorkers, w *target) {
		for _, fault := range []step{failBefore, failAfter, hang, drop} {
			t.Run(fault.String(), func(t *testing.T) {
				symbol, key := newSymbol(t), newKey(t)
				g.oms.script(symbol, fault)
				began := time.Now()
				first := w.post(t, key, gatewayOrder(symbol))
				if took, limit := time.Since(began), omsTimeout+3*time.Second; took > limit {
					t.Errorf("the first attempt took %v, want under %v (the gateway timeout and a little)", took, limit)
				}
				wantProblem(t, first, 503, "outcome_unknown")
				if first.header.Get("Retry-After") == "" {
					t.Errorf("503 without Retry-After")
				}
				// The settler, due a second later, may be on the key (409) or
				// have stored its receipt (200) by the time a loaded machine
				// looks.
				switch lookup := w.lookup(t, key); lookup.status {
				case 503:
					wantProblem(t, lookup, 503, "outcome_unknown")
				case 409:
					wantProblem(t, lookup, 409, "in_progress")
				case 200:
					wantOneOrderID(t, g.oms, symbol, decodeReceipt(t, lookup.body))
				default:
					t.Errorf("lookup after the unknown outcome = %d %s, want 503 outcome_unknown (or 409 or 200 once the settler is on it)", lookup.status, lookup.body)
				}
				retry := w.post(t, key, gatewayOrder(symbol))
				if retry.status != 201 && retry.status != 200 {
					t.Fatalf("the immediate retry = %d %s, want the receipt: 201, or 200 once the settler stored it", retry.status, retry.body)
				}
				wantOneOrderID(t, g.oms, symbol, decodeReceipt(t, retry.body))
				if n := len(g.oms.orderIDs(symbol)); n != 2 {
					t.Fatalf("gateway calls = %d, want 2: the failed one and the retry's or the settler's", n)
				}
				if again := w.post(t, key, gatewayOrder(symbol)); again.status != 200 || again.body != retry.body {
					t.Fatalf("replay = %d %s, want %s", again.status, again.body, retry.body)
				}
			})
		}
	})
}

// TestRejectionIsFinal checks that a gateway's rejection is the key's
// outcome: a 422 naming the order and the reason, replayed byte for byte
// to every retry and lookup without calling the gateway again.
func TestRejectionIsFinal(t *testing.T) {
	shareWorkers(t)
	forEachGatewayMode(t, func(t *testing.T, g *gatewayWorkers, w *target) {
		symbol, key := newSymbol(t), newKey(t)
		g.oms.script(symbol, reject)
		first := w.post(t, key, gatewayOrder(symbol))
		p := wantProblem(t, first, 422, "order_rejected")
		if p.Detail != rejectReason {
			t.Errorf("detail = %q, want the gateway's reason %q", p.Detail, rejectReason)
		}
		var named struct{ OrderID string }
		json.Unmarshal([]byte(first.body), &named)
		ids := g.oms.orderIDs(symbol)
		if len(ids) != 1 || named.OrderID != ids[0] {
			t.Fatalf("the rejection names order %q; the gateway saw %v", named.OrderID, ids)
		}
		if first.header.Get("Idempotent-Replay") != "" {
			t.Errorf("the first rejection says it is a replay")
		}
		for _, again := range []response{w.post(t, key, gatewayOrder(symbol)), w.lookup(t, key)} {
			if again.status != 422 || again.body != first.body || again.header.Get("Idempotent-Replay") != "true" {
				t.Fatalf("retry = %d %s (replay %q), want the same 422 body, byte for byte, as a replay", again.status, again.body, again.header.Get("Idempotent-Replay"))
			}
		}
		if n := len(g.oms.orderIDs(symbol)); n != 1 {
			t.Fatalf("gateway calls = %d, want 1", n)
		}
	})
}

// TestLookupTellsEveryState checks that a lookup tells apart an order in
// flight, one whose outcome is unknown, a rejection and a receipt.
func TestLookupTellsEveryState(t *testing.T) {
	shareWorkers(t)
	forEachGatewayMode(t, func(t *testing.T, g *gatewayWorkers, w *target) {
		symbol, key := newSymbol(t), newKey(t)
		g.oms.script(symbol, gated)
		placed := make(chan response, 1)
		go func() { placed <- w.post(t, key, gatewayOrder(symbol)) }()
		g.oms.waitArrival(t, symbol)
		wantProblem(t, w.lookup(t, key), 409, "in_progress")
		g.oms.open(symbol)
		first := <-placed
		if first.status != 201 {
			t.Fatalf("the gated order = %d %s, want 201", first.status, first.body)
		}
		if got := w.lookup(t, key); got.status != 200 || got.body != first.body {
			t.Fatalf("lookup of the receipt = %d %s", got.status, got.body)
		}
		wantProblem(t, w.lookup(t, newKey(t)), 404, "not_found")
		// Outcome unknown and rejected are checked after their own failures
		// in TestUnknownOutcomeIsRetriable and TestRejectionIsFinal.
	})
}

// TestClientGoneStillStoresTheOrder lets the client disconnect while the
// gateway holds the call. test/wrapped/entry.mjs cancels the request's
// pending work, as production does, unless the Worker handed it to
// waitUntil. The gateway's late answer must still be stored, and the
// client's retry replays it without a second gateway call.
func TestClientGoneStillStoresTheOrder(t *testing.T) {
	shareWorkers(t)
	forEachGatewayMode(t, func(t *testing.T, g *gatewayWorkers, w *target) {
		symbol, key := newSymbol(t), newKey(t)
		g.oms.script(symbol, gated)
		before := w.wrappedStats(t)
		// Not w.send: the entry's 499 stands for no answer, which the
		// contract does not describe.
		req, _ := http.NewRequest(http.MethodPost, w.URL()+"/orders", strings.NewReader(gatewayOrder(symbol)))
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-Test-Disconnect-After-Ms", "200")
		gone, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		gone.Body.Close()
		if gone.StatusCode != 499 {
			t.Fatalf("the disconnected request = %s, want the entry's 499 (the client left)", gone.Status)
		}
		g.oms.waitArrival(t, symbol)
		g.oms.open(symbol)
		deadline := time.Now().Add(15 * time.Second)
		var stored response
		for stored = w.lookup(t, key); stored.status != 200; stored = w.lookup(t, key) {
			if time.Now().After(deadline) {
				t.Fatalf("no receipt stored 15 s after the gateway answered: lookup = %d %s", stored.status, stored.body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		retry := w.post(t, key, gatewayOrder(symbol))
		if retry.status != 200 || retry.body != stored.body {
			t.Fatalf("the client's retry = %d %s, want the replay of %s", retry.status, retry.body, stored.body)
		}
		wantOneOrderID(t, g.oms, symbol, decodeReceipt(t, retry.body))
		if n := len(g.oms.orderIDs(symbol)); n != 1 {
			t.Fatalf("gateway calls = %d, want 1", n)
		}
		after := w.wrappedStats(t)
		if after.Disconnects != before.Disconnects+1 || after.CancelledRequests != before.CancelledRequests {
			t.Fatalf("disconnects %d → %d, cancelled requests %d → %d: want one disconnect whose work waitUntil kept",
				before.Disconnects, after.Disconnects, before.CancelledRequests, after.CancelledRequests)
		}
	})
}

// TestGatewayChaos fails storage calls and gateway calls at random
// together, and every fourth key's first gateway call for sure. Most
// clients retry each key until it has an outcome; every third gives up
// after its first answer, and the settler must finish its order. Every key
// whose order reached the gateway must end with one order id there and a
// receipt naming an order the OMS accepted, and the only failures clients
// see are the retriable ones.
func TestGatewayChaos(t *testing.T) {
	const keys, rate = 12, 0.2
	// A key given up on settles once the settler gets through. At these
	// rates a settle attempt costs a whole lease (60 s) now and then: a
	// client's or settler's release that failed twice, or a settler's
	// claim whose write failed after it landed (the message's retry finds
	// the key held, by a claim it cannot tell for its own, and waits out
	// the lease). Estimated from those rates, about half a lease is lost
	// per key: two leases' patience, once too short in CI, fails a run (four
	// given-up keys a mode) about one time in 20; four and a half minutes,
	// which five lost leases exceed, about one in 1,000. A key whose
	// chain of settle messages died still fails it.
	const givenUpPatience = 4*time.Minute + 30*time.Second
	// Mostly waiting, as TestFaultsNeverDuplicate: run beside it, each mode
	// at once, on a fake OMS and Workers of its own, whose failures would
	// break the tests that share theirs.
	requireWorker(t)
	t.Parallel()
	g := startOwnGateway(t)
	g.oms.setChaos(0.3)
	for _, w := range []*target{g.kv, g.ledger} {
		t.Run(w.mode, func(t *testing.T) {
			t.Parallel()
			before := w.wrappedStats(t)
			w.setFaultRate(t, rate)
			t.Cleanup(func() { w.setFaultRate(t, 0) })
			var wg sync.WaitGroup
			var mu sync.Mutex
			failures := map[string]int{}
			callsPerKey := map[int]int{}    // gateway calls a key needed → keys
			var settleTimes []time.Duration // how long each given-up key took to settle
			var symbols []string
			for k := range keys {
				wg.Add(1)
				go func() {
					defer wg.Done()
					symbol, key := fmt.Sprintf("%s-%d", newSymbol(t), k), fmt.Sprintf("%s-%d", newKey(t), k)
					if k%4 == 1 {
						g.oms.script(symbol, []step{failAfter, drop, hang}[k/4])
					}
					mu.Lock()
					symbols = append(symbols, symbol)
					mu.Unlock()
					giveUp := time.Now().Add(faultPatience)
					var receipts []response
					for try := 0; len(receipts) == 0; try++ {
						if k%3 == 0 && try == 1 {
							// This client gave up: only the settler can finish.
							if len(g.oms.orderIDs(symbol)) == 0 {
								return // the order never reached the gateway
							}
							since := time.Now()
							got, err := settled(t, w, key, givenUpPatience)
							mu.Lock()
							settleTimes = append(settleTimes, time.Since(since).Round(time.Second))
							mu.Unlock()
							if err != nil {
								t.Errorf("key %d, given up: %v; its log lines:\n%s", k, err, linesWith(w.Logs(), key))
								return
							}
							receipts = append(receipts, got)
							break
						}
						if time.Now().After(giveUp) {
							t.Errorf("key %d: no receipt in %v; its log lines:\n%s", k, faultPatience, linesWith(w.Logs(), key))
							return
						}
						got := w.post(t, key, gatewayOrder(symbol))
						switch got.status {
						case 200, 201:
							receipts = append(receipts, got)
						case 409, 503:
							var p problemBody
							json.Unmarshal([]byte(got.body), &p)
							mu.Lock()
							failures[fmt.Sprint(got.status, " ", p.Error)]++
							mu.Unlock()
							time.Sleep(faultRetryWait)
						default:
							t.Errorf("key %d: %d %s, want only receipts, 409 and 503", k, got.status, got.body)
							return
						}
					}
					r, err := parseReceipt(receipts[0].body)
					if err != nil {
						t.Errorf("key %d: %v", k, err)
						return
					}
					if !g.oms.accepted(r.OrderID) {
						t.Errorf("key %d: the receipt names %s, which the OMS never accepted", k, r.OrderID)
					}
					mu.Lock()
					callsPerKey[len(g.oms.orderIDs(symbol))]++
					mu.Unlock()
					for _, id := range g.oms.orderIDs(symbol) {
						if id != r.OrderID {
							t.Errorf("key %d: the gateway saw order ids %v, want only the receipt's %s", k, g.oms.orderIDs(symbol), r.OrderID)
							break
						}
					}
				}()
			}
			wg.Wait()
			s := w.wrappedStats(t)
			calls, faults := s.Calls-before.Calls, s.FaultsBefore+s.FaultsAfter-before.FaultsBefore-before.FaultsAfter
			gatewayFaults := 0
			for _, symbol := range symbols {
				gatewayFaults += g.oms.faults(symbol)
			}
			t.Logf("%s: %d keys, storage fault rate %v, gateway chaos 0.3: failures seen %v; %d storage calls, %d failed; %d gateway calls failed; keys by gateway calls (all with one order id): %v; given-up keys settled after %v",
				w.mode, keys, rate, failures, calls, faults, gatewayFaults, callsPerKey, settleTimes)
			if gatewayFaults == 0 || faults == 0 {
				t.Errorf("%d gateway faults and %d storage faults: the run needs both kinds to show anything", gatewayFaults, faults)
			}
		})
	}
}

// linesWith returns the lines of logs that contain s.
func linesWith(logs, s string) string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestServiceBindingWinsOverURL serves a gateway Worker (test/omsbinding)
// bound to the edge-orders Worker as the service OMS, with OMS_URL set
// too: the order must go through the binding, carrying the token, and
// the receipt name the order the gateway saw.
func TestServiceBindingWinsOverURL(t *testing.T) {
	g := startGateway(t)
	t.Parallel() // Workers of its own
	registry := filepath.Join(t.TempDir(), "registry")
	startWorker(t, "reference", wranglerdev.Options{Config: "test/omsbinding/gateway.toml", Registry: registry,
		Vars: map[string]string{"UPSTREAM": g.oms.URL}})
	w := startWorker(t, "kv", wranglerdev.Options{Config: "test/omsbinding/wrangler.toml", Registry: registry,
		Vars: map[string]string{"OMS_URL": g.oms.URL + "/direct-calls-are-wrong", "OMS_TOKEN": omsToken}})
	symbol, key := newSymbol(t), newKey(t)
	// A binding to a Worker that wrangler dev has only just connected can
	// fail a first call under load (HTTP 500 from the dev registry): an
	// unknown outcome, which the client retries under the same key.
	got := w.post(t, key, gatewayOrder(symbol))
	for try := 1; got.status == 503 && try < 5; try++ {
		t.Logf("try %d: %d %s; retrying under the same key", try, got.status, got.body)
		time.Sleep(time.Second)
		got = w.post(t, key, gatewayOrder(symbol))
	}
	if got.status != 201 {
		t.Fatalf("order through the binding = %d %s, want 201", got.status, got.body)
	}
	wantOneOrderID(t, g.oms, symbol, decodeReceipt(t, got.body))
	if calls, via := len(g.oms.orderIDs(symbol)), g.oms.viaBinding(symbol); calls == 0 || via != calls {
		t.Fatalf("%d gateway calls, %d through the binding; want every call through it", calls, via)
	}
}
