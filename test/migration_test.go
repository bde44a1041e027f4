//go:build !js

package e2e

import (
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// TestMigrationFromKV switches a namespace from KV mode to the ledger, as
// docs/operating.md's Migration section does: the ledger Worker, with
// KV_FALLBACK_UNTIL set and ORDERS bound, replays every receipt stored
// before the switch (by the Go Worker or the TypeScript one) and places no
// second order; new orders go to the ledger only.
func TestMigrationFromKV(t *testing.T) {
	requireWorker(t)
	t.Parallel()
	before := kvWorker
	// The ledger Worker reads the shared KV Worker's state: it starts
	// before this test holds that Worker, and reads what is written after.
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	after := startWorker(t, "ledger", wranglerdev.Options{StateDir: before.state, Vars: map[string]string{"KV_FALLBACK_UNTIL": until}})
	holdSharedWorkers(t)
	goKey := newKey(t) + "-go"
	placed := before.post(t, goKey, validOrder)
	if placed.status != 201 {
		t.Fatalf("KV mode = %d %s, want 201", placed.status, placed.body)
	}
	tsKey := newKey(t) + "-ts"
	tsReceipt := `{"orderId":"0b4f4c2e-3f0e-4b8e-9d47-0d7a1f7c2b11","status":"accepted","symbol":"MSFT","side":"buy","quantity":100,"acceptedAt":"2026-01-02T03:04:05.678Z"}`
	before.kvPut(t, "result:"+tsKey, tsReceipt)

	for _, c := range []struct{ name, key, receipt string }{{"Go", goKey, placed.body}, {"TypeScript", tsKey, tsReceipt}} {
		t.Run("a receipt the "+c.name+" Worker stored in KV replays", func(t *testing.T) {
			if got := after.lookup(t, c.key); got.status != 200 || got.body != c.receipt {
				t.Fatalf("lookup = %d %s, want 200 %s", got.status, got.body, c.receipt)
			}
			for i := 0; i < 2; i++ { // the first copies it into the ledger, the second finds it there
				if got := after.post(t, c.key, validOrder); got.status != 200 || got.body != c.receipt {
					t.Fatalf("retry %d = %d %s, want the replay of %s", i+1, got.status, got.body, c.receipt)
				}
			}
		})
	}

	t.Run("a different order under a migrated key is refused", func(t *testing.T) {
		wantProblem(t, after.post(t, goKey, `{"symbol":"AAPL","side":"buy","quantity":1}`), 422, "idempotency_key_reused")
	})

	t.Run("a new order goes to the ledger, not to KV", func(t *testing.T) {
		key := newKey(t)
		if got := after.post(t, key, validOrder); got.status != 201 {
			t.Fatalf("new key = %d %s, want 201", got.status, got.body)
		}
		if keys := after.kvList(t, "result:"+key); len(keys) != 0 || len(after.kvList(t, "pending:"+key)) != 0 {
			t.Fatalf("the ledger wrote to KV: %v", keys)
		}
	})
}
