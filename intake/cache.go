package intake

import (
	"sync"
	"time"

	"github.com/edge-orders/edge-orders/internal/panichook"

	"github.com/edge-orders/edge-orders/order"
)

// cacheTTL is how long a receipt is served from memory at most: as long as
// KV's edge cache may serve a read by default.
const cacheTTL = 60 * time.Second

// receiptCache keeps receipts this instance stored or read recently, so a
// retry that lands on the same instance (the usual case for a client's quick
// retries) replays without a round trip. A stored receipt never changes.
// It also keeps the outcomes this instance answered whose commit follows
// the response: a retry replays them, but a lookup, which must never tell
// an outcome that is not stored, does not see them until the commit lands.
// An entry lives no longer than KV's own edge cache keeps a read (60 s by
// default), so over KV the cache adds no staleness KV does not already
// have, and never past the receipt's own expiry where the Store tells it
// (the ledger), which promises never to serve an expired receipt.
type receiptCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]cachedReceipt
	// order is a ring of the keys in the order they were put, oldest at
	// head, for eviction: allocated once, so that a busy cache never asks
	// the heap for a larger array. Under TinyGo, whose heap stays
	// fragmented by what stale words pin, one such request grew a busy
	// instance's memory from 16 to 32 MB.
	order []string
	head  int
	count int
	// bytes is what the entries' keys, bodies and fingerprints take;
	// eviction keeps it within maxCachedBytes, so that the cache costs
	// what its bytes cost whatever the receipts' size.
	bytes int
	// purges counts the purges in this instance (purged), and purgedKeys
	// holds the last of their keys, the n-th at (n-1) % len: a read or a
	// commit of the Store that began before a purge of its key may have
	// found what the purge erased, and is not cached (putSince). Beyond
	// the last len purges nobody can tell, and nothing is cached: a call
	// to the Store lasts a second or two, and no operator purges hundreds
	// of keys a second through one instance.
	purges     uint64
	purgedKeys [256]string
}

// maxCachedBytes bounds the bytes the receipt cache holds: under TinyGo,
// whose collector scans goroutine stacks conservatively, memory the cache
// pins is most of what a busy instance's heap grows by.
const maxCachedBytes = 1 << 20

// size is what an entry takes, for the byte bound.
func (r cachedReceipt) size(key string) int { return len(key) + len(r.body) + len(r.fingerprint) + 64 }

// cachedReceipt is what a replay reads of a stored outcome: its state,
// body, rejection flag and fingerprint, when the entry expires, in Unix
// seconds (rounded up from its TTL, down from the receipt's expiry), and when
// the stored outcome itself expires (Record.Expires), in Unix
// milliseconds, 0 when not known.
// It holds no time.Time: under TinyGo, whose collector takes any word
// that looks like an address for a pointer, the bits of times pinned dead
// goroutine stacks (64 KB each). Measured over 1,500 new orders, an entry
// kept about 19 KB of heap alive with its times, and 7 KB without.
type cachedReceipt struct {
	state       State
	body        []byte
	rejected    bool
	fingerprint string
	expires     int64
	storedUntil int64
	// unstored marks an outcome answered before its commit landed.
	unstored bool
}

func newReceiptCache(max int) *receiptCache {
	return &receiptCache{max: max, entries: make(map[string]cachedReceipt, max), order: make([]string, max)}
}

// get returns key's receipt if it is cached and not expired at now: a
// stored one, or, with unstored, also one whose commit has not landed yet.
func (c *receiptCache) get(key string, now time.Time, unstored bool) (Record, bool) {
	if c.max == 0 {
		return Record{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	panichook.At(panichook.Locked, key)
	r, ok := c.entries[key]
	if !ok || now.Unix() >= r.expires || (r.unstored && !unstored) {
		return Record{}, false
	}
	rec := Record{State: r.state, Body: r.body, Rejected: r.rejected, Fingerprint: r.fingerprint}
	if r.storedUntil != 0 {
		rec.Expires = time.UnixMilli(r.storedUntil).UTC()
	}
	return rec, true
}

// putSince caches rec, read or stored at now by a call to the Store that
// began once mark was taken, under key for cacheTTL or until rec expires,
// whichever is sooner, evicting the oldest entry when full; unless a
// purge of key came since mark: it may have erased rec.
func (c *receiptCache) putSince(key string, rec Record, now time.Time, mark uint64) {
	c.add(key, rec, now, false, &mark)
}

// putUnstored caches rec as putSince does, as an outcome answered at now
// whose commit has not landed: only retries see it, until putSince
// replaces it. Its request holds the key in this instance, so no purge
// here comes in between.
func (c *receiptCache) putUnstored(key string, rec Record, now time.Time) {
	c.add(key, rec, now, true, nil)
}

// mark is what putSince is given of a call to the Store that begins now.
func (c *receiptCache) mark() uint64 {
	if c.max == 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.purges
}

// purged forgets key's receipt, as a purge in this instance erased it: a
// call to the Store under way may bring it back, and putSince will not
// cache it.
func (c *receiptCache) purged(key string) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.purgedKeys[c.purges%uint64(len(c.purgedKeys))] = key
	c.purges++
	c.forgetLocked(key)
}

// forget drops key's receipt: its entry stays in the ring, expired, so
// that the ring and the map keep agreeing.
func (c *receiptCache) forget(key string) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(key)
}

// forgetLocked is forget with c.mu held.
func (c *receiptCache) forgetLocked(key string) {
	if e, ok := c.entries[key]; ok {
		e.expires = 0
		c.entries[key] = e
	}
}

// purgedSince reports whether key may have been purged since mark: it was,
// or more purges came since than purgedKeys holds. c.mu is held.
func (c *receiptCache) purgedSince(key string, mark uint64) bool {
	if c.purges-mark > uint64(len(c.purgedKeys)) {
		return true
	}
	for n := mark; n < c.purges; n++ {
		if c.purgedKeys[n%uint64(len(c.purgedKeys))] == key {
			return true
		}
	}
	return false
}

func (c *receiptCache) add(key string, rec Record, now time.Time, unstored bool, mark *uint64) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if mark != nil && c.purgedSince(key, *mark) {
		return
	}
	// KV may serve a read stale for cacheTTL after the write this entry
	// stands for: rounded up, the entry outlasts that, so a retry never
	// reads the key stale once its entry is gone and mints a claim with
	// another acceptedAt. The stored outcome's own expiry, rounded down,
	// still bounds it.
	expires := now.Add(cacheTTL + time.Second - 1).Unix()
	if !rec.Expires.IsZero() && rec.Expires.Unix() < expires {
		expires = rec.Expires.Unix()
	}
	entry := cachedReceipt{state: rec.State, body: rec.Body, rejected: rec.Rejected, fingerprint: rec.Fingerprint, expires: expires, unstored: unstored}
	if !rec.Expires.IsZero() {
		entry.storedUntil = rec.Expires.UnixMilli()
	}
	if old, ok := c.entries[key]; ok {
		c.bytes -= old.size(key)
	} else {
		if c.count == c.max {
			c.evictOldest()
		}
		c.order[(c.head+c.count)%c.max] = key
		c.count++
	}
	c.entries[key] = entry
	c.bytes += entry.size(key)
	for c.count > 0 && c.bytes > maxCachedBytes {
		c.evictOldest()
	}
}

// evictOldest forgets the entry put first.
func (c *receiptCache) evictOldest() {
	oldest := c.order[c.head]
	c.order[c.head] = ""
	c.head = (c.head + 1) % c.max
	c.count--
	if e, ok := c.entries[oldest]; ok {
		c.bytes -= e.size(oldest)
		delete(c.entries, oldest)
	}
}

// cacheRead caches rec, a stored outcome read from the Store at now, by a
// read that began once mark (receiptCache.mark) was taken: a purge of key
// in this instance since may have erased it, and then it is not cached. A
// Store that cannot tell when the outcome expires (KV) leaves Expires
// zero, and the cache would keep the entry a read's whole stale window,
// past the outcome's end: an instance would then replay a receipt that KV
// has dropped and that a retry elsewhere, finding the key free, has since
// replaced. So the entry ends at the earliest the outcome can: RESULT_TTL
// after its acceptance, since it was stored no earlier, for at least that
// long. An outcome whose acceptance cannot be read is not cached.
func (s *Service) cacheRead(key string, rec Record, now time.Time, mark uint64) {
	if rec.Expires.IsZero() {
		at := order.ReceiptAcceptedAt(rec.Body)
		if at.IsZero() {
			return
		}
		rec.Expires = at.Add(s.opts.ResultTTL)
	}
	s.receipts.putSince(key, rec, now, mark)
}
