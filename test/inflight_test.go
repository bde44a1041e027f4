//go:build !js

package e2e

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/wranglerdev"
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

// TestInFlightDuplicate holds a key in flight for about 3 s, by slowing
// the storage writes of its first request, and sends two duplicates: one
// that gives up waiting after the 2 s wait (409 with Retry-After), and one
// that sees the first finish within its wait (the replay).
func TestInFlightDuplicate(t *testing.T) {
	requireWorker(t)
	slow := map[string]map[string]int{
		"kv":     {"ORDERS.put": 1500}, // the claim and the receipt: 3 s
		"ledger": {"LEDGER.commit": 3000},
	}
	for _, mode := range []string{"kv", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			delays, _ := json.Marshal(slow[mode])
			w := startWrapped(t, mode, map[string]string{"WRAP_DELAYS": string(delays)})
			key := newKey(t)
			var first, gaveUp, waited response
			var wg sync.WaitGroup
			for _, c := range []struct {
				after time.Duration
				into  *response
			}{{0, &first}, {200 * time.Millisecond, &gaveUp}, {2 * time.Second, &waited}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(c.after)
					*c.into = w.post(t, key, validOrder)
				}()
			}
			wg.Wait()
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
