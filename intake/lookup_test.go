package intake_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// TestLookup checks Lookup over KV against every state a key can be in, and
// that it never writes.
func TestLookup(t *testing.T) {
	const reference = `{"orderId":"r1","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`
	tests := []struct {
		name  string
		setup func(t *testing.T, h *harness)
		key   intake.Key
		// faults fail storage calls during the Lookup.
		faults []kvtest.Fault
		// wantReceipt is the receipt replayed; "" means the error wantErr.
		wantReceipt string
		wantOrderID string
		wantErr     error
	}{
		{
			name: "stored receipt is replayed",
			setup: func(t *testing.T, h *harness) {
				h.put(t, "result:k", kv.Entry{Value: reference, Metadata: []byte(`{"fingerprint":"f"}`)}, time.Hour)
			},
			key:         key("k"),
			wantReceipt: reference,
			wantOrderID: "r1",
		},
		{
			name:        "reference receipt without metadata is replayed",
			setup:       func(t *testing.T, h *harness) { h.put(t, "result:k", kv.Entry{Value: reference}, 0) },
			key:         key("k"),
			wantReceipt: reference,
			wantOrderID: "r1",
		},
		{
			name:        "receipt that is not JSON is replayed without an order id",
			setup:       func(t *testing.T, h *harness) { h.put(t, "result:k", kv.Entry{Value: "<html>"}, 0) },
			key:         key("k"),
			wantReceipt: "<html>",
		},
		{
			name: "receipt wins over a claim",
			setup: func(t *testing.T, h *harness) {
				h.putClaim(t, "k")
				h.put(t, "result:k", kv.Entry{Value: reference}, 0)
			},
			key:         key("k"),
			wantReceipt: reference,
			wantOrderID: "r1",
		},
		{
			name:    "claimed key is in progress",
			setup:   func(t *testing.T, h *harness) { h.putClaim(t, "k") },
			key:     key("k"),
			wantErr: intake.ErrInProgress,
		},
		{
			name:    "free key is not found",
			setup:   func(*testing.T, *harness) {},
			key:     key("k"),
			wantErr: intake.ErrNotFound,
		},
		{
			name:    "another client's receipt is not found",
			setup:   func(t *testing.T, h *harness) { h.put(t, "result:alice:k", kv.Entry{Value: reference}, 0) },
			key:     intake.Key{Client: "bob", ID: "k"},
			wantErr: intake.ErrNotFound,
		},
		{
			name:    "the open Worker's receipt is not a client's",
			setup:   func(t *testing.T, h *harness) { h.put(t, "result:k", kv.Entry{Value: reference}, 0) },
			key:     intake.Key{Client: "alice", ID: "k"},
			wantErr: intake.ErrNotFound,
		},
		{
			name:        "a client's receipt is found under its key",
			setup:       func(t *testing.T, h *harness) { h.put(t, "result:alice:k", kv.Entry{Value: reference}, 0) },
			key:         intake.Key{Client: "alice", ID: "k"},
			wantReceipt: reference,
			wantOrderID: "r1",
		},
		{
			name:    "failed receipt read is unavailable",
			setup:   func(t *testing.T, h *harness) { h.put(t, "result:k", kv.Entry{Value: reference}, 0) },
			key:     key("k"),
			faults:  []kvtest.Fault{{Op: kvtest.OpGet, Prefix: "result:"}},
			wantErr: intake.ErrStorageUnavailable,
		},
		{
			name:    "failed claim read is unavailable",
			setup:   func(*testing.T, *harness) {},
			key:     key("k"),
			faults:  []kvtest.Fault{{Op: kvtest.OpGet, Prefix: "pending:"}},
			wantErr: intake.ErrStorageUnavailable,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, intake.Options{})
			tc.setup(t, h)
			entries := h.mem.Len()
			h.faulty.Set(tc.faults...)
			out, err := h.svc.Lookup(context.Background(), tc.key)
			if tc.wantReceipt == "" {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Lookup error = %v, want %v", err, tc.wantErr)
				}
				if out.Receipt != nil || out.OrderID != "" {
					t.Errorf("Lookup = %s / %q with an error, want nothing", out.Receipt, out.OrderID)
				}
				if errors.Is(err, intake.ErrStorageUnavailable) && !strings.Contains(err.Error(), "secret detail") {
					t.Errorf("ErrUnavailable error %q dropped the storage detail, want it kept for logs", err)
				}
			} else {
				if err != nil {
					t.Fatalf("Lookup: %v", err)
				}
				if got := string(out.Receipt); got != tc.wantReceipt || !out.Replayed {
					t.Errorf("Lookup = %s replayed %v, want %s replayed true", got, out.Replayed, tc.wantReceipt)
				}
				if out.OrderID != tc.wantOrderID {
					t.Errorf("OrderID = %q, want %q", out.OrderID, tc.wantOrderID)
				}
			}
			h.wantNoWrites(t, "Lookup", 0)
			if got := h.mem.Len(); got != entries {
				t.Errorf("Memory.Len() = %d after Lookup, want the %d entries before it", got, entries)
			}
		})
	}
}

// TestLookupAfterSubmit checks a Lookup replays exactly what Submit handed
// out, from this instance's memory and from the store as another instance
// finds it.
func TestLookupAfterSubmit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cached int
	}{
		{"from memory the receipt is replayed", 0},
		{"from the store the receipt is replayed", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, intake.Options{CachedReceipts: tc.cached})
			placed, err := h.submit("k", validBody)
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			before := len(h.rec.Writes())
			out, err := h.svc.Lookup(context.Background(), key("k"))
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if !out.Replayed || !bytes.Equal(out.Receipt, placed.Receipt) || out.OrderID != placed.OrderID {
				t.Errorf("Lookup = %s replayed %v id %q, want %s replayed true id %q", out.Receipt, out.Replayed, out.OrderID, placed.Receipt, placed.OrderID)
			}
			h.wantNoWrites(t, "Lookup", before)
		})
	}
}
