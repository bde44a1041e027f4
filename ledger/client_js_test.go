//go:build js && wasm

package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/workers"
)

// ledgerNamespace returns the LEDGER binding that test/conformance's entry
// publishes, or skips: elsewhere there is no Durable Object.
func ledgerNamespace(t *testing.T) workers.DurableObjectNamespace {
	ns, ok := workers.Globals().DurableObjectNamespace("LEDGER")
	if !ok {
		t.Skip("no Durable Object namespace: run through test/conformance in wrangler dev")
	}
	return ns
}

// TestClientConformance runs the ledger checks against the real Ledger
// Durable Object in workerd, where time passes for real.
func TestClientConformance(t *testing.T) {
	storetest.Run(t, ledger.NewClient(ledgerNamespace(t), 4), "workerd:", storetest.Options{Fenced: true, Atomic: true, Short: time.Second,
		Advance: func(d time.Duration) { time.Sleep(d) }})
}

// TestClientSweepRunsInWorkerd runs the object's expiry path, the sweep
// that its alarm handler runs, in the real object: rows that expired are deleted and the next
// sweep stays set while rows remain.
func TestClientSweepRunsInWorkerd(t *testing.T) {
	ns := ledgerNamespace(t)
	ctx := context.Background()
	// Shards: 1, so every key lands in the one object whose rows are counted.
	client := ledger.NewClient(ns, 1)
	key := func(id string) intake.Key { return intake.Key{Client: "sweep", ID: id} }
	// rpc calls a method of the one object, as Client does.
	rpc := func(method string) ([]byte, error) {
		return ns.Call(ctx, ledger.ObjectName(key("x"), 1), method, nil)
	}
	stats := func() (int, int64) {
		res, err := rpc("stats")
		if err != nil {
			t.Fatalf("stats: %v", err)
		}
		// jsjson, not encoding/json: TinyGo's reflect cannot decode into
		// a struct.
		s, err := jsjson.Parse(res, "rows", "nextSweep")
		if err != nil {
			t.Fatalf("stats %s: %v", res, err)
		}
		return int(s.Get("rows").Num), int64(s.Get("nextSweep").Num)
	}

	short := intake.Claim{Token: "a", Lease: time.Second}
	long := intake.Claim{Token: "b", Lease: time.Minute}
	for _, c := range []struct {
		id    string
		claim intake.Claim
	}{{"expiring", short}, {"staying", long}} {
		if rec, err := client.Begin(ctx, key(c.id), c.claim); err != nil || rec.Took != intake.EventClaim {
			t.Fatalf("Begin(%s) = %v, %v; want a claim", c.id, rec.State, err)
		}
	}
	if err := client.Commit(ctx, key("staying"), long, intake.Result{Body: []byte("r"), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	rows, next := stats()
	if rows != 2 || next <= now {
		t.Fatalf("before the sweep: %d rows, next sweep %d; want 2 rows and a sweep set after %d", rows, next, now)
	}
	time.Sleep(1200 * time.Millisecond)
	for i := 0; i < 2; i++ { // alarms run at least once: twice must be harmless
		if _, err := rpc("sweep"); err != nil {
			t.Fatalf("sweep #%d: %v", i+1, err)
		}
	}
	rows, next = stats()
	if rows != 1 || next <= time.Now().UnixMilli() {
		t.Fatalf("after the sweep: %d rows, next sweep %d; want the receipt's row and a sweep still set", rows, next)
	}
	if rec, err := client.Lookup(ctx, key("staying")); err != nil || rec.State != intake.Stored || string(rec.Body) != "r" {
		t.Fatalf("the live receipt after the sweep: %v %q %v", rec.State, rec.Body, err)
	}
}
