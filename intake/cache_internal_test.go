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
	c := newReceiptCache(1 << 20)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	body := make([]byte, 64<<10)
	const n = 40 // 40 × 64 KiB is over the 1 MiB bound
	for i := range n {
		c.put(strconv.Itoa(i), Record{State: Stored, Body: body}, now)
	}
	if c.bytes > maxCachedBytes {
		t.Fatalf("cache holds %d bytes, want at most %d", c.bytes, maxCachedBytes)
	}
	if _, ok := c.get("0", now); ok {
		t.Errorf("the oldest receipt is still cached, want it evicted")
	}
	if _, ok := c.get(strconv.Itoa(n-1), now); !ok {
		t.Errorf("the newest receipt was evicted")
	}
}
