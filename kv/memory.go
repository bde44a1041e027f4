package kv

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryNamespace is an in-process Namespace that behaves like Workers KV where it matters
// for correctness: it enforces KV's key, TTL, value and metadata limits, expires
// entries, and gives no atomicity (every call yields to other goroutines first,
// so a Get-then-Put races exactly as it would against KV).
//
// The zero value is not usable; call NewMemoryNamespace.
type MemoryNamespace struct {
	// Now is the clock used for expiry; tests replace it to move time.
	Now func() time.Time
	// LimitWrites refuses a write to a key within a second of its last
	// with ErrRateLimited, as KV may: set it to test what a refused write
	// does. Off, the default, writes are never refused, so that a test on
	// a clock that does not move can write a key twice.
	LimitWrites bool

	mu      sync.Mutex
	entries map[string]memoryEntry
	written map[string]time.Time // each key's last write, with LimitWrites
}

// limited reports, under m.mu, whether a write to key now is refused,
// and notes it as written if not.
func (m *MemoryNamespace) limited(key string) bool {
	if !m.LimitWrites {
		return false
	}
	now := m.Now()
	if at, ok := m.written[key]; ok && now.Sub(at) < writeEvery {
		return true
	}
	if m.written == nil {
		m.written = make(map[string]time.Time)
	}
	m.written[key] = now
	return false
}

type memoryEntry struct {
	Entry
	expires time.Time // zero: never
}

// NewMemoryNamespace returns an empty store on the wall clock.
func NewMemoryNamespace() *MemoryNamespace {
	return &MemoryNamespace{Now: time.Now, entries: make(map[string]memoryEntry)}
}

// Get implements Namespace.
func (m *MemoryNamespace) Get(ctx context.Context, key string) (Entry, error) {
	if err := enter(ctx); err != nil {
		return Entry{}, err
	}
	if err := CheckKey(key); err != nil {
		return Entry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return Entry{}, ErrNotFound
	}
	if !e.expires.IsZero() && !m.Now().Before(e.expires) {
		delete(m.entries, key)
		return Entry{}, ErrNotFound
	}
	return e.Entry, nil
}

// Put implements Namespace.
func (m *MemoryNamespace) Put(ctx context.Context, key string, e Entry, opts PutOptions) error {
	if err := enter(ctx); err != nil {
		return err
	}
	if err := checkPut(key, e, opts); err != nil {
		return err
	}
	var expires time.Time
	if opts.TTL > 0 {
		// KV takes whole seconds.
		expires = m.Now().Add(opts.TTL.Truncate(time.Second))
	}
	e.Metadata = append([]byte(nil), e.Metadata...)
	if len(e.Metadata) == 0 {
		e.Metadata = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limited(key) {
		return ErrRateLimited
	}
	m.entries[key] = memoryEntry{Entry: e, expires: expires}
	return nil
}

// Delete implements Namespace.
func (m *MemoryNamespace) Delete(ctx context.Context, key string) error {
	if err := enter(ctx); err != nil {
		return err
	}
	if err := CheckKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limited(key) {
		return ErrRateLimited
	}
	delete(m.entries, key)
	return nil
}

// Len reports how many live entries the store holds.
func (m *MemoryNamespace) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.Now()
	n := 0
	for _, e := range m.entries {
		if e.expires.IsZero() || now.Before(e.expires) {
			n++
		}
	}
	return n
}

// enter models the network round trip of a KV call: it lets other goroutines
// run before the call takes effect and honours cancellation.
func enter(ctx context.Context) error {
	runtime.Gosched()
	return ctx.Err()
}

// List implements Lister; a cursor is the last key of the page before.
func (m *MemoryNamespace) List(ctx context.Context, prefix, cursor string, limit int) ([]Listed, string, error) {
	if err := enter(ctx); err != nil {
		return nil, "", err
	}
	if err := CheckListLimit(limit); err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.Now()
	var names []string
	for k, e := range m.entries {
		if strings.HasPrefix(k, prefix) && k > cursor && (e.expires.IsZero() || now.Before(e.expires)) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var next string
	if len(names) > limit {
		names = names[:limit]
		next = names[limit-1]
	}
	keys := make([]Listed, len(names))
	for i, k := range names {
		keys[i] = Listed{Name: k, Metadata: m.entries[k].Metadata}
	}
	return keys, next, nil
}
