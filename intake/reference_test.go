package intake_test

// Receipts the TypeScript reference stored in a shared KV namespace, a
// bare JSON value without metadata, replay through the Service as they are.

import (
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
)

// TestKVLifecycleReplaysReferenceReceipt checks that receipts the TypeScript
// Worker stored in a shared namespace (a bare JSON value, no metadata) are
// replayed as they are, byte for byte.
func TestKVLifecycleReplaysReferenceReceipt(t *testing.T) {
	tests := []struct {
		name        string
		stored      string
		wantOrderID string
	}{
		{"reference receipt", `{"orderId":"0b7e2c57-8f53-4c39-9f5e-0d2d3c0b2a61","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`, "0b7e2c57-8f53-4c39-9f5e-0d2d3c0b2a61"},
		{"spacing and escapes kept", "{ \"orderId\" : \"x\",\n \"symbol\":\"\\u00e9<&>\u2028\" }", "x"},
		{"any JSON value", `[1,2.50,"three"]`, ""},
		{"not JSON at all", `<html>`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, intake.Options{})
			h.put(t, "result:ts", kv.Entry{Value: tc.stored}, 24*time.Hour)
			out, err := h.submit("ts", validBody)
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if got, want := string(out.Receipt), tc.stored; got != want || !out.Replayed {
				t.Errorf("Submit = %q replayed %v, want %q replayed true", got, out.Replayed, want)
			}
			if got, want := out.OrderID, tc.wantOrderID; got != want {
				t.Errorf("OrderID = %q, want %q", got, want)
			}
			h.wantNoWrites(t, "replay", 0)
		})
	}
}

// TestKVLifecycleReferenceReceiptIgnoresBody checks that receipts stored without
// a fingerprint, as the TypeScript Worker stores them, replay as they did.
func TestKVLifecycleReferenceReceiptIgnoresBody(t *testing.T) {
	h := newHarness(t, intake.Options{})
	stored := `{"orderId":"r1","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`
	h.put(t, "result:k", kv.Entry{Value: stored}, 0)
	for _, body := range []string{validBody, `{"symbol":"MSFT","side":"sell","quantity":1}`, `not json`} {
		out, err := h.submit("k", body)
		if err != nil || !out.Replayed || string(out.Receipt) != stored || out.OrderID != "r1" {
			t.Errorf("body %s: got %s replayed %v id %q, %v; want the stored receipt", body, out.Receipt, out.Replayed, out.OrderID, err)
		}
	}
}
