//go:build js && wasm

package kv_test

import (
	"testing"

	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/workers"
)

// TestStoreAdminConformanceInWorkerd runs the operator's checks against
// KV mode's store over the real namespace: its list and its metadata.
func TestStoreAdminConformanceInWorkerd(t *testing.T) {
	ns, ok := workers.Globals().KV("ORDERS")
	if !ok {
		t.Skip("no KV namespace: run through test/conformance in wrangler dev")
	}
	storetest.RunAdmin(t, kv.NewStore(kv.NewBinding(ns), nil), "store-admin:", storetest.Options{Short: kv.MinTTL})
}
