package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/ledger"
)

// clock is a fake clock that tests move by hand.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) Advance(d time.Duration) { c.now = c.now.Add(d) }

func newMemory() (*ledger.MemoryStore, *clock) {
	c := &clock{now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	m := ledger.NewMemoryStore()
	m.Now = c.Now
	return m, c
}

func TestMemoryConformance(t *testing.T) {
	m, c := newMemory()
	storetest.Run(t, m, "memory:", storetest.Options{Fenced: true, Atomic: true, Short: time.Second, Now: c.Now, Advance: c.Advance})
}

// TestSweepDeletesExpiredRows checks the alarm path: the first claim sets
// the alarm, a sweep deletes what has expired, and the alarm is set again
// only while rows remain.
func TestSweepDeletesExpiredRows(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	if !m.Alarm.IsZero() {
		t.Fatalf("a new ledger has an alarm at %v", m.Alarm)
	}
	short := intake.Claim{Token: "a", Lease: time.Minute}
	long := intake.Claim{Token: "b", Lease: time.Minute}
	if _, err := m.Begin(ctx, intake.Key{ID: "short"}, short); err != nil {
		t.Fatal(err)
	}
	first := m.Alarm
	if first.IsZero() {
		t.Fatal("a claim set no sweep alarm")
	}
	if _, err := m.Begin(ctx, intake.Key{ID: "long"}, long); err != nil {
		t.Fatal(err)
	}
	if m.Alarm != first {
		t.Fatalf("a second claim moved the alarm from %v to %v", first, m.Alarm)
	}
	if err := m.Commit(ctx, intake.Key{ID: "long"}, long, intake.Result{Body: []byte("r"), TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}

	c.Advance(first.Sub(c.now))
	m.Sweep()
	if got := m.Rows(); got != 1 {
		t.Fatalf("after the sweep %d rows remain, want 1 (the receipt)", got)
	}
	if !m.Alarm.After(c.now) {
		t.Fatalf("with a row left the next alarm is %v, want after %v", m.Alarm, c.now)
	}
	m.Sweep() // alarms run at least once: a second run changes nothing
	if got := m.Rows(); got != 1 {
		t.Fatalf("a repeated sweep left %d rows, want 1", got)
	}

	c.Advance(25 * time.Hour)
	m.Sweep()
	if got := m.Rows(); got != 0 {
		t.Fatalf("after the receipt expired %d rows remain, want 0", got)
	}
	if !m.Alarm.IsZero() {
		t.Fatalf("an empty ledger keeps an alarm at %v", m.Alarm)
	}
}

// TestObjectNameIsScopedAndSpread checks the names' form, that one key
// always has the name FNV-1a gives it (the function is the contract between
// Workers that share the ledger), and that keys spread over every shard.
func TestObjectNameIsScopedAndSpread(t *testing.T) {
	if got := ledger.ObjectName(intake.Key{Client: "desk-a", ID: "order-1"}, 8); got != "desk-a/5" {
		t.Errorf("ObjectName(desk-a, order-1, 8) = %q, want desk-a/5 (FNV-1a 32 of order-1 is 0x2b7fcd6d)", got)
	}
	tests := []struct {
		name string
		key  intake.Key
		want string
	}{
		{"open Worker", intake.Key{ID: "abc"}, "open/"},
		{"a client", intake.Key{Client: "desk-a", ID: "abc"}, "desk-a/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ledger.ObjectName(tc.key, 8)
			if len(got) != len(tc.want)+1 || got[:len(tc.want)] != tc.want || got[len(got)-1] < '0' || got[len(got)-1] > '7' {
				t.Fatalf("ObjectName = %q, want %q and a digit under 8", got, tc.want)
			}
		})
	}
	seen := map[string]bool{}
	for i := range 200 {
		seen[ledger.ObjectName(intake.Key{Client: "c", ID: string(rune('a'+i%26)) + string(rune('0'+i/26))}, 8)] = true
	}
	if len(seen) != 8 {
		t.Fatalf("200 keys landed on %d objects, want all 8", len(seen))
	}
}
