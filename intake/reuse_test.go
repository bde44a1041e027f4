package intake_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

func TestSubmitStoresFingerprintInMetadata(t *testing.T) {
	h := newHarness(t, nil)
	out, err := h.submit("k", validBody)
	if err != nil {
		t.Fatal(err)
	}
	e, err := h.mem.Get(context.Background(), "result:k")
	if err != nil {
		t.Fatal(err)
	}
	o, _ := order.Parse([]byte(validBody))
	if got, want := string(e.Metadata), `{"fingerprint":"`+o.Fingerprint()+`"}`; got != want {
		t.Errorf("metadata = %s, want %s", got, want)
	}
	if e.Value != string(out.Receipt) {
		t.Errorf("result:k = %s, want exactly the receipt %s", e.Value, out.Receipt)
	}
}

func TestSubmitKeyReusedForAnotherOrder(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr error
	}{
		{"another symbol is refused", `{"symbol":"MSFT","side":"buy","quantity":10}`, intake.ErrKeyReused},
		{"another side is refused", `{"symbol":"AAPL","side":"sell","quantity":10}`, intake.ErrKeyReused},
		{"another quantity is refused", `{"symbol":"AAPL","side":"buy","quantity":11}`, intake.ErrKeyReused},
		{"an invalid body is an invalid order", `{"symbol":"AAPL"}`, order.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			first, err := h.submit("k", validBody)
			if err != nil {
				t.Fatal(err)
			}
			before := len(h.rec.writes())
			out, err := h.submit("k", tc.body)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Submit error = %v, want %v", err, tc.wantErr)
			}
			if out.Receipt != nil || out.OrderID != "" {
				t.Errorf("refused Submit revealed %s / %q", out.Receipt, out.OrderID)
			}
			if got := h.rec.writes()[before:]; len(got) != 0 {
				t.Errorf("refused Submit wrote %v", got)
			}
			again, err := h.submit("k", validBody)
			if err != nil || !again.Replayed || !bytes.Equal(again.Receipt, first.Receipt) {
				t.Errorf("the original order afterwards = %s replayed %v, %v; want the first receipt", again.Receipt, again.Replayed, err)
			}
		})
	}
}

// TestSubmitReferenceReceiptIgnoresBody checks that receipts stored without a
// fingerprint, as the TypeScript Worker stores them, replay as they did.
func TestSubmitReferenceReceiptIgnoresBody(t *testing.T) {
	h := newHarness(t, nil)
	stored := `{"orderId":"r1","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`
	if err := h.mem.Put(context.Background(), "result:k", kv.Entry{Value: stored}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{validBody, `{"symbol":"MSFT","side":"sell","quantity":1}`, `not json`} {
		out, err := h.submit("k", body)
		if err != nil || !out.Replayed || string(out.Receipt) != stored || out.OrderID != "r1" {
			t.Errorf("body %s: got %s replayed %v id %q, %v; want the stored receipt", body, out.Receipt, out.Replayed, out.OrderID, err)
		}
	}
}

func TestSubmitScopesKeysToClients(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	alice, err := h.svc.Submit(ctx, "alice", "shared", strings.NewReader(validBody))
	if err != nil || alice.Replayed {
		t.Fatalf("alice = replayed %v, %v; want a new order", alice.Replayed, err)
	}
	bob, err := h.svc.Submit(ctx, "bob", "shared", strings.NewReader(validBody))
	if err != nil || bob.Replayed {
		t.Fatalf("bob = replayed %v, %v; want his own new order", bob.Replayed, err)
	}
	if alice.OrderID == bob.OrderID {
		t.Fatalf("alice and bob share order %s", alice.OrderID)
	}
	open, err := h.svc.Submit(ctx, "", "shared", strings.NewReader(validBody))
	if err != nil || open.Replayed {
		t.Fatalf("the open client = replayed %v, %v; want its own new order", open.Replayed, err)
	}
	h.wantReceiptStored(t, "alice:shared", alice.Receipt)
	h.wantReceiptStored(t, "bob:shared", bob.Receipt)
	h.wantReceiptStored(t, "shared", open.Receipt)
	again, err := h.svc.Submit(ctx, "bob", "shared", strings.NewReader(validBody))
	if err != nil || !again.Replayed || again.OrderID != bob.OrderID {
		t.Fatalf("bob's retry = %q replayed %v, %v; want his receipt %q", again.OrderID, again.Replayed, err, bob.OrderID)
	}
}
