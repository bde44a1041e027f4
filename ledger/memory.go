package ledger

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
)

// MemoryStore is an intake.Store over one in-memory Object: the ledger's own
// logic, with a map for its SQL table, for tests and native use. Like the
// Durable Object it runs one call at a time, and like a round trip each call
// first lets other goroutines run.
type MemoryStore struct {
	adapter
	// Now is the clock; tests replace it to move time.
	Now func() time.Time

	mu  sync.Mutex
	obj Object
	// Alarm is when the object's alarm is set for; zero for none.
	Alarm time.Time
	// RoundTrip, if set, carries each call to the object as an RPC does:
	// it runs apply at most once, and returns an error when the call
	// failed, before apply (nothing happened) or after it (the answer was
	// lost). A call that fails retryable is made once more, as Client
	// makes it (retryOnce). Fault injection and the simulator set it; nil
	// runs apply after letting other goroutines run, as a round trip would.
	RoundTrip func(ctx context.Context, method string, apply func()) error
	// Watch, if set, is told of every call that may change a key: what
	// Lookup would have said of it just before and just after, inside the
	// call (the simulator checks each change against intake.Transitions).
	Watch func(key intake.Key, method string, before, after intake.Record)
}

// watched runs f, a call that may change key, telling Watch.
func (m *MemoryStore) watched(key intake.Key, method string, f func()) func() {
	if m.Watch == nil {
		return f
	}
	return func() {
		before := m.obj.Lookup(key)
		f()
		m.Watch(key, method, before, m.obj.Lookup(key))
	}
}

// NewMemoryStore returns an empty ledger on the wall clock.
func NewMemoryStore() *MemoryStore {
	m := &MemoryStore{Now: time.Now}
	m.adapter = adapter{calls: m}
	m.obj = Object{
		rows:     &memTable{rows: make(map[string]row)},
		now:      func() time.Time { return m.Now() },
		setAlarm: func(at time.Time) { m.Alarm = at },
	}
	return m
}

// do runs f as one call of the object, named method.
func (m *MemoryStore) do(ctx context.Context, method string, f func()) error {
	apply := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		f()
	}
	if m.RoundTrip != nil {
		return retryOnce(func() error { return m.RoundTrip(ctx, method, apply) })
	}
	runtime.Gosched()
	if err := ctx.Err(); err != nil {
		return err
	}
	apply()
	return nil
}

func (m *MemoryStore) claim(ctx context.Context, key intake.Key, c intake.Claim) (rec intake.Record, err error) {
	var stepErr error
	if err = m.do(ctx, "claim", m.watched(key, "claim", func() { rec, stepErr = m.obj.Claim(key, c) })); err != nil {
		return rec, err
	}
	return rec, stepErr
}

func (m *MemoryStore) commit(ctx context.Context, key intake.Key, c intake.Claim, r intake.Result) (err error) {
	if derr := m.do(ctx, "commit", m.watched(key, "commit", func() { err = m.obj.Commit(key, c, r) })); derr != nil {
		return derr
	}
	return err
}

func (m *MemoryStore) release(ctx context.Context, key intake.Key, c intake.Claim) error {
	var stepErr error
	if err := m.do(ctx, "release", m.watched(key, "release", func() { stepErr = m.obj.Release(key, c) })); err != nil {
		return err
	}
	return stepErr
}

func (m *MemoryStore) lookup(ctx context.Context, key intake.Key) (rec intake.Record, err error) {
	err = m.do(ctx, "lookup", func() { rec = m.obj.Lookup(key) })
	return rec, err
}

// Sweep runs the object's alarm handler, as the runtime does when Alarm is
// due.
func (m *MemoryStore) Sweep() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Alarm = time.Time{} // the alarm fired
	m.obj.rows.setAlarm(time.Time{})
	m.obj.Sweep()
}

// DueKeys begins the object's alarm, as the runtime does when Alarm is
// due: it sweeps if the sweep is due and returns the keys due for the
// settler, at most limit. Settle them, then call AlarmDone.
func (m *MemoryStore) DueKeys(limit int) []intake.Key {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Alarm = time.Time{} // the alarm fired
	return m.obj.Alarm(limit)
}

// AlarmDone ends the alarm DueKeys began (Object.AlarmDone).
func (m *MemoryStore) AlarmDone(retryDue time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.obj.AlarmDone(retryDue)
}

// RunAlarm runs the object's alarm, as the runtime does when Alarm is
// due (Object.RunAlarm): settle is called without the lock held, and
// settles the keys through the store like any caller.
func (m *MemoryStore) RunAlarm(settle func([]intake.Key) error) error {
	return runAlarm(m.DueKeys, m.AlarmDone, settle)
}

// Rows reports how many rows the object stores, expired ones included.
func (m *MemoryStore) Rows() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	rows, _, _ := m.obj.Stats()
	return rows
}

// memTable is a table in a map.
type memTable struct {
	rows           map[string]row
	purges         map[string]purged
	sweep, alarmAt time.Time
}

func (t *memTable) purged(key string) (purged, bool) {
	p, ok := t.purges[key]
	return p, ok
}

func (t *memTable) putPurged(p purged) {
	if t.purges == nil {
		t.purges = make(map[string]purged)
	}
	t.purges[p.key] = p
}

func (t *memTable) get(key string) (row, bool) {
	r, ok := t.rows[key]
	return r, ok
}

// put keeps r as the SQL table would read it back (sqlTable.put, then
// rowAt), no more: a give-up as its flag and due time (intake.GiveUpOf),
// and an order only if it parses. A table kinder than the Durable
// Object's would pass tests the object fails.
func (t *memTable) put(r row) {
	r.giveUp = intake.GiveUpOf(r.giveUp.Unresolved(), r.due)
	if r.hasOrder {
		o, err := order.Parse(r.order.JSON())
		r.order, r.hasOrder = o, err == nil
	}
	t.rows[r.key] = r
}

func (t *memTable) delete(key string) { delete(t.rows, key) }

func (t *memTable) deleteExpired(now time.Time) bool {
	for k, r := range t.rows {
		if !now.Before(r.expires) {
			delete(t.rows, k)
		}
	}
	for k, p := range t.purges {
		if !now.Before(p.until) {
			delete(t.purges, k)
		}
	}
	return len(t.rows) > 0 || len(t.purges) > 0
}

func (t *memTable) nextSweep() time.Time { return t.sweep }

func (t *memTable) count() int { return len(t.rows) }

func (t *memTable) setNextSweep(at time.Time) { t.sweep = at }

func (t *memTable) dueRows(now time.Time, limit int) []row {
	var due []row
	for _, r := range t.rows {
		if !r.due.IsZero() && !now.Before(r.due) && now.Before(r.expires) {
			due = append(due, r)
		}
	}
	// By due time, then key: the map's order is random, and the
	// simulator replays a seed only if every choice is deterministic.
	slices.SortFunc(due, func(a, b row) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	return due[:min(len(due), limit)]
}

func (t *memTable) nextDue(now time.Time) time.Time {
	var next time.Time
	for _, r := range t.rows {
		if !r.due.IsZero() && now.Before(r.expires) && (next.IsZero() || r.due.Before(next)) {
			next = r.due
		}
	}
	return next
}

func (t *memTable) alarm() time.Time { return t.alarmAt }

func (t *memTable) setAlarm(at time.Time) { t.alarmAt = at }
