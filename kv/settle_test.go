package kv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/order"
)

// settleClock is a fake clock for one test, moved by hand.
type settleClock struct{ now time.Time }

func (c *settleClock) Now() time.Time { return c.now }

// keep is how long a claim that may reach a gateway keeps its order id in
// these tests: past the settler's attempts and a receipt's TTL.
const keep = 48 * time.Hour

func newSettleStore() (*kv.MemoryNamespace, *kv.Store, *settleClock) {
	c := &settleClock{now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	mem := kv.NewMemoryNamespace()
	mem.Now = c.Now
	return mem, kv.NewStore(mem, c.Now), c
}

// claimFor is a claim for o that may reach a gateway, as the Service
// makes one.
func claimFor(c *settleClock, token string, o order.Order) intake.Claim {
	return intake.Claim{Token: token, Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-" + token, AcceptedAt: c.now,
		Lease: kv.MinTTL, KeepUntil: c.now.Add(keep)}
}

// TestClaimCarriesAnyOrder: a claim keeps its order however long its
// symbol, in metadata while it fits in KV's 1,024 bytes and in the claim's
// value otherwise, and Begin and Lookup return it either way.
func TestClaimCarriesAnyOrder(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		symbol  string
		inValue bool
	}{
		{"a short symbol, in metadata", "AAPL", false},
		{"a symbol that fills the metadata, in the value", strings.Repeat("S", kv.MaxMetadataBytes), true},
		{"a long symbol with escapes, in the value", strings.Repeat("\xed\xa0\x80\"\\é\u2028", 200), true},
		{"a very long symbol, in the value", strings.Repeat("Z", 64<<10), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem, store, c := newSettleStore()
			k := intake.Key{Client: "desk-a", ID: "k"}
			o := order.Order{Symbol: tc.symbol, Side: order.Sell, Quantity: order.MaxQuantity}
			first := claimFor(c, "first", o)
			if rec, err := store.Begin(ctx, k, first); err != nil || rec.Took != intake.EventClaim {
				t.Fatalf("Begin = %+v, %v; want a claim", rec.State, err)
			}
			e, err := mem.Get(ctx, "pending:desk-a:k")
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Metadata) > kv.MaxMetadataBytes {
				t.Fatalf("metadata is %d bytes, over KV's %d", len(e.Metadata), kv.MaxMetadataBytes)
			}
			if gotInValue := e.Value != "1"; gotInValue != tc.inValue {
				t.Errorf("claim value %.40q…, order in the value %v, want %v", e.Value, gotInValue, tc.inValue)
			}
			if tc.inValue && e.Value != string(o.JSON()) {
				t.Errorf("claim value %.60q…, want the order's JSON", e.Value)
			}
			wantOrder := func(what string, rec intake.Record, state intake.State) {
				t.Helper()
				if rec.State != state || !rec.HasOrder || rec.Order != o || rec.Fingerprint != o.Fingerprint() || rec.OrderID != first.OrderID {
					t.Errorf("%s = state %v, has order %v, order id %q, symbol %.20q…; want state %v with the order and %s",
						what, rec.State, rec.HasOrder, rec.OrderID, rec.Order.Symbol, state, first.OrderID)
				}
			}
			rec, err := store.Lookup(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			wantOrder("Lookup of the claim", rec, intake.Held)

			first.Stage, first.Attempts, first.NextAttempt = intake.StageSent, 1, c.now.Add(time.Second)
			if err := store.Release(ctx, k, first); err != nil {
				t.Fatal(err)
			}
			rec, err = store.Lookup(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			wantOrder("Lookup of the open key", rec, intake.Open)

			// A retry takes the key over and finds the order it is for.
			rec, err = store.Begin(ctx, k, claimFor(c, "retry", o))
			if err != nil {
				t.Fatal(err)
			}
			wantOrder("the retry's Begin", rec, intake.Held)
			if rec.Took != intake.EventTakeOver {
				t.Errorf("the retry's Begin took %v, want a takeover", rec.Took)
			}
		})
	}
}

// leaveOpen claims k for an order and releases it open, due for the
// settler at due (zero: never, with unresolved).
func leaveOpen(t *testing.T, store *kv.Store, c *settleClock, k intake.Key, due time.Time, unresolved bool) {
	t.Helper()
	ctx := context.Background()
	cl := claimFor(c, k.String(), order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10})
	if rec, err := store.Begin(ctx, k, cl); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("Begin(%v) = %+v, %v; want a claim", k, rec, err)
	}
	cl.Stage, cl.Attempts, cl.NextAttempt = intake.StageSent, 1, due
	if unresolved {
		cl.GiveUp = intake.AwaitingCheck
		if due.IsZero() {
			cl.GiveUp = intake.GivenUp
		}
	}
	if err := store.Release(ctx, k, cl); err != nil {
		t.Fatal(err)
	}
}

// TestOverdueListsOnlyKeysDueForTheSettler: the sweep's list has the open
// keys whose next attempt passed and the claims whose holder did not come
// back by their lease's end, named by client and id (an id may hold a
// colon); never a key due later, an unresolved key, a receipt or the
// reference's claim.
func TestOverdueListsOnlyKeysDueForTheSettler(t *testing.T) {
	ctx := context.Background()
	mem, store, c := newSettleStore()
	start := c.now
	due := start.Add(time.Second)
	colon := intake.Key{Client: "desk-a", ID: "x:y"}
	open := intake.Key{ID: "desk-a:z"} // the open Worker's key
	leaveOpen(t, store, c, colon, due, false)
	leaveOpen(t, store, c, open, due, false)
	leaveOpen(t, store, c, intake.Key{Client: "desk-b", ID: "later"}, start.Add(time.Hour), false)
	leaveOpen(t, store, c, intake.Key{Client: "desk-a", ID: "gave-up"}, time.Time{}, true)

	held := intake.Key{Client: "desk-c", ID: "held"}
	if _, err := store.Begin(ctx, held, claimFor(c, "held", order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1})); err != nil {
		t.Fatal(err)
	}
	// A receipt whose claim was released after it, as KV mode does by
	// default.
	stored := intake.Key{Client: "desk-a", ID: "stored"}
	sc := claimFor(c, "stored", order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1})
	if _, err := store.Begin(ctx, stored, sc); err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(ctx, stored, sc, intake.Result{Body: []byte(`{"orderId":"order-stored"}`), Fingerprint: sc.Fingerprint, TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := store.Release(ctx, stored, sc); err != nil {
		t.Fatal(err)
	}
	// The reference's claim, and a receipt it stored.
	if err := mem.Put(ctx, "pending:ref", kv.Entry{Value: "1"}, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
		t.Fatal(err)
	}
	if err := mem.Put(ctx, "result:ref-done", kv.Entry{Value: `{"orderId":"r"}`}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		at    time.Duration // from start
		limit int
		want  []intake.Key // in KV key order: pending:desk-a:x:y first
	}{
		{"before anything is due", 500 * time.Millisecond, 100, nil},
		{"open keys once due", 2 * time.Second, 100, []intake.Key{colon, open}},
		{"at most the limit", 2 * time.Second, 1, []intake.Key{colon}},
		{"a claim after its lease", kv.MinTTL + time.Second, 100, []intake.Key{colon, open, held}},
		{"a key due later once due", time.Hour + time.Second, 100, []intake.Key{colon, open, {Client: "desk-b", ID: "later"}, held}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.now = start.Add(tc.at)
			// Each case walks from the first key: a walk stopped at its
			// limit goes on after the key it stopped at.
			if err := mem.Delete(ctx, "sweep:cursor"); err != nil {
				t.Fatal(err)
			}
			got, err := store.Overdue(ctx, c.now, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Overdue at +%v = %v, want %v", tc.at, got, tc.want)
			}
		})
	}
}

// TestAClaimLeftBesideItsReceiptIsListedOnceAndDeleted: with
// KV_CLAIM_AFTER_RECEIPT=expire (or a failed delete) the claim outlives
// its lease beside the receipt. The sweep's listing reads nothing per key,
// so it lists the claim; the settler's claim finds the outcome, deletes the
// claim beside it, and the next sweep lists nothing: the sweep's limit is
// not spent again on keys that need nothing.
func TestAClaimLeftBesideItsReceiptIsListedOnceAndDeleted(t *testing.T) {
	ctx := context.Background()
	mem, store, c := newSettleStore()
	k := intake.Key{Client: "desk-a", ID: "done"}
	cl := claimFor(c, "done", order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1})
	if _, err := store.Begin(ctx, k, cl); err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(ctx, k, cl, intake.Result{Body: []byte(`{"orderId":"order-done"}`), Fingerprint: cl.Fingerprint, TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(time.Hour)
	if got, err := store.Overdue(ctx, c.now, 100); err != nil || len(got) != 1 {
		t.Fatalf("Overdue = %v, %v; want the claim past its lease", got, err)
	}
	// An operator's resolve, refused since the outcome is final, changes
	// nothing: the claim stays for the settler.
	rec, err := store.Begin(ctx, k, intake.Claim{Token: "operator", Lease: time.Minute, By: intake.RoleResolver})
	if err != nil || rec.State != intake.Stored {
		t.Fatalf("the resolver's Begin = %v, %v; want Stored", rec.State, err)
	}
	if _, err := mem.Get(ctx, "pending:desk-a:done"); err != nil {
		t.Fatalf("the claim beside the receipt after a resolve's Begin: %v; want it kept", err)
	}
	rec, err = store.Begin(ctx, k, intake.Claim{Token: "settler", Lease: time.Minute, By: intake.RoleSettler})
	if err != nil || rec.State != intake.Stored {
		t.Fatalf("the settler's Begin = %v, %v; want Stored", rec.State, err)
	}
	if _, err := mem.Get(ctx, "pending:desk-a:done"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("the claim beside the receipt: %v; want it deleted", err)
	}
	if got, err := store.Overdue(ctx, c.now, 100); err != nil || len(got) != 0 {
		t.Errorf("Overdue after settling = %v, %v; want none", got, err)
	}
}

// TestAReceiptOutlivesItsClaim: a receipt is kept as long as the claim
// beside it can be, so a claim never outlives its receipt, whatever
// becomes of the claim's delete.
func TestAReceiptOutlivesItsClaim(t *testing.T) {
	ctx := context.Background()
	mem, store, c := newSettleStore()
	k := intake.Key{Client: "desk-a", ID: "kept"}
	cl := claimFor(c, "kept", order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1})
	if _, err := store.Begin(ctx, k, cl); err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(ctx, k, cl, intake.Result{Body: []byte(`{"orderId":"order-kept"}`), Fingerprint: cl.Fingerprint, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, after := range []time.Duration{time.Hour, 24 * time.Hour, cl.KeepUntil.Sub(c.now)} {
		mem.Now = func() time.Time { return c.now.Add(after) }
		_, claimErr := mem.Get(ctx, "pending:desk-a:kept")
		_, receiptErr := mem.Get(ctx, "result:desk-a:kept")
		if claimErr == nil && receiptErr != nil {
			t.Fatalf("%s after the commit the claim is live and the receipt is %v; want the receipt kept as long as the claim", after, receiptErr)
		}
	}
}

// TestOverdueReadsEveryPage lists more keys than one page of KV's list.
func TestOverdueReadsEveryPage(t *testing.T) {
	ctx := context.Background()
	mem, store, c := newSettleStore()
	leaveOpen(t, store, c, intake.Key{ID: "template"}, c.now.Add(time.Second), false)
	e, err := mem.Get(ctx, "pending:template")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1500
	for i := range n {
		if err := mem.Put(ctx, fmt.Sprintf("pending:bulk-%04d", i), e, kv.PutOptions{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	c.now = c.now.Add(time.Minute)
	got, err := store.Overdue(ctx, c.now, 10*n)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n+1 || got[0] != (intake.Key{ID: "bulk-0000"}) || got[n] != (intake.Key{ID: "template"}) {
		t.Fatalf("Overdue listed %d keys, first %v, want %d from bulk-0000 to template", len(got), got[:min(len(got), 1)], n+1)
	}
}

// TestOverdueNeedsANamespaceThatLists: a namespace without List is an
// error, not an empty list that would hide every lost key.
func TestOverdueNeedsANamespaceThatLists(t *testing.T) {
	store := kv.NewStore(&kvtest.Recording{Namespace: kv.NewMemoryNamespace()}, nil)
	if keys, err := store.Overdue(context.Background(), time.Now(), 10); err == nil {
		t.Fatalf("Overdue over a namespace that cannot list = %v, nil; want an error", keys)
	}
}

// TestAHeldClaimOnAnUnresolvedKeyHolds: a client's retry of a key the
// settler gave up on claims it like any other, and for its lease that
// claim holds the key: another request sees it in progress and cannot
// take it over, so no two gateway calls for the key overlap.
func TestAHeldClaimOnAnUnresolvedKeyHolds(t *testing.T) {
	ctx := context.Background()
	_, store, c := newSettleStore()
	k := intake.Key{Client: "desk-a", ID: "unresolved"}
	cl := claimFor(c, "first", order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1})
	if _, err := store.Begin(ctx, k, cl); err != nil {
		t.Fatal(err)
	}
	cl.Stage, cl.GiveUp = intake.StageSent, intake.GivenUp
	if err := store.Release(ctx, k, cl); err != nil {
		t.Fatal(err)
	}
	retry := cl
	retry.Token, retry.Stage, retry.GiveUp = "retry", intake.StageFirm, intake.NotGivenUp
	if rec, err := store.Begin(ctx, k, retry); err != nil || rec.Took != intake.EventTakeOver || rec.GiveUp != intake.GivenUp {
		t.Fatalf("the retry's Begin = %+v, %v; want the unresolved key TookOver", rec, err)
	}
	if rec, err := store.Lookup(ctx, k); err != nil || rec.State != intake.Held {
		t.Errorf("Lookup during the retry = %v, %v; want Held", rec.State, err)
	}
	other := cl
	other.Token, other.Stage, other.GiveUp = "other", intake.StageFirm, intake.NotGivenUp
	if rec, err := store.Begin(ctx, k, other); err != nil || rec.State != intake.Held {
		t.Errorf("another Begin during the retry = %v, %v; want Held, not a takeover", rec.State, err)
	}
}

// TestAFailedClaimNeverDeletesAnOpenKey: a read that found the key free
// may have been stale, missing an open claim. If the new claim's write then
// fails, releasing it must not delete what the write may have replaced:
// the key is left open with the order's id and order, due for the settler.
func TestAFailedClaimNeverDeletesAnOpenKey(t *testing.T) {
	ctx := context.Background()
	mem, _, c := newSettleStore()
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1}
	k := intake.Key{Client: "desk-a", ID: "open"}
	open := claimFor(c, "first", o)
	fresh := kv.NewStore(mem, c.Now)
	if _, err := fresh.Begin(ctx, k, open); err != nil {
		t.Fatal(err)
	}
	open.Stage, open.Attempts, open.NextAttempt = intake.StageSent, 1, c.now.Add(time.Second)
	if err := fresh.Release(ctx, k, open); err != nil {
		t.Fatal(err)
	}

	// A stale read misses the open claim, and the new claim's write fails
	// after it landed.
	stale := &kvtest.Hooked{Namespace: mem, After: func(op kvtest.Op, key string, err error) error {
		if op == kvtest.OpGet && strings.HasPrefix(key, "pending:") {
			return kv.ErrNotFound
		}
		return err
	}}
	faulty := &kvtest.Faulty{Namespace: stale}
	faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "pending:", Nth: 1, Applied: true})
	retry := open
	retry.Token, retry.Stage, retry.Attempts, retry.NextAttempt = "retry", intake.StageFirm, 0, time.Time{}
	if _, err := kv.NewStore(faulty, c.Now).Begin(ctx, k, retry); err == nil {
		t.Fatal("Begin = nil error, want the failed write")
	}
	rec, err := fresh.Lookup(ctx, k)
	if err != nil || rec.State == intake.Absent || rec.OrderID != open.OrderID || !rec.HasOrder || rec.NextAttempt.IsZero() {
		t.Fatalf("Lookup = %+v, %v; want the key kept with %s and its order, due", rec, err, open.OrderID)
	}
}

// TestAReceiptForAnUnresolvedKeyTakesItsClaimAlong: a claim on an
// unresolved key is never due, so no sweep would find one left beside its
// receipt (ReleaseClaims false): Commit deletes it, or the key would be
// listed as unresolved until the claim expired.
func TestAReceiptForAnUnresolvedKeyTakesItsClaimAlong(t *testing.T) {
	ctx := context.Background()
	mem, store, c := newSettleStore()
	k := intake.Key{Client: "desk-a", ID: "late"}
	leaveOpen(t, store, c, k, time.Time{}, true)
	c.now = c.now.Add(2 * time.Second)
	retry := claimFor(c, "retry", order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10})
	rec, err := store.Begin(ctx, k, retry)
	if err != nil || rec.Took != intake.EventTakeOver || rec.GiveUp != intake.GivenUp {
		t.Fatalf("the retry's Begin = %+v, %v; want the unresolved key TookOver", rec, err)
	}
	retry.OrderID, retry.AcceptedAt, retry.GiveUp = rec.OrderID, rec.AcceptedAt, intake.GivenUp
	c.now = c.now.Add(2 * time.Second)
	if err := store.Commit(ctx, k, retry, intake.Result{Body: []byte(`{"orderId":"order-desk-a:late"}`), Fingerprint: retry.Fingerprint, TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Get(ctx, "pending:desk-a:late"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("the claim beside the receipt: %v; want it deleted", err)
	}
}

// TestAFailedTakeoverGivenBackSendsASettleMessage: a retry found the key
// awaiting the give-up's check, its due time past: a stale read of a key
// whose check has given up on it since, which ended the chain of settle
// messages for that time. The retry's claim write failed before it
// landed, and the key was written back as the read found it: due, with no
// message coming, so it waited minutes for the sweep (found by a long
// simulation, KV, -rapid.seed=19281288752). The retry now sends a
// message, which settles a due key at once and ends at once on one that
// is not due.
func TestAFailedTakeoverGivenBackSendsASettleMessage(t *testing.T) {
	ctx := context.Background()
	mem, store, c := newSettleStore()
	k := intake.Key{Client: "desk-a", ID: "checked"}
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	open := claimFor(c, "first", o)
	if _, err := store.Begin(ctx, k, open); err != nil {
		t.Fatal(err)
	}
	open.Stage, open.Attempts, open.GiveUp, open.NextAttempt = intake.StageSent, 2, intake.AwaitingCheck, c.now.Add(time.Minute)
	if err := store.Release(ctx, k, open); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(5 * time.Minute)
	faulty := &kvtest.Faulty{Namespace: mem}
	faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "pending:", Nth: 1}) // the retry's claim; its write-back lands
	var scheduled []time.Time
	svc := intake.New(kv.NewStore(faulty, c.Now), intake.Options{ResultTTL: 24 * time.Hour, PendingTTL: kv.MinTTL, SettleMaxAge: time.Hour,
		Gateway: noCalls{t}, Now: c.Now, Schedule: func(_ context.Context, _ intake.Key, at time.Time) error {
			scheduled = append(scheduled, at)
			return nil
		}})
	if _, err := svc.Submit(ctx, k, o.JSON(), ""); !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("Submit = %v; want storage unavailable, its claim not written", err)
	}
	if rec, err := store.Lookup(ctx, k); err != nil || rec.State != intake.Open || rec.GiveUp != intake.AwaitingCheck || rec.NextAttempt.After(c.now) {
		t.Fatalf("Lookup = %v %v due %v, %v; want the key written back awaiting its check, due", rec.State, rec.GiveUp, rec.NextAttempt, err)
	}
	if len(scheduled) != 1 || scheduled[0].After(c.now) {
		t.Errorf("Schedule told %v; want one message, due now", scheduled)
	}
}

// accepts is a gateway that places every order.
type accepts struct{}

func (accepts) Place(context.Context, intake.Placement) error { return nil }

// TestAFailedTakeoverIsRememberedAsTheKeyItTookOver: a retry's takeover
// write fails, and its isolate remembers the key it left open (opened),
// for a retry there whose read is stale. It remembers the key's own time,
// attempts and give-up, which the key still holds, not its fresh claim's:
// a later retry that reads the key stale, as free, places the order with
// the time an earlier answer may have given, and one receipt results
// (found by a review: the fresh claim's time was remembered).
func TestAFailedTakeoverIsRememberedAsTheKeyItTookOver(t *testing.T) {
	ctx := context.Background()
	mem, store, c := newSettleStore()
	k := intake.Key{Client: "desk-a", ID: "remembered"}
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	first := c.now
	open := claimFor(c, "first", o)
	open.OrderID = intake.OrderIDFor(k, o.Fingerprint())
	if _, err := store.Begin(ctx, k, open); err != nil {
		t.Fatal(err)
	}
	open.Stage, open.Attempts, open.NextAttempt = intake.StageSent, 3, c.now.Add(time.Minute)
	if err := store.Release(ctx, k, open); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(5 * time.Minute)
	faulty := &kvtest.Faulty{Namespace: mem}
	faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "pending:", Nth: 1}) // the retry's takeover; its write-back lands
	svc := intake.New(kv.NewStore(faulty, c.Now), intake.Options{ResultTTL: 24 * time.Hour, PendingTTL: kv.MinTTL, SettleMaxAge: time.Hour,
		Gateway: accepts{}, Now: c.Now})
	if _, err := svc.Submit(ctx, k, o.JSON(), ""); !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("Submit = %v; want storage unavailable, its takeover not written", err)
	}
	// The next retry's read is stale: it finds the key free.
	if err := mem.Delete(ctx, "pending:"+k.String()); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(2 * time.Second)
	out, err := svc.Submit(ctx, k, o.JSON(), "")
	if err != nil {
		t.Fatalf("the retry: %v", err)
	}
	var receipt struct{ AcceptedAt time.Time }
	if err := json.Unmarshal(out.Receipt, &receipt); err != nil || !receipt.AcceptedAt.Equal(first) || out.OrderID != open.OrderID {
		t.Errorf("the retry's receipt %s (%v); want the key's order %s accepted at %v", out.Receipt, err, open.OrderID, first)
	}
}
