//go:build js && wasm

package ledger_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"

	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/ledger"
)

// TestClientAdminConformance runs the operator's checks against the real
// Ledger Durable Object in workerd, over 4 shards a client: a listing
// visits each of them.
func TestClientAdminConformance(t *testing.T) {
	storetest.RunAdmin(t, ledger.NewClient(ledgerNamespace(t), 4), "workerd-admin:", storetest.Options{Fenced: true, Atomic: true, Short: time.Second,
		Advance: func(d time.Duration) { time.Sleep(d) }})
}

// TestClientListingReadsWhatItLists: in the real object, listing the 3
// open keys among 300 stored receipts reads about one row per key listed,
// as the runtime counts rows read (the cursor's rowsRead, what a Durable
// Object is billed for). workerd's local counter reports the same over
// the primary key alone, so the index itself is shown by
// TestListingQueryReadsWhatItLists, in SQLite's own step counts.
func TestClientListingReadsWhatItLists(t *testing.T) {
	ns := ledgerNamespace(t)
	ctx := context.Background()
	const client, receipts, open = "rowsread", 300, 3
	store := ledger.NewClient(ns, 1) // one object: every key lands in it
	key := func(prefix string, i int) intake.Key { return intake.Key{Client: client, ID: prefix + strconv.Itoa(i)} }
	for i := range receipts {
		c := intake.Claim{Token: "t" + strconv.Itoa(i), Lease: time.Minute}
		if _, err := store.Begin(ctx, key("done-", i), c); err != nil {
			t.Fatal(err)
		}
		if err := store.Commit(ctx, key("done-", i), c, intake.Result{Body: []byte("r"), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range open {
		c := intake.Claim{Token: "o" + strconv.Itoa(i), Lease: time.Minute, OrderID: "id" + strconv.Itoa(i), AcceptedAt: time.Now(),
			KeepUntil: time.Now().Add(time.Hour)}
		if _, err := store.Begin(ctx, key("open-", i), c); err != nil {
			t.Fatal(err)
		}
		c.Stage, c.Attempts = intake.StageSent, 1
		if err := store.Release(ctx, key("open-", i), c); err != nil {
			t.Fatal(err)
		}
	}
	page, err := store.List(ctx, intake.ListQuery{Clients: []string{client}, States: intake.AnyAttention, Limit: 100})
	if err != nil || len(page.Keys) != open {
		t.Fatalf("List = %d keys, %v; want the %d open ones", len(page.Keys), err, open)
	}
	// The same call as the listing's, to the one object, whose answer
	// says the rows it read.
	res, err := ns.Call(ctx, ledger.ObjectName(key("x", 0), 1), "list", ledger.EncodeList(client, "", intake.AnyAttention, 100))
	if err != nil {
		t.Fatal(err)
	}
	read := ledger.ListRowsRead(res)
	if read < open {
		t.Fatalf("the object says it read %d rows for %d keys listed: it does not count them", read, open)
	}
	t.Logf("listing %d open keys among %d receipts read %d rows: %.1f a key listed", open, receipts, read, float64(read)/open)
	if read > 2*open+2 {
		t.Errorf("the listing read %d rows for %d keys listed, want at most %d: it walked the receipts", read, open, 2*open+2)
	}
}
