//go:build !js

package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// TestRateLimit runs the Worker with a Rate Limiting binding of 3 new
// orders a minute (test/ratelimit), as wrangler dev simulates it: the
// fourth new order is a 429 with Retry-After, while replays and lookups of
// the orders placed go on working.
func TestRateLimit(t *testing.T) {
	requireWorker(t)
	t.Parallel() // its own Workers: waits beside the others (go test -parallel, make test)
	for _, mode := range []string{"kv", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // each mode its own Worker
			w := startWorker(t, mode, wranglerdev.Options{Config: filepath.Join("test", "ratelimit", "wrangler.toml")})
			waitForAFreshMinute()
			base := newKey(t)
			var first response
			for i := 0; i < 3; i++ {
				got := w.post(t, fmt.Sprint(base, i), validOrder)
				if got.status != 201 {
					t.Fatalf("order %d = %d %s, want 201", i+1, got.status, got.body)
				}
				if i == 0 {
					first = got
				}
			}
			over := w.post(t, fmt.Sprint(base, 3), validOrder)
			wantProblem(t, over, 429, "rate_limited")
			if over.header.Get("Retry-After") != "60" {
				t.Fatalf("Retry-After = %q, want 60", over.header.Get("Retry-After"))
			}
			for i := 0; i < 3; i++ {
				if got := w.post(t, fmt.Sprint(base, 0), validOrder); got.status != 200 || got.body != first.body {
					t.Fatalf("replay %d over the budget = %d %s, want 200 %s", i+1, got.status, got.body, first.body)
				}
			}
			if got := w.lookup(t, fmt.Sprint(base, 0)); got.status != 200 {
				t.Fatalf("lookup over the budget = %d %s, want 200", got.status, got.body)
			}
			wantProblem(t, w.lookup(t, fmt.Sprint(base, 3)), 404, "not_found")
		})
	}
}

// waitForAFreshMinute waits, if less than 30 s of the current minute are
// left, for the next one: the simulated rate limit counts in windows of a
// minute from the epoch, and a test that exhausts it must stay in one, or
// its last order meets a fresh budget.
func waitForAFreshMinute() {
	if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < 30*time.Second {
		time.Sleep(left + 500*time.Millisecond)
	}
}
