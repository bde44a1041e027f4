package intake

import (
	"slices"
	"sync"
	"time"
)

// openedTTL is how long an instance remembers an order id it left open:
// as long as a KV write may take to be seen by a read, even in the
// location that made it.
const openedTTL = 60 * time.Second

// maxOpened bounds the order ids an instance remembers.
const maxOpened = 1024

// openedOrders remembers the claims this instance left Open after a
// gateway call without an answer, so that a retry reaching the same
// instance keeps the key's order id even when its read of the Store
// misses the write that opened it (KV promises no read-after-write). The
// promise of one order id per key then does not rest on the Store's
// freshness within an instance.
type openedOrders struct {
	mu      sync.Mutex
	entries map[string]openedOrder
	order   []string // insertion order, for eviction
}

type openedOrder struct {
	claim Claim // OrderID, AcceptedAt, Fingerprint, Order, Attempts, KeepUntil
	until int64 // Unix seconds
}

func newOpenedOrders() *openedOrders {
	return &openedOrders{entries: make(map[string]openedOrder)}
}

// get returns the claim key was left open with, if remembered at now. A
// nil set remembers nothing, and put and forget do nothing to it.
func (o *openedOrders) get(key string, now time.Time) (Claim, bool) {
	if o == nil {
		return Claim{}, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.entries[key]
	if !ok || now.Unix() >= e.until {
		return Claim{}, false
	}
	return e.claim, true
}

// put remembers c, left open under key at now.
func (o *openedOrders) put(key string, c Claim, now time.Time) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.entries[key]; ok {
		// Left open again: the newest, last to be evicted.
		o.order = slices.DeleteFunc(o.order, func(k string) bool { return k == key })
	} else if len(o.order) >= maxOpened {
		delete(o.entries, o.order[0])
		o.order = o.order[1:]
	}
	o.order = append(o.order, key)
	c.Token, c.Admit = "", nil
	// Rounded up, as the receipt cache's entries are: KV may serve a read
	// stale for openedTTL after the write this entry stands for, and an
	// entry gone in the second before that let a retry that read the key
	// stale mint a claim with another acceptedAt.
	o.entries[key] = openedOrder{claim: c, until: now.Add(openedTTL + time.Second - 1).Unix()}
}

// forget drops key once its outcome is stored.
func (o *openedOrders) forget(key string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.entries[key]; ok {
		e.until = 0 // the entry keeps its place in order until evicted
		o.entries[key] = e
	}
}
