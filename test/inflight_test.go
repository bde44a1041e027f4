//go:build !js

package e2e

import (
	"encoding/json"
	"testing"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// startWrapped serves the Worker in mode through test/wrapped/entry.mjs,
// whose bindings delay or fail calls as vars say.
func startWrapped(t *testing.T, mode string, vars map[string]string) *target {
	t.Helper()
	return startWorker(t, mode, wrappedOptions(wranglerdev.Options{Vars: vars}))
}

// wrappedOptions serves opts's Worker through test/wrapped/entry.mjs.
func wrappedOptions(opts wranglerdev.Options) wranglerdev.Options {
	opts.Script = "test/wrapped/entry.mjs"
	opts.CompatibilityFlags = append(opts.CompatibilityFlags, "nodejs_als")
	return opts
}

// TestInFlightDuplicate holds a key in flight for 3 s, by slowing the
// storage writes of its first request, and sends two duplicates: one as
// soon as the first has reached storage, which gives up after its 2 s wait
// (409 with Retry-After), and one once the first has started its last
// write, 1.5 s from its end, which sees it finish within its wait (the
// replay). The duplicates are gated on the calls the first has started,
// not on sleeps.
func TestInFlightDuplicate(t *testing.T) {
	requireWorker(t)
	for _, c := range []struct {
		mode   string
		delays map[string]int
		// lastWrite is how many binding calls the first request has
		// started once it has started its last write.
		lastWrite int
	}{
		{"kv", map[string]int{"ORDERS.put": 1500}, 4},                              // 2 reads, the claim, the receipt
		{"ledger", map[string]int{"LEDGER.claim": 1500, "LEDGER.commit": 1500}, 2}, // the claim, the commit
	} {
		t.Run(c.mode, func(t *testing.T) {
			delays, _ := json.Marshal(c.delays)
			w := startWrapped(t, c.mode, map[string]string{"WRAP_DELAYS": string(delays)})
			key := newKey(t)
			before := w.wrappedStats(t)
			firstDone := make(chan response, 1)
			go func() { firstDone <- w.post(t, key, validOrder) }()
			w.waitEntered(t, before, 1)
			gaveUpDone := make(chan response, 1)
			go func() { gaveUpDone <- w.post(t, key, validOrder) }()
			w.waitEntered(t, before, c.lastWrite)
			waited := w.post(t, key, validOrder)
			first, gaveUp := <-firstDone, <-gaveUpDone
			if first.status != 201 {
				t.Fatalf("first = %d %s, want 201", first.status, first.body)
			}
			p := wantProblem(t, gaveUp, 409, "in_progress")
			if p.RetryAfter == nil || *p.RetryAfter != 60 || gaveUp.header.Get("Retry-After") != "60" {
				t.Fatalf("409 = %s Retry-After %q, want retryAfter 60 in body and header", gaveUp.body, gaveUp.header.Get("Retry-After"))
			}
			if waited.status != 200 || waited.body != first.body {
				t.Fatalf("the duplicate that waited = %d %s, want the replay of %s", waited.status, waited.body, first.body)
			}
		})
	}
}
