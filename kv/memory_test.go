package kv_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

func TestMemoryConformance(t *testing.T) {
	kvtest.Run(t, kv.NewMemoryNamespace(), "conformance:")
	kvtest.RunLister(t, kv.NewMemoryNamespace(), "conformance:")
}

func TestMemoryExpiry(t *testing.T) {
	m := kv.NewMemoryNamespace()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Now = func() time.Time { return now }
	ctx := context.Background()
	// KV keeps whole seconds: 60.9 s lives exactly 60 s.
	if err := m.Put(ctx, "k", kv.Entry{Value: "v"}, kv.PutOptions{TTL: 60*time.Second + 900*time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(59 * time.Second)
	if _, err := m.Get(ctx, "k"); err != nil {
		t.Fatalf("Get at 59s error = %v, want live entry", err)
	}
	now = now.Add(time.Second)
	if _, err := m.Get(ctx, "k"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get at 60s error = %v, want ErrNotFound", err)
	}
	if got := m.Len(); got != 0 {
		t.Fatalf("Len = %d, want 0", got)
	}
}

func TestMemoryHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := kv.NewMemoryNamespace()
	if err := m.Put(ctx, "k", kv.Entry{Value: "v"}, kv.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put error = %v, want context.Canceled", err)
	}
	if got := m.Len(); got != 0 {
		t.Fatalf("Len = %d, want 0 after a cancelled Put", got)
	}
}

// TestMemoryIsNotAtomic shows the race the service must guard against: every
// caller that checks a key before any of them claims it believes it won, and
// each claim succeeds, because KV has no compare-and-swap.
func TestMemoryIsNotAtomic(t *testing.T) {
	const callers = 8
	m := kv.NewMemoryNamespace()
	ctx := context.Background()
	var checked, done sync.WaitGroup
	checked.Add(callers)
	var mu sync.Mutex
	winners := 0
	for i := 0; i < callers; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			_, err := m.Get(ctx, "claim")
			checked.Done()
			checked.Wait()
			if errors.Is(err, kv.ErrNotFound) && m.Put(ctx, "claim", kv.Entry{Value: "1"}, kv.PutOptions{}) == nil {
				mu.Lock()
				winners++
				mu.Unlock()
			}
		}()
	}
	done.Wait()
	if winners != callers {
		t.Fatalf("%d of %d callers won a get-then-put claim; want all, as on KV", winners, callers)
	}
}

// TestMemoryNamespaceLimitsWritesWhenAsked: with LimitWrites a second
// write to a key within a second is refused with ErrRateLimited, and
// changes nothing; another key, or the same a second later, is written.
func TestMemoryNamespaceLimitsWritesWhenAsked(t *testing.T) {
	ctx := context.Background()
	m, now := limitedMemory()
	if err := m.Put(ctx, "a", kv.Entry{Value: "1"}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(999 * time.Millisecond)
	if err := m.Delete(ctx, "a"); !errors.Is(err, kv.ErrRateLimited) {
		t.Errorf("a delete within the second = %v, want ErrRateLimited", err)
	}
	if e, err := m.Get(ctx, "a"); err != nil || e.Value != "1" {
		t.Errorf("after the refused delete: %+v, %v; want the value kept", e, err)
	}
	if err := m.Put(ctx, "b", kv.Entry{Value: "1"}, kv.PutOptions{}); err != nil {
		t.Errorf("another key = %v", err)
	}
	*now = now.Add(time.Millisecond)
	if err := m.Put(ctx, "a", kv.Entry{Value: "2"}, kv.PutOptions{}); err != nil {
		t.Errorf("a write a second later = %v", err)
	}
}

// limitedMemory is a MemoryNamespace that limits writes, on a clock the
// test moves through the pointer it returns.
func limitedMemory() (*kv.MemoryNamespace, *time.Time) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	m := kv.NewMemoryNamespace()
	m.Now = func() time.Time { return now }
	m.LimitWrites = true
	return m, &now
}
