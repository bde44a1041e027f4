//go:build js && wasm

package kv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/workers"
)

// TestNamespaceConformance runs the store checks against a real KV namespace.
// It runs inside workerd (test/conformance), whose entry publishes the
// ORDERS binding as globalThis.ORDERS; elsewhere there is no namespace.
func TestNamespaceConformance(t *testing.T) {
	ns, ok := workers.Globals().KV("ORDERS")
	if !ok {
		t.Skip("no KV namespace: run through test/conformance in wrangler dev")
	}
	kvtest.Run(t, kv.NewBinding(ns), "conformance:")
	kvtest.RunLister(t, kv.NewBinding(ns), "conformance:")
}

// TestStoreConformanceInWorkerd runs the checks every intake.Store passes
// against the reference's KV lifecycle over the real namespace. Time
// passes for real there and KV's shortest TTL is a minute, so the checks
// that let time pass run only over MemoryNamespace (store_test.go).
func TestStoreConformanceInWorkerd(t *testing.T) {
	ns, ok := workers.Globals().KV("ORDERS")
	if !ok {
		t.Skip("no KV namespace: run through test/conformance in wrangler dev")
	}
	storetest.Run(t, kv.NewStore(kv.NewBinding(ns), nil), "store-conformance:", storetest.Options{Short: kv.MinTTL})
}

// TestNamespaceKVRefusesWhatStoresRefuse pins the KV facts the stores model, by
// calling the namespace directly: a TTL under a minute and a key over 512
// bytes are refused by KV itself, not only by this package's checks.
func TestNamespaceKVRefusesWhatStoresRefuse(t *testing.T) {
	ns, ok := workers.Globals().KV("ORDERS")
	if !ok {
		t.Skip("no KV namespace: run through test/conformance in wrangler dev")
	}
	// The binding's own put, below the Binding's checks.
	cases := []struct {
		name string
		key  string
		ttl  time.Duration
	}{
		{"TTL of 59 s", "conformance:raw-ttl", 59 * time.Second},
		{"513-byte key", "conformance:" + strings.Repeat("k", kv.MaxKeyBytes+1-len("conformance:")), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := ns.Put(context.Background(), c.key, "v", nil, c.ttl); err == nil {
				t.Fatalf("KV accepted a put with %s; want it refused", c.name)
			}
		})
	}
}
