//go:build !js

package e2e

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// TestBridgeKeepsNothingPastItsRequest serves every kind of request, many
// times over, and counts at their sources what the Go instance holds of
// JavaScript:
//   - the objects bridge.mjs keeps for Go (a request, its environment, a
//     binding, a task): JavaScript owns every object and names it to Go by
//     number, so one kept past its request is a real leak under either
//     compiler, and the count must come back exactly to where it was;
//   - wasm_exec.js's table of values Go holds, counted after a collection
//     (under standard Go a value Go dropped keeps its slot until the
//     collector finalizes it; TinyGo 0.40 finalizes nothing): Go takes
//     only numbers and bytes from the bridge, so it must stay flat.
//
// The rounds go through the OMS gateway (receipts, rejections, an unknown
// outcome that the settler settles) and, in ledger mode, the Durable
// Object and its alarm, so every kind of crossing is counted.
func TestBridgeKeepsNothingPastItsRequest(t *testing.T) {
	requireWorker(t)
	t.Parallel() // its own Workers: waits beside the others
	oms, err := startFakeOMS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oms.stop) // not defer: the subtests run after this function returns
	vars := map[string]string{"OMS_URL": oms.URL, "OMS_TOKEN": omsToken, "OMS_TIMEOUT_MS": "5000"}
	for _, mode := range []string{"kv", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			w := startWorker(t, mode, wrappedOptions(wranglerdev.Options{Vars: vars}))
			symbol := map[string]string{"kv": "RELKV", "ledger": "RELDO"}[mode]
			order := fmt.Sprintf(`{"symbol":%q,"side":"buy","quantity":3}`, symbol)
			requests := 0
			round := func(t *testing.T, n int) {
				key := fmt.Sprintf("%s-%d", newKey(t), n)
				wantStatus(t, "a new order", w.post(t, key, order), 201)
				wantStatus(t, "its replay", w.post(t, key, order), 200)
				wantStatus(t, "its lookup", w.lookup(t, key), 200)
				wantStatus(t, "an invalid order", w.post(t, key+"-bad", `{"symbol":"MSFT","side":"hold","quantity":1}`), 422)
				wantStatus(t, "a streamed order", w.postStreamed(t, key+"-streamed", order), 201)
				oms.script(symbol, reject)
				wantStatus(t, "a rejected order", w.post(t, key+"-rejected", order), 422)
				requests += 6
				if n%10 == 0 {
					// An unknown outcome, settled by the settler through the
					// queue (KV) or the object's alarm (ledger).
					oms.script(symbol, failBefore)
					wantStatus(t, "an unknown outcome", w.post(t, key+"-unknown", order), 503)
					wantStatus(t, "its settled lookup", waitSettled(t, w, key+"-unknown", settleWithin), 200)
					requests += 2
				}
			}
			const warmRounds, rounds = 10, 30
			for n := range warmRounds {
				round(t, n)
			}
			requests = 0
			before := w.settledStats(t)
			for n := range rounds {
				round(t, warmRounds+n)
			}
			after := w.settledStats(t)
			t.Logf("%s build, %s mode, over %d requests: objects the bridge keeps for Go %d → %d; values in wasm_exec.js's table %d → %d; linear memory %d → %d bytes",
				after.Compiler, mode, requests, before.HeldObjects, after.HeldObjects, before.GoValues, after.GoValues, before.MemoryBytes, after.MemoryBytes)
			if after.HeldObjects != before.HeldObjects {
				t.Errorf("the objects bridge.mjs keeps for Go went from %d to %d over %d requests: something is kept past its request",
					before.HeldObjects, after.HeldObjects, requests)
			}
			// A value kept by one request in ten would be 18.
			if grown := after.GoValues - before.GoValues; grown > 8 {
				t.Errorf("the JavaScript values Go holds grew by %d over %d requests: the bridge leaks", grown, requests)
			}
		})
	}
}

// TestBridgeKeepsNothingForRefusedOrders counts, as
// TestBridgeKeepsNothingPastItsRequest does, over requests the rate limit
// refuses (test/ratelimit: 3 new orders a minute), with replays and
// lookups between them, in both modes.
func TestBridgeKeepsNothingForRefusedOrders(t *testing.T) {
	requireWorker(t)
	t.Parallel()
	for _, mode := range []string{"kv", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			w := startWorker(t, mode, wrappedOptions(wranglerdev.Options{Config: filepath.Join("test", "ratelimit", "wrangler.toml")}))
			base := newKey(t)
			waitForAFreshMinute()
			for i := range 3 {
				w.post(t, fmt.Sprint(base, i), validOrder) // the budget
			}
			refused := func(n int) {
				wantStatus(t, "a new order over the budget", w.post(t, fmt.Sprint(base, "-over-", n), validOrder), 429)
				w.post(t, fmt.Sprint(base, 0), validOrder) // a replay, or a 429 if its order was refused too
				w.lookup(t, fmt.Sprint(base, 0))
			}
			for n := range 5 {
				refused(n)
			}
			before := w.settledStats(t)
			const rounds = 25
			for n := range rounds {
				refused(10 + n)
			}
			after := w.settledStats(t)
			t.Logf("%s mode, over %d requests: objects the bridge keeps for Go %d → %d; values in wasm_exec.js's table %d → %d",
				mode, 3*rounds, before.HeldObjects, after.HeldObjects, before.GoValues, after.GoValues)
			if after.HeldObjects != before.HeldObjects {
				t.Errorf("the objects bridge.mjs keeps for Go went from %d to %d over %d requests", before.HeldObjects, after.HeldObjects, 3*rounds)
			}
			if grown := after.GoValues - before.GoValues; grown > 8 {
				t.Errorf("the JavaScript values Go holds grew by %d over %d requests", grown, 3*rounds)
			}
		})
	}
}

// wantStatus fails t unless got has status want.
func wantStatus(t *testing.T, what string, got response, want int) {
	t.Helper()
	if got.status != want {
		t.Fatalf("%s: status %d, want %d: %s", what, got.status, want, got.body)
	}
}

// postStreamed submits body under key with no Content-Length: the Worker
// reads it as a stream.
func (w *target) postStreamed(t *testing.T, key, body string) response {
	t.Helper()
	return w.postFrom(t, key, io.MultiReader(strings.NewReader(body)))
}

// settledStats reads the wrapped entry's stats once work after the last
// response (a claim released under waitUntil) has settled: two readings
// 200 ms apart that agree, within 10 s.
func (w *target) settledStats(t *testing.T) wrappedStats {
	t.Helper()
	last := w.wrappedStats(t)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		now := w.wrappedStats(t)
		if now.GoValues == last.GoValues && now.HeldObjects == last.HeldObjects {
			return now
		}
		last = now
	}
	return last
}

// TestCrossingsPerRequest counts the calls between Go and JavaScript that
// each kind of request makes (test/wrapped counts them at their source:
// the bridge's _enter, or wasm_exec.js's _resume, for every
// call into Go, its syscall/js imports for every call out, and the calls
// into bridge.mjs by name), and holds them to the bridge's design: one
// call in with the request, one per binding call as it settles, and
// nothing more. With METRICS bound, as wrangler.toml binds it, each
// request writes its data point in one synchronous bridge call out
// (writeDataPoint: two syscall/js imports, its frame's copy and the call)
// and no call back in: the calls into Go stay what they were without it.
func TestCrossingsPerRequest(t *testing.T) {
	requireWorker(t)
	// Workers of its own: on the shared ones, another test's key that the
	// settler takes up (a ledger alarm, a queue message) would be counted.
	t.Parallel()
	g := startOwnGateway(t)
	for _, c := range []struct {
		mode string
		w    *target
		// newOrderCalls are the calls into Go a new order makes besides its
		// own: KV's reads of the body, the lookup, the claim, the gateway,
		// the receipt and the claim's release (after the response) as each
		// settles; the ledger's reads of the body, its claim, the gateway
		// and its commit, and, since under wrangler dev the object runs in
		// the same Go instance, the object's claim and commit methods and
		// its constructor when the key's object is new.
		newOrderCalls int
		// newOrderOut, replayOut and lookupOut bound the calls out of Go,
		// as the standard build made them once calls into Go became wasm
		// exports (wasm_exec_entry.js): the bridge's calls, the copies of
		// their frames, and one read of syscall/js's pending event each
		// time the scheduler resumes. The ledger's new order counts the
		// object's SQL, three calls out a statement, its schema's
		// included when the key's object is new (the listing's partial
		// index, entries_open, is one more).
		newOrderOut, replayOut, lookupOut int
	}{
		{"kv", g.kv, 6, 45, 11, 7},
		{"ledger", g.ledger, 4 + 2 + 1, 128, 11, 7},
	} {
		t.Run(c.mode, func(t *testing.T) {
			symbol, key := newSymbol(t), newKey(t)
			measure := func(what string, send func() response, want, wantOut int) {
				t.Helper()
				before := c.w.settledStats(t)
				send()
				after := c.w.settledStats(t)
				into, out := after.IntoGo-before.IntoGo, after.OutOfGo-before.OutOfGo
				points := after.BridgeCalls["writeDataPoint"] - before.BridgeCalls["writeDataPoint"]
				t.Logf("%s, %s mode: %d calls into Go, %d out of Go, of which %d data point", what, c.mode, into, out, points)
				if into > want {
					t.Errorf("%s: %d calls into Go, want at most %d (one for the request, one per binding call and object method)", what, into, want)
				}
				if out > wantOut {
					t.Errorf("%s: %d calls out of Go, want at most %d", what, out, wantOut)
				}
				if points != 1 || after.DataPoints-before.DataPoints != 1 {
					t.Errorf("%s: %d writeDataPoint calls out of Go, %d points written; want the request's one, in one call", what, points, after.DataPoints-before.DataPoints)
				}
			}
			measure("a new order", func() response { return c.w.post(t, key, gatewayOrder(symbol)) }, 1+c.newOrderCalls, c.newOrderOut)
			// A replay on the same instance is answered from memory: only
			// its body is read.
			measure("a replay", func() response { return c.w.post(t, key, gatewayOrder(symbol)) }, 2, c.replayOut)
			measure("a lookup", func() response { return c.w.lookup(t, key) }, 2, c.lookupOut)
		})
	}
}
