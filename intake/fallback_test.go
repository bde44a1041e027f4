package intake_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
)

// migration is a Service over a new Store with the old KV namespace as its
// Fallback, as the Worker runs after a switch to the ledger.
type migration struct {
	old   *kvtest.Faulty // the old namespace, over oldKV
	oldKV *kvtest.Recording
	h     *harness // the new Store
	spy   *storeSpy
	svc   *intake.Service
}

// fallbackUntil is when the migration stops consulting the old namespace.
var fallbackUntil = acceptedAt.Add(time.Hour)

func newMigration(t *testing.T, now time.Time) *migration {
	t.Helper()
	m := &migration{h: newHarness(t, intake.Options{})}
	m.oldKV = &kvtest.Recording{Namespace: kv.NewMemoryNamespace()}
	m.old = &kvtest.Faulty{Namespace: m.oldKV, Err: errStorage}
	m.spy = &storeSpy{Store: m.h.store}
	m.svc = intake.New(m.spy, intake.Options{
		ResultTTL:     config.DefaultResultTTL,
		PendingTTL:    config.DefaultPendingTTL,
		Fallback:      kv.NewStore(m.old, nil),
		FallbackUntil: fallbackUntil,
		Now:           func() time.Time { return now },
	})
	return m
}

// putOld stores a receipt in the old namespace, as the reference does.
func (m *migration) putOld(t *testing.T, id, receipt string) {
	t.Helper()
	if err := m.oldKV.Namespace.Put(context.Background(), "result:"+id, kv.Entry{Value: receipt}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestFallback(t *testing.T) {
	const old = `{"orderId":"r1","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`
	ctx := context.Background()

	t.Run("receipt stored before the migration is replayed and copied", func(t *testing.T) {
		m := newMigration(t, acceptedAt)
		m.putOld(t, "k", old)
		out, err := m.svc.Submit(ctx, key("k"), []byte(validBody), "")
		if err != nil || !out.Replayed || string(out.Receipt) != old || out.OrderID != "r1" {
			t.Fatalf("Submit = %s replayed %v id %q, %v; want the old receipt replayed", out.Receipt, out.Replayed, out.OrderID, err)
		}
		m.h.wantReceiptStored(t, "k", []byte(old))
		if w := m.oldKV.Writes(); len(w) != 0 {
			t.Errorf("the old namespace was written: %v, want it read only", w)
		}
		// From now on the new store answers by itself.
		rec, err := m.h.store.Lookup(ctx, key("k"))
		if err != nil || rec.State != intake.Stored || string(rec.Body) != old {
			t.Errorf("new store Lookup = %+v, %v; want the copied receipt", rec, err)
		}
	})
	t.Run("nothing in the fallback places a new order", func(t *testing.T) {
		m := newMigration(t, acceptedAt)
		out, err := m.svc.Submit(ctx, key("k"), []byte(validBody), "")
		if err != nil || out.Replayed {
			t.Fatalf("Submit = replayed %v, %v; want a new order", out.Replayed, err)
		}
		m.h.wantReceiptStored(t, "k", out.Receipt)
		if got := m.oldKV.Count(kvtest.OpGet, "result:k"); got != 1 {
			t.Errorf("old receipt reads = %d, want 1", got)
		}
	})
	t.Run("after FallbackUntil the fallback is not consulted", func(t *testing.T) {
		m := newMigration(t, fallbackUntil)
		m.putOld(t, "k", old)
		out, err := m.svc.Submit(ctx, key("k"), []byte(validBody), "")
		if err != nil || out.Replayed {
			t.Fatalf("Submit = %s replayed %v, %v; want a new order", out.Receipt, out.Replayed, err)
		}
		if _, err := m.svc.Lookup(ctx, key("other")); !errors.Is(err, intake.ErrNotFound) {
			t.Errorf("Lookup error = %v, want ErrNotFound", err)
		}
		if got := m.oldKV.Calls(); len(got) != 0 {
			t.Errorf("old namespace calls = %v, want none", got)
		}
	})
	t.Run("failed fallback read is unavailable and frees the key", func(t *testing.T) {
		m := newMigration(t, acceptedAt)
		m.old.Set(kvtest.Fault{Op: kvtest.OpGet})
		_, err := m.svc.Submit(ctx, key("k"), []byte(validBody), "")
		if !errors.Is(err, intake.ErrStorageUnavailable) {
			t.Fatalf("Submit error = %v, want ErrUnavailable", err)
		}
		if got, want := m.spy.Calls(), map[string]int{"Begin": 1, "Release": 1}; !maps.Equal(got, want) {
			t.Errorf("Store calls = %v, want %v", got, want)
		}
		if _, ok := m.h.stored(t, "pending:k"); ok {
			t.Errorf("pending:k left behind, want the claim released")
		}
	})
	t.Run("Lookup finds the old receipt without copying it", func(t *testing.T) {
		m := newMigration(t, acceptedAt)
		m.putOld(t, "k", old)
		out, err := m.svc.Lookup(ctx, key("k"))
		if err != nil || !out.Replayed || string(out.Receipt) != old {
			t.Fatalf("Lookup = %s replayed %v, %v; want the old receipt replayed", out.Receipt, out.Replayed, err)
		}
		m.h.wantNoWrites(t, "Lookup", 0)
		if w := m.oldKV.Writes(); len(w) != 0 {
			t.Errorf("the old namespace was written: %v", w)
		}
	})
	t.Run("Lookup of a key in neither is not found", func(t *testing.T) {
		m := newMigration(t, acceptedAt)
		if _, err := m.svc.Lookup(ctx, key("k")); !errors.Is(err, intake.ErrNotFound) {
			t.Errorf("Lookup error = %v, want ErrNotFound", err)
		}
	})
}

// migrating is a migration from KV to the ledger on a fake clock: the old
// namespace keeps key "k" open with order id order-x for validBody, and the
// ledger is empty.
func migrating(t *testing.T) (*fakeClock, *kv.MemoryNamespace, *ledger.MemoryStore) {
	t.Helper()
	clock := &fakeClock{now: acceptedAt}
	old := kv.NewMemoryNamespace()
	old.Now = clock.Now
	openInOldNamespace(t, old, clock.Now, key("k"), validBody, "order-x")
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	return clock, old, mem
}

// openInOldNamespace leaves key open in a KV namespace with orderID for
// the order in body, as KV mode does after an unknown outcome, before a
// migration to the ledger.
func openInOldNamespace(t *testing.T, ns kv.Namespace, now func() time.Time, k intake.Key, body, orderID string) {
	t.Helper()
	ctx := context.Background()
	o, err := order.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	store := kv.NewStore(ns, now)
	c := intake.Claim{Token: "old", Fingerprint: o.Fingerprint(), Order: o, OrderID: orderID, AcceptedAt: now(),
		Lease: config.DefaultPendingTTL, KeepUntil: now().Add(keepWindow)}
	if rec, err := store.Begin(ctx, k, c); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("old Begin = %+v, %v; want a claim", rec, err)
	}
	c.Stage = intake.StageSent
	if err := store.Release(ctx, k, c); err != nil {
		t.Fatal(err)
	}
	if rec, err := store.Lookup(ctx, k); err != nil || rec.State != intake.Open || rec.OrderID != orderID {
		t.Fatalf("old Lookup = %+v, %v; want Open with %s", rec, err, orderID)
	}
}

// TestFallbackOrderIDIsNotAdoptedByAnotherOrder: during a migration, an
// order id the old KV namespace keeps open for one order is never taken by
// a different order under the same key.
func TestFallbackOrderIDIsNotAdoptedByAnotherOrder(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	g := &gatewayDouble{}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: g, Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(time.Hour)})
	if _, err := svc.Submit(ctx, key("k"), []byte(otherBody), ""); !errors.Is(err, intake.ErrKeyReused) {
		t.Errorf("a different order = %v, want ErrKeyReused", err)
	}
	if calls := g.placements(); len(calls) != 0 {
		t.Fatalf("gateway calls %+v, want none for a different order", calls)
	}
	out, err := svc.Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil || out.OrderID != "order-x" {
		t.Fatalf("the order the old namespace kept = %s, %v; want the receipt of order-x", out.OrderID, err)
	}
}

// TestFallbackOrderIDReachesTheLedgerBeforeTheGateway: an order id adopted
// from the old KV namespace is the ledger's before the first gateway call,
// so a retry after the isolate died at the gateway sends it again, not the
// ledger's own.
func TestFallbackOrderIDReachesTheLedgerBeforeTheGateway(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	g := &idRecorder{answer: func(n int, _ intake.Placement) error {
		if n == 1 {
			panic(isolateKilled{}) // nothing after the call runs: no release
		}
		return nil
	}}
	// Each request reaches a new instance, with no memory of the last.
	instance := func() *intake.Service {
		return intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
			Gateway: g, Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(time.Hour)})
	}
	if !dies(func() { instance().Submit(ctx, key("k"), []byte(validBody), "") }) {
		t.Fatal("the first Submit returned; want the isolate killed at the gateway")
	}
	clock.Advance(config.DefaultPendingTTL + time.Second) // the dead request's lease
	out, err := instance().Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil {
		t.Fatalf("the retry = %v, want the receipt", err)
	}
	ids := g.orderIDs()
	if id := wantOneOrderID(t, ids, 2); id != "order-x" || out.OrderID != "order-x" {
		t.Fatalf("gateway calls carried %v and the receipt %s, want order-x, the id the old namespace kept", ids, out.OrderID)
	}
}

// TestAnAdoptedOrderIDIsNeverLostToTheLedgersOwn: during a migration the
// ledger's first claim on a key is tentative until the old namespace was
// asked. If writing the old namespace's order id into the ledger fails,
// and so does every release, the claim lapses with its lease: the settler
// finds nothing due, and the retry adopts the old order id again. The
// gateway only ever sees that one.
func TestAnAdoptedOrderIDIsNeverLostToTheLedgersOwn(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	releases := 0
	mem.RoundTrip = func(_ context.Context, method string, apply func()) error {
		if method == "release" && releases < 10 {
			releases++
			return errStorage
		}
		apply()
		return nil
	}
	g := &idRecorder{answer: func(int, intake.Placement) error { return nil }}
	svc := func() *intake.Service {
		return intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
			Gateway: g, Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(time.Hour)})
	}
	if _, err := svc().Submit(ctx, key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("Submit while every release fails = %v, want ErrStorageUnavailable", err)
	}
	clock.Advance(config.DefaultPendingTTL + time.Second)
	if due := mem.DueKeys(10); len(due) != 0 {
		t.Fatalf("keys due for the settler after the lease = %v, want none: the tentative claim never reached the gateway", due)
	}
	releases = 10 // storage is back
	out, err := svc().Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil || out.OrderID != "order-x" {
		t.Fatalf("the retry = %s, %v; want the receipt of order-x", out.OrderID, err)
	}
	if ids := g.orderIDs(); len(ids) != 1 || ids[0] != "order-x" {
		t.Fatalf("gateway calls carried %v, want only order-x", ids)
	}
}

// TestPurgeDuringMigrationFreesTheKey: while the Fallback is consulted,
// the operator sees and purges a receipt wherever it is held, in the new
// Store, the old namespace or both, and the key's next request is a new
// order, never the old receipt copied back.
func TestPurgeDuringMigrationFreesTheKey(t *testing.T) {
	const old = `{"orderId":"r1","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`
	ctx := context.Background()
	for _, copied := range []bool{false, true} {
		name := "a receipt held only in the old namespace"
		if copied {
			name = "a receipt copied to the new store"
		}
		t.Run(name, func(t *testing.T) {
			oldKV := kv.NewMemoryNamespace()
			if err := oldKV.Put(ctx, "result:k", kv.Entry{Value: old}, kv.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			store := ledger.NewMemoryStore()
			store.Now = func() time.Time { return acceptedAt }
			svc := intake.New(store, intake.Options{
				ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
				Fallback: kv.NewStore(oldKV, nil), FallbackUntil: fallbackUntil,
				Now: func() time.Time { return acceptedAt },
			})
			admin := intake.NewAdmin(svc, store)
			if copied {
				if out, err := svc.Submit(ctx, key("k"), []byte(validBody), ""); err != nil || !out.Replayed {
					t.Fatalf("Submit = replayed %v, %v; want the old receipt", out.Replayed, err)
				}
			}
			if rec, err := admin.Inspect(ctx, key("k")); err != nil || rec.State != intake.Stored || string(rec.Body) != old {
				t.Fatalf("Inspect = %+v, %v; want the old receipt", rec, err)
			}
			if rec, err := admin.Purge(ctx, key("k"), ""); err != nil || rec.State != intake.Stored || string(rec.Body) != old {
				t.Fatalf("Purge = %+v, %v; want the old receipt purged", rec, err)
			}
			if _, err := admin.Inspect(ctx, key("k")); !errors.Is(err, intake.ErrNotFound) {
				t.Errorf("Inspect after the purge = %v, want ErrNotFound", err)
			}
			// A new instance, whose memory holds nothing of the key.
			fresh := intake.New(store, intake.Options{
				ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
				Fallback: kv.NewStore(oldKV, nil), FallbackUntil: fallbackUntil,
				Now: func() time.Time { return acceptedAt },
			})
			out, err := fresh.Submit(ctx, key("k"), []byte(validBody), "")
			if err != nil || out.Replayed || out.OrderID == "r1" {
				t.Errorf("the next request = replayed %v, order %q, %v; want a new order", out.Replayed, out.OrderID, err)
			}
		})
	}
}

// TestAKeyLeftOpenInKVIsAdoptedAndSettled: a key the KV-mode Worker left
// open (its OMS answer lost) whose client never comes back is adopted by
// ledger mode during the migration: claimed in the ledger with KV's order
// id, time and order, due at once, and settled by the ledger's settler
// with the same order id. The old namespace is never written, and a key
// adopted once is left alone after.
func TestAKeyLeftOpenInKVIsAdoptedAndSettled(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	oldMem := kv.NewMemoryNamespace()
	oldMem.Now = clock.Now
	oldKV := &kvtest.Recording{Namespace: oldMem}
	g := &scriptedGateway{clock: clock}
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g, Now: clock.Now}

	// KV mode leaves the key open.
	before := intake.New(kv.NewStore(oldMem, clock.Now), opts)
	g.answer(errLost)
	if _, err := before.Submit(ctx, deskKey, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("KV mode's Submit = %v, want ErrOutcomeUnknown", err)
	}
	orderID := g.placements()[0].OrderID

	// The switch: ledger mode with the old namespace as its fallback.
	clock.Advance(time.Minute)
	ledgerStore := ledger.NewMemoryStore()
	ledgerStore.Now = clock.Now
	opts.Fallback, opts.FallbackUntil = kv.NewStore(oldKV, clock.Now), clock.Now().Add(48*time.Hour)
	after := intake.New(ledgerStore, opts)
	writes := len(oldKV.Writes())
	adopted, err := after.Adopt(ctx, deskKey)
	if err != nil || !adopted {
		t.Fatalf("Adopt = %v, %v; want the key adopted", adopted, err)
	}
	rec, err := ledgerStore.Lookup(ctx, deskKey)
	if err != nil || rec.State != intake.Open || rec.OrderID != orderID || !rec.AcceptedAt.Equal(acceptedAt) || rec.Attempts != 1 {
		t.Fatalf("the ledger's record = %+v, %v; want open with %s, accepted at %v, 1 attempt", rec, err, orderID, acceptedAt)
	}
	if keys := ledgerStore.DueKeys(10); len(keys) != 1 || keys[0] != deskKey {
		t.Fatalf("due keys = %v, want the adopted key", keys)
	}
	if again, err := after.Adopt(ctx, deskKey); err != nil || again {
		t.Errorf("a second Adopt = %v, %v; want the key left alone", again, err)
	}
	st, err := after.Settle(ctx, deskKey)
	if err != nil || st.Result != intake.SettleAccepted {
		t.Fatalf("the ledger's settler = %+v, %v; want the receipt stored", st, err)
	}
	wantSamePlacement(t, g.placements())
	if w := oldKV.Writes(); len(w) != writes {
		t.Errorf("the old namespace was written: %v", w[writes:])
	}
}

// TestAKeyKVGaveUpOnLongAgoIsAdoptedNotDropped: KV mode keeps a key it
// gave up on for RESULT_TTL past the give-up, beyond its acceptance's
// SETTLE_MAX_AGE + RESULT_TTL. Adopted after that, the key stays in the
// ledger, open and due: a row kept only until its acceptance's KeepUntil
// would expire at once, and the key would be stranded in KV, adopted and
// dropped by every sweep (found by a long simulation, seed
// 7786317966684427475, ledger mode, migrating).
func TestAKeyKVGaveUpOnLongAgoIsAdoptedNotDropped(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	clock, oldMem, g, opts, before := unknownInKVMode(t, maxAge)
	gaveUp := false
	for range 10 {
		g.answer(errLost)
		st, err := before.Settle(ctx, deskKey)
		if err != nil {
			t.Fatalf("KV mode's Settle = %v", err)
		}
		if st.Final && st.Unresolved {
			gaveUp = true
			break
		}
		clock.Advance(3 * time.Minute)
	}
	if !gaveUp {
		t.Fatal("KV mode's settler never gave up")
	}
	// Past the acceptance's KeepUntil, within the give-up's.
	clock.Advance(config.DefaultResultTTL - 2*time.Minute)
	if !clock.Now().After(acceptedAt.Add(maxAge + config.DefaultResultTTL)) {
		t.Fatal("the test's clock is not past the acceptance's KeepUntil")
	}

	ledgerStore := ledger.NewMemoryStore()
	ledgerStore.Now = clock.Now
	opts.Fallback, opts.FallbackUntil = kv.NewStore(oldMem, clock.Now), clock.Now().Add(48*time.Hour)
	after := intake.New(ledgerStore, opts)
	adopted, err := after.Adopt(ctx, deskKey)
	if err != nil || !adopted {
		t.Fatalf("Adopt = %v, %v; want the key adopted", adopted, err)
	}
	if rec, err := ledgerStore.Lookup(ctx, deskKey); err != nil || rec.State != intake.Open {
		t.Fatalf("the ledger's record = %+v, %v; want the key open, kept", rec, err)
	}
	if keys := ledgerStore.DueKeys(10); len(keys) != 1 || keys[0] != deskKey {
		t.Errorf("due keys = %v, want the adopted key", keys)
	}
	// The ledger's alarm comes a while later: past the adopting claim's
	// lease, when a row kept only until a KeepUntil gone by has expired.
	clock.Advance(config.DefaultPendingTTL + time.Second)
	g.answer(nil)
	if st, err := after.Settle(ctx, deskKey); err != nil || st.Result != intake.SettleAccepted {
		t.Errorf("the ledger's settler = %+v, %v; want the OMS asked and the receipt stored", st, err)
	}
}

// TestTheSettlerGivesUpOnNoOrderKVKnowsWasAccepted: during a migration a
// request whose read of KV lagged behind KV mode's receipt places the
// order again in the ledger, under the same order id, and the OMS is down
// until past SETTLE_MAX_AGE. The ledger's settler, before it gives up,
// finds KV's receipt for that order id and stores it, byte for byte,
// instead of paging an operator about an accepted order (found by a long
// simulation, seed 4871404537638538006, ledger mode, migrating).
func TestTheSettlerGivesUpOnNoOrderKVKnowsWasAccepted(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	clock, oldMem, g, opts := settling(maxAge)
	reports := 0
	opts.ReportUnresolved = func(context.Context, intake.Key, intake.Placement, int) error { reports++; return nil }
	ledgerStore := ledger.NewMemoryStore()
	ledgerStore.Now = clock.Now
	migrating := opts
	migrating.Fallback, migrating.FallbackUntil = kv.NewStore(oldMem, clock.Now), clock.Now().Add(48*time.Hour)
	after := intake.New(ledgerStore, migrating)

	// The ledger-mode request, whose read of KV missed the receipt below.
	g.answer(errLost)
	if _, err := after.Submit(ctx, deskKey, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("the ledger's Submit = %v, want ErrOutcomeUnknown", err)
	}
	g.answer(nil)
	kvMode := intake.New(kv.NewStore(oldMem, clock.Now), opts)
	if _, err := kvMode.Submit(ctx, deskKey, []byte(validBody), ""); err != nil {
		t.Fatalf("KV mode's Submit = %v", err)
	}
	stored, err := kv.NewStore(oldMem, clock.Now).Lookup(ctx, deskKey)
	if err != nil || stored.State != intake.Stored {
		t.Fatalf("KV's record = %+v, %v; want its receipt", stored, err)
	}
	wantSamePlacement(t, g.placements())

	clock.Advance(maxAge + time.Minute)
	calls := len(g.placements())
	g.answer(errLost)
	st, err := after.Settle(ctx, deskKey)
	if err != nil || !st.Final || st.Unresolved || st.Result != intake.SettleAccepted {
		t.Fatalf("the ledger's settler = %+v, %v; want KV's receipt stored", st, err)
	}
	if reports != 0 {
		t.Errorf("%d pages for an order KV holds the receipt of", reports)
	}
	if n := len(g.placements()); n != calls {
		t.Errorf("the settler called the gateway %d more times, want none: KV had the outcome", n-calls)
	}
	rec, err := ledgerStore.Lookup(ctx, deskKey)
	if err != nil || rec.State != intake.Stored || string(rec.Body) != string(stored.Body) {
		t.Errorf("the ledger's record = %+v, %v; want KV's receipt %s", rec, err, stored.Body)
	}
}

// unknownInKVMode is settling's, with KV mode's Service over the namespace,
// which left deskKey's order unknown maxAge ago: its settler's next call
// is its last.
func unknownInKVMode(t *testing.T, maxAge time.Duration) (*fakeClock, *kv.MemoryNamespace, *scriptedGateway, intake.Options, *intake.Service) {
	t.Helper()
	clock, oldMem, g, opts := settling(maxAge)
	before := intake.New(kv.NewStore(oldMem, clock.Now), opts)
	g.answer(errLost)
	if _, err := before.Submit(context.Background(), deskKey, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("KV mode's Submit = %v, want ErrOutcomeUnknown", err)
	}
	clock.Advance(maxAge)
	return clock, oldMem, g, opts, before
}

// settling is a KV namespace on a test clock and the options of a Service
// with a scripted gateway whose settler gives up after maxAge.
func settling(maxAge time.Duration) (*fakeClock, *kv.MemoryNamespace, *scriptedGateway, intake.Options) {
	clock := &fakeClock{now: acceptedAt}
	mem := kv.NewMemoryNamespace()
	mem.Now = clock.Now
	g := &scriptedGateway{clock: clock}
	return clock, mem, g, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, SettleMaxAge: maxAge, Gateway: g, Now: clock.Now}
}

// TestTheSettlersLastCallGoesOutWhileKVIsDown: during a migration, a key
// past SETTLE_MAX_AGE, and KV's copy out of reach. The settler calls the
// OMS all the same and, when that call fails too, holds the give-up back
// until it has read KV: the key stays open, due after the backoff, and
// nothing is paged. It neither gives up blind nor loops on KV every
// second without asking the OMS.
func TestTheSettlersLastCallGoesOutWhileKVIsDown(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	clock, oldMem, g, opts := settling(maxAge)
	reports := 0
	opts.ReportUnresolved = func(context.Context, intake.Key, intake.Placement, int) error { reports++; return nil }
	down := &kvtest.Faulty{Namespace: oldMem, Err: errStorage}
	ledgerStore := ledger.NewMemoryStore()
	ledgerStore.Now = clock.Now
	opts.Fallback, opts.FallbackUntil = kv.NewStore(down, clock.Now), clock.Now().Add(48*time.Hour)
	svc := intake.New(ledgerStore, opts)
	g.answer(errLost)
	if _, err := svc.Submit(ctx, deskKey, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
	}
	clock.Advance(maxAge + time.Minute)
	down.Set(kvtest.Fault{Op: kvtest.OpGet})
	calls := len(g.placements())
	g.answer(errLost)
	st, err := svc.Settle(ctx, deskKey)
	if err != nil || st.Final || st.Unresolved || st.Result != intake.SettleUnknown || !st.NextAttempt.After(clock.Now()) {
		t.Errorf("the settler = %+v, %v; want the call made, the key open and due after the backoff", st, err)
	}
	if n := len(g.placements()); n != calls+1 {
		t.Errorf("the settler called the OMS %d times, want once", n-calls)
	}
	if reports != 0 {
		t.Errorf("%d pages while KV could not be read, want none", reports)
	}
	down.Set()
	clock.Advance(intake.MaxSettleDelay)
	g.answer(nil)
	if st, err := svc.Settle(ctx, deskKey); err != nil || st.Result != intake.SettleAccepted {
		t.Errorf("the settler once KV is back = %+v, %v; want the receipt stored", st, err)
	}
}

// TestAnAdoptionWhoseReleaseFailsLeavesNothingDue: the adoption sweep's
// claim of a key KV left open is tentative until it is released open. If
// that release fails, the claim frees the key at its lease's end, and
// nothing is due for the settler: a purge may have erased the key in
// between, and a claim left due would have the settler store the erased
// receipt again (found by a long simulation, seed 17165617611116033371,
// ledger mode, migrating). Adopt says it adopted nothing, so that no
// kv_adopted line names the key; the next sweep adopts it.
func TestAnAdoptionWhoseReleaseFailsLeavesNothingDue(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	mem.RoundTrip = func(ctx context.Context, method string, apply func()) error {
		if method == "release" {
			return errStorage
		}
		apply()
		return nil
	}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: &scriptedGateway{clock: clock}, Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	if adopted, err := svc.Adopt(ctx, key("k")); adopted || !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Errorf("Adopt whose release failed = %v, %v; want nothing adopted, storage unavailable", adopted, err)
	}
	clock.Advance(config.DefaultPendingTTL + time.Second)
	if keys := mem.DueKeys(10); len(keys) != 0 {
		t.Errorf("keys due after an adoption whose release failed: %v, want none", keys)
	}
	if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Absent {
		t.Errorf("the ledger's record = %v, %v; want the key free", rec.State, err)
	}
	mem.RoundTrip = nil
	if adopted, err := svc.Adopt(ctx, key("k")); err != nil || !adopted {
		t.Errorf("the next Adopt = %v, %v; want the key adopted", adopted, err)
	}
}

// TestAnAdoptionReleasedAfterItsLeaseEndedLeavesTheKeyFree: an adoption
// whose release comes after its tentative claim's lease ended (a KV read
// slower than the lease) holds nothing: the key was free again, and the
// release leaves it so, rather than open and due for the settler, which
// would place an order a purge may have erased meanwhile. Nor is it a move
// the table lacks: the next sweep adopts the key again.
func TestAnAdoptionReleasedAfterItsLeaseEndedLeavesTheKeyFree(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	mem.RoundTrip = func(ctx context.Context, method string, apply func()) error {
		if method == "release" {
			clock.Advance(config.DefaultPendingTTL + time.Second)
		}
		apply()
		return nil
	}
	var releaseErrs []error
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: &scriptedGateway{clock: clock}, Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(48 * time.Hour),
		OnReleaseError: func(_ intake.Key, err error) { releaseErrs = append(releaseErrs, err) }})
	svc.Adopt(ctx, key("k"))
	if len(releaseErrs) != 0 {
		t.Errorf("the late release failed: %v; want it to change nothing", releaseErrs)
	}
	if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Absent {
		t.Errorf("the ledger's record = %v, %v; want the key free", rec.State, err)
	}
	if keys := mem.DueKeys(10); len(keys) != 0 {
		t.Errorf("keys due after the late release: %v, want none", keys)
	}
	mem.RoundTrip = nil
	if adopted, err := svc.Adopt(ctx, key("k")); err != nil || !adopted {
		t.Errorf("the next Adopt = %v, %v; want the key adopted", adopted, err)
	}
}

// TestAnAdoptionDeletesAClaimLeftBesideKVsOutcome: a claim KV keeps beside
// the outcome it stores (a settler's stale read wrote it again after the
// commit, and it may outlive the outcome) is deleted by the adoption
// sweep, as KV mode's settler would: once the outcome expired it would
// open the key again, and the ledger would adopt and settle an order
// whose outcome was told long before (invariant: a key whose outcome is
// stored never opens again; seed 1297596009150718410, ledger, migrating).
func TestAnAdoptionDeletesAClaimLeftBesideKVsOutcome(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	fallback := kv.NewStore(old, clock.Now)
	receipt := []byte(`{"orderId":"order-x","status":"accepted"}`)
	clock.Advance(time.Second)
	if err := fallback.Commit(ctx, key("k"), intake.Claim{}, intake.Result{Body: receipt, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: &scriptedGateway{clock: clock}, Now: clock.Now, Fallback: fallback, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	if adopted, err := svc.Adopt(ctx, key("k")); err != nil || adopted {
		t.Fatalf("Adopt = %v, %v; want nothing adopted", adopted, err)
	}
	if _, err := old.Get(ctx, "pending:k"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("KV's claim beside its outcome: %v; want it deleted", err)
	}
	if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Absent {
		t.Errorf("the ledger's record = %v, %v; want nothing: KV's outcome is served from KV", rec.State, err)
	}
	clock.Advance(2 * time.Hour)
	if rec, err := fallback.Lookup(ctx, key("k")); err != nil || rec.State != intake.Absent {
		t.Errorf("KV once its outcome expired = %v, %v; want the key free, not open again", rec.State, err)
	}
}

// TestTheSettlerSettlesItsOwnOrderIDBesideKVsReceiptOfAnother: KV holds a
// receipt for the same order under another order id (an older version's,
// which a ledger-mode request's stale read of KV missed, so the order went
// out again under the ledger's own). Before its last call the settler must
// not store KV's receipt as the key's: its own order id, which the OMS
// may have accepted, would never be asked about or reported. It calls the
// OMS with it (found by a review: no test caught this).
func TestTheSettlerSettlesItsOwnOrderIDBesideKVsReceiptOfAnother(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	clock, oldMem, g, opts := settling(maxAge)
	ledgerStore := ledger.NewMemoryStore()
	ledgerStore.Now = clock.Now
	migrating := opts
	migrating.Fallback, migrating.FallbackUntil = kv.NewStore(oldMem, clock.Now), clock.Now().Add(48*time.Hour)
	after := intake.New(ledgerStore, migrating)
	g.answer(errLost)
	if _, err := after.Submit(ctx, deskKey, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("the ledger's Submit = %v, want ErrOutcomeUnknown", err)
	}
	own := g.placements()[0].OrderID

	o := parsedValid(t)
	legacy := order.Receipt{OrderID: "legacy-1", Status: order.StatusAccepted, Order: o, AcceptedAt: acceptedAt}.JSON()
	kvs := kv.NewStore(oldMem, clock.Now)
	old := intake.Claim{Token: "old", Fingerprint: o.Fingerprint(), Lease: config.DefaultPendingTTL}
	if _, err := kvs.Begin(ctx, deskKey, old); err != nil {
		t.Fatal(err)
	}
	if err := kvs.Commit(ctx, deskKey, old, intake.Result{Body: legacy, Fingerprint: o.Fingerprint(), TTL: config.DefaultResultTTL}); err != nil {
		t.Fatal(err)
	}

	clock.Advance(maxAge + time.Minute)
	calls := len(g.placements())
	g.answer(nil)
	if st, err := after.Settle(ctx, deskKey); err != nil || st.Result != intake.SettleAccepted {
		t.Fatalf("the ledger's settler = %+v, %v; want its own order accepted", st, err)
	}
	if p := g.placements(); len(p) != calls+1 || p[len(p)-1].OrderID != own {
		t.Fatalf("the settler's calls %+v; want one more, with the ledger's own %s", p[calls:], own)
	}
	if rec, err := ledgerStore.Lookup(ctx, deskKey); err != nil || rec.State != intake.Stored || intake.OrderIDOf(rec) != own {
		t.Fatalf("the ledger's record = %v %s, %v; want its own order's receipt", rec.State, rec.Body, err)
	}
}
