//go:build js && wasm

package kv_test

import (
	"context"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/workers"
)

// TestNamespaceConformance runs the store checks against a real KV namespace.
// It runs inside workerd (test/conformance), whose entry publishes the
// ORDERS binding as globalThis.ORDERS; elsewhere there is no namespace.
func TestNamespaceConformance(t *testing.T) {
	ns, ok := workers.GlobalBinding("ORDERS")
	if !ok {
		t.Skip("no KV namespace: run through test/conformance in wrangler dev")
	}
	kvtest.Run(t, kv.NewBinding(ns), "conformance:")
}

// TestStoreConformanceInWorkerd runs the checks every intake.Store passes
// against the reference's KV lifecycle over the real namespace. Time
// passes for real there and KV's shortest TTL is a minute, so the checks
// that let time pass run only over MemoryNamespace (store_test.go).
func TestStoreConformanceInWorkerd(t *testing.T) {
	ns, ok := workers.GlobalBinding("ORDERS")
	if !ok {
		t.Skip("no KV namespace: run through test/conformance in wrangler dev")
	}
	storetest.Run(t, kv.NewStore(kv.NewBinding(ns), nil), "store-conformance:", storetest.Options{Short: kv.MinTTL})
}

// TestNamespaceKVRefusesWhatStoresRefuse pins the KV facts the stores model, by
// calling the namespace directly: a TTL under a minute and a key over 512
// bytes are refused by KV itself, not only by this package's checks.
func TestNamespaceKVRefusesWhatStoresRefuse(t *testing.T) {
	ns, ok := workers.GlobalBinding("ORDERS")
	if !ok {
		t.Skip("no KV namespace: run through test/conformance in wrangler dev")
	}
	// The bridge's own put, below the Binding's checks: key, value,
	// metadata, TTL in seconds.
	cases := []struct {
		name string
		put  workers.Frame
	}{
		{"TTL of 59 s", workers.Frame{}.Str("conformance:raw-ttl").Str("v").Str("").Str("59")},
		{"513-byte key", workers.Frame{}.Str("conformance:" + strings.Repeat("k", kv.MaxKeyBytes+1-len("conformance:"))).Str("v").Str("").Str("")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := workers.Call(context.Background(), "kvPut", c.put, ns); err == nil {
				t.Fatalf("KV accepted a put with %s; want it refused", c.name)
			}
		})
	}
}
