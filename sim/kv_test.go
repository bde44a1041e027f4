package sim

import (
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/kv"
)

// modelWorld is a world with only its KV namespace, unchecked, every
// choice made by choose, and an actor in each location to read and
// write with.
func modelWorld(choose func(n int, label string) int) (*world, [locations]*actor) {
	w := &world{choices: choose, counts: make(map[string]int), chances: make(map[string]int), misses: make(map[string][]miss),
		lastWriter: make(map[string]*actor), lastMover: make(map[keyName]*actor), carried: make(map[keyName]map[string]time.Time), heldAt: make(map[keyName]time.Time), staleOdds: 1}
	w.sched = newScheduler(time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC), choose)
	w.ns = newNamespace(w)
	w.ns.observe = func(string, *kv.Entry, time.Time) {} // no checker
	var in [locations]*actor
	for loc := range in {
		in[loc] = &actor{name: "reader", inst: &instance{id: loc, loc: loc}}
	}
	return w, in
}

// as runs f as a, at the clock's now plus after.
func as(w *world, a *actor, after time.Duration, f func()) {
	w.sched.now = w.sched.now.Add(after)
	w.sched.running = a
	defer func() { w.sched.running = nil }()
	f()
}

func TestALocationServesItsCachedNotFoundToEveryReadThereUntilItsEntryEnds(t *testing.T) {
	w, in := modelWorld(func(int, string) int { return 0 }) // no write lands late, no entry is renewed
	other := &actor{name: "another isolate in location 0", inst: &instance{id: 2, loc: 0}}
	as(w, in[0], 0, func() {
		if got := w.ns.read("k"); got != nil {
			t.Fatalf("read of a key never written = %v, want not found", got)
		}
	})
	as(w, in[1], time.Second, func() { w.ns.write("k", &kv.Entry{Value: "v"}, 0) })
	as(w, in[1], 0, func() {
		if got := w.ns.read("k"); got == nil || got.Value != "v" {
			t.Errorf("its own location read %v, want the write it made", got)
		}
	})
	as(w, other, cacheTTL-2*time.Second, func() {
		if got := w.ns.read("k"); got != nil {
			t.Errorf("location 0 read %v within its cache entry, want its cached not-found", got)
		}
	})
	ms := w.misses["k"]
	if len(ms) != 1 {
		t.Fatalf("misses = %d, want the cached not-found's one", len(ms))
	}
	if m := ms[0]; m.reader != other || m.loc != 0 || m.got != -1 || !m.cached || len(m.missed) != 1 || m.missed[0].entry.Value != "v" {
		t.Errorf("miss = %+v, want location 0's cached not-found missing the write", m)
	}
	if w.counts[kvCachedAbsent] != 1 {
		t.Errorf("cached not-found served counted %d times, want 1", w.counts[kvCachedAbsent])
	}
	as(w, other, time.Second, func() {
		if got := w.ns.read("k"); got == nil {
			t.Errorf("location 0 read not found once its entry ended, want the write")
		}
	})
	if len(w.misses["k"]) != 1 {
		t.Errorf("misses = %d once the entry ended, want still 1", len(w.misses["k"]))
	}
}

func TestAWriteThatLandsLateIsUnseenEvenInItsOwnLocationForMinutes(t *testing.T) {
	w, in := modelWorld(func(int, string) int { return 1 }) // every write lands late, every stale entry is renewed
	as(w, in[0], 0, func() { w.ns.write("k", &kv.Entry{Value: "v"}, 0) })
	for _, after := range []time.Duration{time.Second, cacheTTL, 3 * cacheTTL} {
		as(w, in[0], after, func() {
			if got := w.ns.read("k"); got != nil {
				t.Errorf("own location read %v after a write landing late, want not found", got)
			}
		})
	}
	if got := len(w.misses["k"]); got != 3 {
		t.Errorf("misses = %d, want every read's", got)
	}
	if w.counts[kvStaleOver180s] == 0 {
		t.Errorf("no read counted over 180 s stale: %v", w.counts)
	}
	as(w, in[0], staleMost, func() {
		if got := w.ns.read("k"); got == nil {
			t.Errorf("own location read not found %s after the write, past the most a read may be stale", w.now().Sub(w.ns.keys["k"][0].at))
		}
	})
}
