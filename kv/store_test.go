package kv_test

import (
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/kv"
)

// TestStoreConformance runs the checks every intake.Store passes against
// the reference's KV lifecycle over MemoryNamespace, on a clock the test moves. KV
// neither fences claims nor grants them atomically, and its shortest TTL
// is a minute.
func TestStoreConformance(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := kv.NewMemoryNamespace()
	mem.Now = clock
	storetest.Run(t, kv.NewStore(mem, clock), "memory:", storetest.Options{
		Short:   kv.MinTTL,
		Now:     clock,
		Advance: func(d time.Duration) { now = now.Add(d) },
	})
}
