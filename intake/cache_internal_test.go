package intake

import (
	"strconv"
	"testing"
	"time"
)

// TestReceiptCacheIsBoundedByBytes fills the cache with large receipts:
// it keeps no more than maxCachedBytes, evicting the oldest, whatever the
// count allows.
func TestReceiptCacheIsBoundedByBytes(t *testing.T) {
	c := newReceiptCache(DefaultCachedReceipts)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	body := make([]byte, 64<<10)
	const n = 40 // 40 × 64 KiB is over the 1 MiB bound
	for i := range n {
		c.putSince(strconv.Itoa(i), Record{State: Stored, Body: body}, now, c.mark())
	}
	if c.bytes > maxCachedBytes {
		t.Fatalf("cache holds %d bytes, want at most %d", c.bytes, maxCachedBytes)
	}
	if _, ok := c.get("0", now, false); ok {
		t.Errorf("the oldest receipt is still cached, want it evicted")
	}
	if _, ok := c.get(strconv.Itoa(n-1), now, false); !ok {
		t.Errorf("the newest receipt was evicted")
	}
}

// TestReceiptCacheEvictsInPutOrder wraps the ring of keys more than once:
// the entry put first goes first, and putting a cached key again keeps
// its place.
func TestReceiptCacheEvictsInPutOrder(t *testing.T) {
	c := newReceiptCache(3)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, key := range []string{"a", "b", "c", "d", "e", "c", "f", "g"} {
		c.putSince(key, Record{State: Stored, Body: []byte(key)}, now, c.mark())
	}
	for key, want := range map[string]bool{"a": false, "b": false, "c": false, "d": false, "e": true, "f": true, "g": true} {
		if _, got := c.get(key, now, false); got != want {
			t.Errorf("%s cached: %v, want %v", key, got, want)
		}
	}
	if got, want := len(c.entries), 3; got != want {
		t.Errorf("%d entries, want %d", got, want)
	}
}
