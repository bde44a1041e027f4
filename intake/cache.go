package intake

import (
	"sync"
	"time"
)

// cacheTTL is how long a receipt is served from memory at most: as long as
// KV's edge cache may serve a read by default.
const cacheTTL = 60 * time.Second

// receiptCache keeps receipts this instance stored or read recently, so a
// retry that lands on the same instance (the usual case for a client's quick
// retries) replays without a round trip. A stored receipt never changes.
// An entry lives no longer than KV's own edge cache keeps a read (60 s by
// default), so over KV the cache adds no staleness KV does not already
// have, and never past the receipt's own expiry where the Store tells it
// (the ledger), which promises never to serve an expired receipt.
type receiptCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]cachedReceipt
	order   []string // insertion order, for eviction
}

type cachedReceipt struct {
	record  Record
	expires time.Time
}

func newReceiptCache(max int) *receiptCache {
	return &receiptCache{max: max, entries: make(map[string]cachedReceipt, max)}
}

// get returns key's receipt if it is cached and not expired at now.
func (c *receiptCache) get(key string, now time.Time) (Record, bool) {
	if c.max == 0 {
		return Record{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.entries[key]
	if !ok || !now.Before(r.expires) {
		return Record{}, false
	}
	return r.record, true
}

// put caches rec, read or stored at now, under key for cacheTTL or until
// rec expires, whichever is sooner, evicting the oldest entry when full.
func (c *receiptCache) put(key string, rec Record, now time.Time) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		if len(c.order) >= c.max {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, key)
	}
	expires := now.Add(cacheTTL)
	if !rec.Expires.IsZero() && rec.Expires.Before(expires) {
		expires = rec.Expires
	}
	c.entries[key] = cachedReceipt{record: rec, expires: expires}
}
