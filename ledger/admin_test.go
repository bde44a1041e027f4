package ledger_test

import (
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake/storetest"
)

// TestMemoryAdminConformance runs the operator's checks against the
// in-memory ledger: its one object holds every client's rows.
func TestMemoryAdminConformance(t *testing.T) {
	m, c := newMemory()
	storetest.RunAdmin(t, m, "memory:", storetest.Options{Fenced: true, Atomic: true, Short: time.Second, Now: c.Now, Advance: c.Advance})
}
