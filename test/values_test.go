//go:build !js

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/wranglerdev"
)

// TestBridgeReleasesEveryValue serves every kind of request, many times
// over, and counts at its source, wasm_exec.js's table, the JavaScript
// values the Go instance holds: under TinyGo, whose finalizers (0.40) never
// run, the bridge must give back every value a request took (see
// workers.Release), or the table grows with each request until the isolate
// dies. The rounds go through the OMS gateway and, in ledger mode, the
// Durable Object, so every kind of crossing is counted. Standard Go frees
// its values through its collector, at times of its choosing: there the
// test only reports, and make soak measures.
func TestBridgeReleasesEveryValue(t *testing.T) {
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
			round := func(t *testing.T, n int) {
				key := fmt.Sprintf("%s-%d", newKey(t), n)
				wantStatus(t, "a new order", w.post(t, key, order), 201)
				wantStatus(t, "its replay", w.post(t, key, order), 200)
				wantStatus(t, "its lookup", w.lookup(t, key), 200)
				wantStatus(t, "an invalid order", w.post(t, key+"-bad", `{"symbol":"MSFT","side":"hold","quantity":1}`), 422)
				wantStatus(t, "a streamed order", w.postStreamed(t, key+"-streamed", order), 201)
				oms.script(symbol, reject)
				wantStatus(t, "a rejected order", w.post(t, key+"-rejected", order), 422)
			}
			const warmRounds, rounds = 10, 80
			for n := range warmRounds {
				round(t, n)
			}
			before := w.settledStats(t)
			for n := range rounds {
				round(t, warmRounds+n)
			}
			after := w.settledStats(t)
			grown := after.GoValues - before.GoValues
			t.Logf("%s build, %s mode: the values Go holds went from %d to %d over %d requests; linear memory %d → %d bytes",
				after.Compiler, mode, before.GoValues, after.GoValues, rounds*6, before.MemoryBytes, after.MemoryBytes)
			if after.Compiler != "tinygo" {
				return
			}
			// One value kept by one request in ten would be 48.
			if grown > 16 {
				t.Errorf("the JavaScript values Go holds grew by %d over %d requests: the bridge leaks", grown, rounds*6)
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
	req, err := http.NewRequest(http.MethodPost, w.URL()+"/orders", io.MultiReader(strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
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
		if now.GoValues == last.GoValues {
			return now
		}
		last = now
	}
	return last
}
