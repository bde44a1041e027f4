package kv_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

// bulkOpen writes n open keys, bulk-000 on, each a copy of one left open
// by the Store (due at due, or unresolved), and returns their names.
func bulkOpen(t *testing.T, mem *kv.MemoryNamespace, store *kv.Store, c *settleClock, n int, due time.Time, unresolved bool) []intake.Key {
	t.Helper()
	ctx := context.Background()
	leaveOpen(t, store, c, intake.Key{ID: "template"}, due, unresolved)
	e, err := mem.Get(ctx, "pending:template")
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Delete(ctx, "pending:template"); err != nil {
		t.Fatal(err)
	}
	keys := make([]intake.Key, n)
	for i := range n {
		keys[i] = intake.Key{ID: fmt.Sprintf("bulk-%03d", i)}
		if err := mem.Put(ctx, "pending:"+keys[i].ID, e, kv.PutOptions{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// walkRuns calls list runs times, and returns how often each key came.
func walkRuns(t *testing.T, runs int, list func() ([]intake.Key, error)) map[intake.Key]int {
	t.Helper()
	seen := make(map[intake.Key]int)
	for range runs {
		keys, err := list()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k]++
		}
	}
	return seen
}

// TestTheSweepsCursorMovesPastTheKeysItListed: a sweep that stops at its
// limit inside a KV page goes on, at the next run, after the last key it
// listed, not from the page's start: keys nobody settles between runs (a
// migration's adoption writes nothing to KV) are all listed within
// N/limit runs plus one, each once, and then the walk starts over.
func TestTheSweepsCursorMovesPastTheKeysItListed(t *testing.T) {
	ctx := context.Background()
	const n, limit = 120, 100
	for _, tc := range []struct {
		name string
		list func(*kv.Store, *settleClock) ([]intake.Key, error)
	}{
		{"KV mode's overdue sweep", func(s *kv.Store, c *settleClock) ([]intake.Key, error) { return s.Overdue(ctx, c.now, limit) }},
		{"a migration's adoption", func(s *kv.Store, c *settleClock) ([]intake.Key, error) { return s.LeftOpen(ctx, limit) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, store, c := newSettleStore()
			keys := bulkOpen(t, mem, store, c, n, c.now.Add(time.Second), false)
			c.now = c.now.Add(time.Minute)
			list := func() ([]intake.Key, error) { return tc.list(store, c) }
			seen := walkRuns(t, 2, list)
			for _, k := range keys {
				if seen[k] != 1 {
					t.Errorf("%v listed %d times in two runs, want once", k, seen[k])
				}
			}
			if again := walkRuns(t, 1, list); again[keys[0]] != 1 {
				t.Errorf("the third run listed %v, want the walk started over", again)
			}
		})
	}
}

// TestTheAdoptionWalkListsEveryKeyKVLeftOpen: a migration's walk lists
// the keys KV mode left open whether they are due, backing off (due
// later) or given up on (unresolved, with no due time), which Overdue
// leaves out, and the claims still held, whose holder may die.
func TestTheAdoptionWalkListsEveryKeyKVLeftOpen(t *testing.T) {
	ctx := context.Background()
	_, store, c := newSettleStore()
	due := intake.Key{Client: "desk-a", ID: "due"}
	later := intake.Key{Client: "desk-a", ID: "backing:off"}
	gaveUp := intake.Key{ID: "unresolved"}
	leaveOpen(t, store, c, due, c.now.Add(time.Second), false)
	leaveOpen(t, store, c, later, c.now.Add(time.Hour), false)
	leaveOpen(t, store, c, gaveUp, time.Time{}, true)
	held := intake.Key{Client: "desk-b", ID: "held"}
	if _, err := store.Begin(ctx, held, claimFor(c, "held", order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1})); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(time.Minute)
	got, err := store.LeftOpen(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := map[intake.Key]bool{due: true, later: true, gaveUp: true, held: true}
	if len(got) != len(want) {
		t.Fatalf("LeftOpen = %v, want %v", got, want)
	}
	for _, k := range got {
		if !want[k] {
			t.Errorf("LeftOpen listed %v, want only %v", k, want)
		}
	}
	overdue, err := store.Overdue(ctx, c.now, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range overdue {
		if k == later || k == gaveUp {
			t.Errorf("Overdue listed %v, which is not due", k)
		}
	}
}
