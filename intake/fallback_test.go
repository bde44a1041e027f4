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
