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
)

// TestReplayFromMemory checks that a retry on the same instance replays the
// receipt without KV for a minute, and goes back to KV after that.
func TestReplayFromMemory(t *testing.T) {
	now := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	mem := kv.NewMemory()
	mem.Now = func() time.Time { return now }
	rec := &recordingStore{Store: mem}
	svc := intake.New(rec, &intake.Options{Now: func() time.Time { return now }})
	submit := func(body string) intake.Outcome {
		t.Helper()
		out, err := svc.Submit(context.Background(), "", "k", strings.NewReader(body))
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		return out
	}
	first := submit(validBody)
	calls := len(rec.snapshot())

	now = now.Add(59 * time.Second)
	if again := submit(validBody); !again.Replayed || !bytes.Equal(again.Receipt, first.Receipt) {
		t.Fatalf("replay = %s replayed %v, want %s", again.Receipt, again.Replayed, first.Receipt)
	}
	if got := rec.snapshot()[calls:]; len(got) != 0 {
		t.Fatalf("a replay within a minute called KV: %v", got)
	}
	if _, err := svc.Submit(context.Background(), "", "k", strings.NewReader(`{"symbol":"X","side":"buy","quantity":1}`)); !errors.Is(err, intake.ErrKeyReused) {
		t.Fatalf("a different order from memory: error = %v, want ErrKeyReused", err)
	}

	now = now.Add(time.Second)
	gets := rec.count(opGet, "result:")
	if again := submit(validBody); !again.Replayed || !bytes.Equal(again.Receipt, first.Receipt) {
		t.Fatalf("replay after a minute = %s replayed %v, want %s", again.Receipt, again.Replayed, first.Receipt)
	}
	if got := rec.count(opGet, "result:") - gets; got != 1 {
		t.Fatalf("result Gets = %d, want 1: after a minute the receipt is read from KV again", got)
	}
}

// TestReceiptCacheIsBounded checks the oldest receipts leave memory first.
func TestReceiptCacheIsBounded(t *testing.T) {
	mem := kv.NewMemory()
	rec := &recordingStore{Store: mem}
	svc := intake.New(rec, &intake.Options{CachedReceipts: 2})
	for _, key := range []string{"a", "b", "c"} {
		if _, err := svc.Submit(context.Background(), "", key, strings.NewReader(validBody)); err != nil {
			t.Fatal(err)
		}
	}
	before := rec.count(opGet, "result:")
	for _, key := range []string{"b", "c", "a"} {
		if out, err := svc.Submit(context.Background(), "", key, strings.NewReader(validBody)); err != nil || !out.Replayed {
			t.Fatalf("replay %s = %v, %v", key, out.Replayed, err)
		}
	}
	if got := rec.count(opGet, "result:") - before; got != 1 {
		t.Fatalf("result Gets for b, c, a = %d, want 1 (only a, the evicted one)", got)
	}
}
