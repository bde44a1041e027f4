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
// storage calls its first request makes before it answers, and sends two
// duplicates: one as soon as the first has reached storage, which gives up
// after its 2 s wait (409 with Retry-After), and one that sees the first
// answer within its wait (the replay), sent about 1.5 s before that
// answer: over KV, whose stand-in commits before it answers, once the
// first has started its last write; over the ledger, whose stand-in
// answers after its claim and commits after the response, once the first
// duplicate has given up. The duplicates are gated on the calls the first
// has started, or on each other, not on sleeps.
func TestInFlightDuplicate(t *testing.T) {
	requireWorker(t)
	for _, c := range []struct {
		mode   string
		delays map[string]int
		// lastWrite is how many binding calls the first request has
		// started once it has started its last write before its answer;
		// zero sends the second duplicate once the first has given up.
		lastWrite int
	}{
		{"kv", map[string]int{"ORDERS.put": 1500}, 4},       // 2 reads, the claim, the receipt
		{"ledger", map[string]int{"LEDGER.claim": 3000}, 0}, // the claim; the commit follows the answer
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
			var gaveUp response
			if c.lastWrite > 0 {
				w.waitEntered(t, before, c.lastWrite)
			} else {
				gaveUp = <-gaveUpDone
			}
			waited := w.post(t, key, validOrder)
			first := <-firstDone
			if c.lastWrite > 0 {
				gaveUp = <-gaveUpDone
			}
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
