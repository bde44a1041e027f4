package intake

import (
	"sync"
	"time"
)

// keySet is a set of keys safe for concurrent use, each with the time it
// was added and an id that tells its adder's entry apart from a later one.
type keySet struct {
	mu   sync.Mutex
	next uint64
	keys map[string]inFlightEntry
}

type inFlightEntry struct {
	id    uint64
	added time.Time
}

// add adds key at now and reports whether it was absent, or present for
// longer than lease: a request whose promises the runtime dropped never
// removes its key, and must not block it for the instance's life. The id
// returned removes this entry and no later one.
func (k *keySet) add(key string, now time.Time, lease time.Duration) (id uint64, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, held := k.keys[key]; held && now.Sub(e.added) < lease {
		return 0, false
	}
	k.next++
	k.keys[key] = inFlightEntry{id: k.next, added: now}
	return k.next, true
}

// remove removes key's entry if it is still the one added with id: an
// abandoned request that wakes after its entry was taken over must not
// free the key under the request that holds it now.
func (k *keySet) remove(key string, id uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.keys[key]; ok && e.id == id {
		delete(k.keys, key)
	}
}
