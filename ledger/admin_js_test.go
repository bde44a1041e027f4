//go:build js && wasm

package ledger_test

import (
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/ledger"
)

// TestClientAdminConformance runs the operator's checks against the real
// Ledger Durable Object in workerd, over 4 shards a client: a listing
// visits each of them.
func TestClientAdminConformance(t *testing.T) {
	storetest.RunAdmin(t, ledger.NewClient(ledgerNamespace(t), 4), "workerd-admin:", storetest.Options{Fenced: true, Atomic: true, Short: time.Second,
		Advance: func(d time.Duration) { time.Sleep(d) }})
}
