package kv_test

import (
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/kv"
)

// TestStoreAdminConformance runs the operator's checks against KV mode's
// store over MemoryNamespace, which lists as KV does.
func TestStoreAdminConformance(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := kv.NewMemoryNamespace()
	mem.Now = clock
	storetest.RunAdmin(t, kv.NewStore(mem, clock), "memory:", storetest.Options{
		Short:   kv.MinTTL,
		Now:     clock,
		Advance: func(d time.Duration) { now = now.Add(d) },
	})
}
