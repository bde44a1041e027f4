//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
	"github.com/edge-orders/edge-orders/metrics"
)

// dataPoint is a point as writeDataPoint got it (test/wrapped records
// them: wrangler dev drops them).
type dataPoint struct {
	Indexes []string  `json:"indexes"`
	Blobs   []string  `json:"blobs"`
	Doubles []float64 `json:"doubles"`
}

// field is the point's value of the double called name in docs/metrics.md
// (metrics.Columns).
func (p dataPoint) field(t *testing.T, name string) float64 {
	t.Helper()
	i := metrics.DoubleIndex(name)
	switch {
	case i < 0:
		t.Fatalf("no double is called %s", name)
	case i >= len(p.Doubles):
		t.Fatalf("point %+v has no %s", p, name)
	}
	return p.Doubles[i]
}

// points reads the data points the Worker wrote since recording began.
func (w *target) points(t *testing.T) []dataPoint {
	t.Helper()
	resp, err := httpClient.Get(w.URL() + "/__wrapped/points")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var points []dataPoint
	if err := json.NewDecoder(resp.Body).Decode(&points); err != nil {
		t.Fatal(err)
	}
	return points
}

// TestDataPointsOfANewOrderAReplayAndASettledKey runs, in each mode, a
// new order and its replay a second later, and an order whose OMS answer
// is lost, which the settler settles (the settle queue, or the Durable
// Object's alarm), and its client's retry; then reads back every data
// point the Worker wrote (wrangler dev drops them; test/wrapped records
// them). Each is exact but for its times, which are bounded: the client,
// outcome, mode, status and event; the storage round trips (KV: a key's
// receipt and claim read in one, the claim, the receipt or the key left
// open; the ledger: its claim and its commit or release) and the
// attempts; a replay's time since its order was accepted, at least the
// second waited; the settled key's time from its order's acceptance, at
// least the settler's first backoff. Every lookup the test polls with
// writes its point too.
func TestDataPointsOfANewOrderAReplayAndASettledKey(t *testing.T) {
	requireWorker(t)
	t.Parallel()
	oms, err := startFakeOMS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oms.stop)
	const client, token = "metrics-desk", "metrics-desk-token-0123456789"
	env := filepath.Join(t.TempDir(), "metrics.vars")
	if err := os.WriteFile(env, []byte("API_TOKENS="+client+":"+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"OMS_URL": oms.URL, "OMS_TOKEN": omsToken, "OMS_TIMEOUT_MS": fmt.Sprint(omsTimeout.Milliseconds())}
	for _, c := range []struct {
		mode string
		// the storage round trips of a new order before its answer (its
		// commit follows the response) and of one whose answer is lost,
		// of the settle attempt, and of the first lookup that
		// finds the settled receipt: none where the settler ran in the
		// Worker's own instance and left the receipt in its memory (the
		// queue's consumer), one where it ran in another (the object's
		// alarm). The client's retry then finds it in memory.
		placed, lost, settle, found int
	}{
		{"kv", 2, 3, 3, 0},
		{"ledger", 1, 2, 2, 1},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			w := startWorker(t, c.mode, wrappedOptions(wranglerdev.Options{Vars: vars, EnvFile: env}))
			w.setting(t, `{"recordPoints": true}`)
			send := func(method, key, body string) response {
				return w.send(t, method, body, "Idempotency-Key", key, "Content-Type", "application/json", "Authorization", "Bearer "+token)
			}
			symbol, key := newSymbol(t), newKey(t)
			wantStatus(t, "a new order", send("POST", key, gatewayOrder(symbol)), 201)
			const waited = 1100 * time.Millisecond
			time.Sleep(waited)
			wantStatus(t, "its replay", send("POST", key, gatewayOrder(symbol)), 200)

			lost, lostKey := symbol+"-lost", key+"-lost"
			oms.script(lost, drop)
			wantUnknown(t, send("POST", lostKey, gatewayOrder(lost)))
			lookups := map[int]int{} // status → lookups answered with it
			for deadline := time.Now().Add(settleWithin); ; time.Sleep(100 * time.Millisecond) {
				got := send("GET", lostKey, "")
				lookups[got.status]++
				if got.status == 200 {
					break
				}
				// 409 while the settler's claim holds the key.
				if (got.status != 503 && got.status != 409) || time.Now().After(deadline) {
					t.Fatalf("lookup of the lost order's key = %d %s, want 503 (or 409) until it is settled, then 200", got.status, got.body)
				}
			}
			wantStatus(t, "the client's retry", send("POST", lostKey, gatewayOrder(lost)), 200)

			var requests, settles, polls []dataPoint
			for _, p := range w.points(t) {
				if !slices.Equal(p.Indexes, []string{client}) {
					t.Fatalf("point %+v, want every point indexed by the client %s", p, client)
				}
				switch {
				case len(p.Blobs) == 4 && p.Blobs[3] == string(metrics.Settle):
					settles = append(settles, p)
				case len(p.Blobs) == 4 && p.Blobs[3] == string(metrics.Lookup):
					polls = append(polls, p)
				default:
					requests = append(requests, p)
				}
			}
			want := func(what string, p dataPoint, outcome metrics.Outcome, status string, event metrics.Event, storage, attempts int) {
				t.Helper()
				if blobs := []string{string(outcome), c.mode, status, string(event)}; !slices.Equal(p.Blobs, blobs) {
					t.Errorf("%s: blobs %q, want %q", what, p.Blobs, blobs)
				}
				if got := p.field(t, "storage_calls"); got != float64(storage) {
					t.Errorf("%s: %v storage round trips, want %d", what, got, storage)
				}
				if got := p.field(t, "attempts"); got != float64(attempts) {
					t.Errorf("%s: %v attempts, want %d", what, got, attempts)
				}
				ms, gateway := p.field(t, "ms"), p.field(t, "gateway_ms")
				if gateway < 0 || gateway > float64(omsTimeout.Milliseconds()) || ms < gateway || ms > float64(settleWithin.Milliseconds()) {
					t.Errorf("%s: %v ms, %v of them at the OMS; want 0 <= OMS time <= time, within bounds", what, ms, gateway)
				}
			}
			within := func(what string, got float64, from, to time.Duration) {
				t.Helper()
				if got < float64(from.Milliseconds()) || got > float64(to.Milliseconds()) {
					t.Errorf("%s = %v ms, want %v to %v", what, got, from, to)
				}
			}
			if len(requests) != 4 {
				t.Fatalf("points of the four orders and retries: %+v, want 4", requests)
			}
			want("the new order", requests[0], metrics.New, "201", metrics.Submit, c.placed, 0)
			within("the new order's time since accepted", requests[0].field(t, "since_accepted_ms"), 0, 0)
			want("its replay", requests[1], metrics.Replay, "200", metrics.Submit, 0, 0)
			within("its replay's time since accepted (duplicate detection)", requests[1].field(t, "since_accepted_ms"), waited-100*time.Millisecond, waited+30*time.Second)
			want("the order whose answer was lost", requests[2], metrics.Unknown, "503", metrics.Submit, c.lost, 1)
			want("the client's retry of the settled key", requests[3], metrics.Replay, "200", metrics.Submit, 0, 0)
			within("the retry's time since accepted", requests[3].field(t, "since_accepted_ms"), intake.FirstSettleDelay, settleWithin+30*time.Second)

			if len(settles) != 1 {
				t.Fatalf("settle attempts' points %+v, want the one that settled the key", settles)
			}
			want("the settle attempt", settles[0], metrics.Settled, "", metrics.Settle, c.settle, 1)
			within("the settled key's time from acceptance", settles[0].field(t, "settled_after_ms"), intake.FirstSettleDelay, settleWithin)
			within("the settle attempt's time since accepted", settles[0].field(t, "since_accepted_ms"), 0, 0)

			if n := lookups[503] + lookups[409] + lookups[200]; len(polls) != n {
				t.Errorf("%d lookup points for %d lookups", len(polls), n)
			}
			for i, p := range polls {
				what := fmt.Sprintf("lookup %d", i+1)
				// Before the settling, one read: the receipt and the claim
				// at once, or the row.
				switch {
				case i == len(polls)-1:
					want(what+", the settled receipt", p, metrics.Replay, "200", metrics.Lookup, c.found, 0)
				case len(p.Blobs) > 2 && p.Blobs[2] == "409":
					want(what+", while the settler holds the key", p, metrics.InProgress, "409", metrics.Lookup, 1, 0)
				default:
					want(what+", before the settling", p, metrics.Unknown, "503", metrics.Lookup, 1, 1)
				}
			}
		})
	}
}
