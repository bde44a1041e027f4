package intake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
)

// TestAPurgeDuringTheMigrationDeletesKVsClaimOnceTheLedgerHoldsTheOutcome:
// KV mode left the key open, the client's retry against the ledger
// Worker settled it there under KV's order id, and KV still holds its
// open claim. The purge deletes that claim too: afterwards the key is
// free everywhere (not unknown), no adoption takes it again, and the
// erased receipt is never stored again.
func TestAPurgeDuringTheMigrationDeletesKVsClaimOnceTheLedgerHoldsTheOutcome(t *testing.T) {
	ctx := context.Background()
	clock, old, mem, g, svc := migratingService(t)
	out, err := svc.Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil || out.OrderID != "order-x" {
		t.Fatalf("the retry against the ledger = %q, %v; want order-x's receipt", out.OrderID, err)
	}
	admin := intake.NewAdmin(svc, mem)
	if rec, err := admin.Purge(ctx, key("k"), ""); err != nil || rec.State != intake.Stored {
		t.Fatalf("Purge = %v, %v; want the receipt purged", rec.State, err)
	}
	if _, err := old.Get(ctx, "pending:k"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("KV's claim after the purge: %v, want it deleted", err)
	}
	if rec, err := admin.Inspect(ctx, key("k")); !errors.Is(err, intake.ErrNotFound) {
		t.Errorf("Inspect after the purge = %v, %v; want ErrNotFound", rec.State, err)
	}
	if _, err := svc.Lookup(ctx, key("k")); !errors.Is(err, intake.ErrNotFound) {
		t.Errorf("Lookup after the purge = %v, want ErrNotFound", err)
	}
	if adopted, err := svc.Adopt(ctx, key("k")); err != nil || adopted {
		t.Errorf("Adopt after the purge = %v, %v; want nothing to adopt", adopted, err)
	}
	clock.Advance(time.Hour)
	if keys := mem.DueKeys(10); len(keys) != 0 {
		t.Errorf("keys due after the purge: %v, want none", keys)
	}
	if n := len(g.placements()); n != 1 {
		t.Errorf("gateway calls = %d, want the retry's one", n)
	}
}

// TestResolveAdoptsAKeyKVModeGaveUpOn: during the migration, a key KV
// mode's settler gave up on (unresolved, due never) is held only in KV.
// The ledger Worker's resolve adopts it first and stores the operator's
// answer under KV's order id, which the client's retry replays.
func TestResolveAdoptsAKeyKVModeGaveUpOn(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	old := kv.NewMemoryNamespace()
	old.Now = clock.Now
	o, err := order.Parse([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	oldStore := kv.NewStore(old, clock.Now)
	c := intake.Claim{Token: "old", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-x", AcceptedAt: acceptedAt,
		Lease: config.DefaultPendingTTL, KeepUntil: acceptedAt.Add(keepWindow)}
	if _, err := oldStore.Begin(ctx, key("k"), c); err != nil {
		t.Fatal(err)
	}
	c.Stage, c.Attempts, c.GiveUp = intake.StageSent, 7, intake.GivenUp
	if err := oldStore.Release(ctx, key("k"), c); err != nil {
		t.Fatal(err)
	}
	svc, admin, _, g := resolvingOver(t, clock, oldStore)
	if rec, err := admin.Inspect(ctx, key("k")); err != nil || rec.GiveUp != intake.GivenUp {
		t.Fatalf("Inspect = %+v, %v; want the key unresolved, from KV", rec, err)
	}
	rec, err := admin.Resolve(ctx, key("k"), intake.Resolution{Status: order.StatusAccepted})
	want := order.Receipt{OrderID: "order-x", Status: order.StatusAccepted, Order: o, AcceptedAt: acceptedAt}.JSON()
	if err != nil || rec.State != intake.Stored || string(rec.Body) != string(want) {
		t.Fatalf("Resolve = %v %s, %v; want %s stored", rec.State, rec.Body, err, want)
	}
	out, err := svc.Submit(ctx, key("k"), []byte(validBody), "")
	if err != nil || !out.Replayed || string(out.Receipt) != string(want) {
		t.Errorf("the client's retry = %s replayed %v, %v; want the resolved receipt", out.Receipt, out.Replayed, err)
	}
	if n := len(g.placements()); n != 0 {
		t.Errorf("gateway calls = %d, want none: the operator answered", n)
	}
}

// TestALookupDuringTheMigrationSaysWhenAReceiptStillInKVExpires: ledger
// mode says when every outcome a lookup finds expires, a receipt still
// held only in KV too: the lookup copies it into the ledger, as a retry
// does, where it is kept RESULT_TTL from then, and says so.
func TestALookupDuringTheMigrationSaysWhenAReceiptStillInKVExpires(t *testing.T) {
	const old = `{"orderId":"r1","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`
	ctx := context.Background()
	clock, oldKV, mem := migrating(t)
	if err := oldKV.Put(ctx, "result:kept", kv.Entry{Value: old}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Now: clock.Now, Fallback: kv.NewStore(oldKV, clock.Now), FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	out, err := svc.Lookup(ctx, key("kept"))
	want := acceptedAt.Add(config.DefaultResultTTL)
	if err != nil || string(out.Receipt) != old || !out.Expires.Equal(want) {
		t.Fatalf("Lookup = %s expires %v, %v; want the old receipt, expiring %v", out.Receipt, out.Expires, err, want)
	}
	if rec, err := mem.Lookup(ctx, key("kept")); err != nil || rec.State != intake.Stored || string(rec.Body) != old {
		t.Errorf("the ledger holds %v %s, %v; want the receipt copied", rec.State, rec.Body, err)
	}
}

// hookedFallback is KV's store as a migration's Fallback, running a hook
// once: after its first Lookup returns, or before its first Purge acts,
// as another isolate's request would step in between.
type hookedFallback struct {
	*kv.Store
	afterLookup, beforePurge func()
}

func (h *hookedFallback) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	rec, err := h.Store.Lookup(ctx, key)
	if f := h.afterLookup; f != nil {
		h.afterLookup = nil
		f()
	}
	return rec, err
}

func (h *hookedFallback) Purge(ctx context.Context, key intake.Key, orderID string) (intake.Record, error) {
	if f := h.beforePurge; f != nil {
		h.beforePurge = nil
		f()
	}
	return h.Store.Purge(ctx, key, orderID)
}

// TestAnAdoptionRacingAPurgeLeavesTheKeyFree: the sweep's adoption read
// KV's open claim, and an operator's purge in another isolate deleted it
// and the ledger's receipt before the adoption's claim reached the
// ledger. The adoption reads KV again once its claim holds the key, finds
// the key free, and lets it go: the purged receipt is not stored again.
func TestAnAdoptionRacingAPurgeLeavesTheKeyFree(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	g := &scriptedGateway{clock: clock}
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g,
		Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(48 * time.Hour)}
	operator := intake.New(mem, opts)
	if _, err := operator.Submit(ctx, key("k"), []byte(validBody), ""); err != nil {
		t.Fatalf("the retry that settles the key in the ledger: %v", err)
	}
	hooked := &hookedFallback{Store: kv.NewStore(old, clock.Now)}
	hooked.afterLookup = func() {
		if _, err := intake.NewAdmin(operator, mem).Purge(ctx, key("k"), "order-x"); err != nil {
			t.Errorf("the purge: %v", err)
		}
	}
	opts.Fallback = hooked
	sweep := intake.New(mem, opts)
	if adopted, err := sweep.Adopt(ctx, key("k")); err != nil || adopted {
		t.Errorf("Adopt = %v, %v; want the key left free", adopted, err)
	}
	if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Absent {
		t.Errorf("the ledger holds %v, %v; want nothing", rec.State, err)
	}
	clock.Advance(time.Hour)
	if keys := mem.DueKeys(10); len(keys) != 0 {
		t.Errorf("keys due: %v, want none", keys)
	}
}

// keptReceipt is the receipt receiptOnlyInKV leaves in KV under "kept".
const keptReceipt = `{"orderId":"r1","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2024-01-02T03:04:05.678Z"}`

// receiptOnlyInKV is migrating's world with keptReceipt stored in KV only,
// under key "kept", and the ledger-mode Service's options over it, KV its
// Fallback.
func receiptOnlyInKV(t *testing.T) (*fakeClock, *kv.MemoryNamespace, *ledger.MemoryStore, intake.Options) {
	t.Helper()
	clock, old, mem := migrating(t)
	if err := old.Put(context.Background(), "result:kept", kv.Entry{Value: keptReceipt}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(48 * time.Hour)}
	return clock, old, mem, opts
}

// TestAPurgeRacingARetryThatCopiesFromKVLeavesNothing: during the
// migration a receipt is held only in KV, and a retry in another isolate
// copies it into the ledger while the purge runs. The purge deletes KV's
// copy before the ledger's, so the retry either copied it before the
// ledger's purge, which deletes the copy, or read KV after, and found
// nothing: the purged receipt is kept nowhere.
func TestAPurgeRacingARetryThatCopiesFromKVLeavesNothing(t *testing.T) {
	ctx := context.Background()
	clock, old, mem, opts := receiptOnlyInKV(t)
	retrying := intake.New(mem, opts)
	hooked := &hookedFallback{Store: kv.NewStore(old, clock.Now)}
	hooked.beforePurge = func() {
		if out, err := retrying.Submit(ctx, key("kept"), []byte(validBody), ""); err != nil || !out.Replayed {
			t.Errorf("the retry meanwhile = replayed %v, %v; want KV's receipt copied", out.Replayed, err)
		}
	}
	opts.Fallback = hooked
	operator := intake.New(mem, opts)
	if rec, err := intake.NewAdmin(operator, mem).Purge(ctx, key("kept"), ""); err != nil || string(rec.Body) != keptReceipt {
		t.Fatalf("Purge = %s, %v; want the receipt purged", rec.Body, err)
	}
	if rec, err := mem.Lookup(ctx, key("kept")); err != nil || rec.State != intake.Absent {
		t.Errorf("the ledger holds %v %s, %v; want nothing", rec.State, rec.Body, err)
	}
	if _, err := old.Get(ctx, "result:kept"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("KV's receipt: %v, want deleted", err)
	}
}

// TestAPurgeDeletesKVsClaimAndReceiptWithOneWriteEach: KV holds the key's
// receipt with its claim left beside it, and a retry copied the receipt
// into the ledger. The purge deletes each KV key once: deleting the claim
// and then purging KV's copy, which deletes the claim again within the
// second, was refused by KV's write limit (429), so every such purge
// failed after erasing the ledger's copy and left KV's for a retry to
// bring back (found by a long simulation, seed 10659389805588351042,
// ledger mode, migrating).
func TestAPurgeDeletesKVsClaimAndReceiptWithOneWriteEach(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	receipt := order.Receipt{OrderID: "order-x", Status: order.StatusAccepted, AcceptedAt: acceptedAt}
	if o, err := order.Parse([]byte(validBody)); err == nil {
		receipt.Order = o
	}
	if err := old.Put(ctx, "result:k", kv.Entry{Value: string(receipt.JSON())}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second) // past KV's write limit for the set-up
	old.LimitWrites = true
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	if out, err := svc.Submit(ctx, key("k"), []byte(validBody), ""); err != nil || out.OrderID != "order-x" {
		t.Fatalf("the retry against the ledger = %q, %v; want KV's receipt", out.OrderID, err)
	}
	if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Stored {
		t.Fatalf("the ledger's record = %v, %v; want KV's receipt copied", rec.State, err)
	}
	clock.Advance(2 * time.Second)
	admin := intake.NewAdmin(svc, mem)
	if rec, err := admin.Purge(ctx, key("k"), "order-x"); err != nil || rec.State != intake.Stored {
		t.Fatalf("Purge = %v, %v; want the receipt purged", rec.State, err)
	}
	for _, k := range []string{"pending:k", "result:k"} {
		if _, err := old.Get(ctx, k); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("KV's %s after the purge: %v, want it deleted", k, err)
		}
	}
	if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Absent {
		t.Errorf("the ledger's record after the purge = %v, %v; want absent", rec.State, err)
	}
}

// TestAPurgeDeletesKVsClaimBesideAnotherOrdersReceipt: KV holds an old
// version's receipt for another order id beside its open claim of this
// one, which the ledger settled. The purge of this order leaves the other
// receipt, and deletes the claim: left behind, it would outlive the other
// receipt, and an adoption would take the key again and store the purged
// receipt once more.
func TestAPurgeDeletesKVsClaimBesideAnotherOrdersReceipt(t *testing.T) {
	ctx := context.Background()
	clock, old, mem, _, svc := migratingService(t)
	if out, err := svc.Submit(ctx, key("k"), []byte(validBody), ""); err != nil || out.OrderID != "order-x" {
		t.Fatalf("the retry against the ledger = %q, %v; want order-x's receipt", out.OrderID, err)
	}
	other := order.Receipt{OrderID: "legacy-1", Status: order.StatusAccepted, AcceptedAt: acceptedAt}
	if err := old.Put(ctx, "result:k", kv.Entry{Value: string(other.JSON())}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	old.LimitWrites = true
	admin := intake.NewAdmin(svc, mem)
	if rec, err := admin.Purge(ctx, key("k"), "order-x"); err != nil || intake.OrderIDOf(rec) != "order-x" {
		t.Fatalf("Purge = %+v, %v; want order-x's receipt purged", rec, err)
	}
	if _, err := old.Get(ctx, "pending:k"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("KV's claim after the purge: %v, want it deleted", err)
	}
	if e, err := old.Get(ctx, "result:k"); err != nil || e.Value != string(other.JSON()) {
		t.Errorf("KV's other receipt after the purge = %q, %v; want it left", e.Value, err)
	}
}

// erasedAfterRead is a Fallback whose receipt is erased right after its
// first read, as an operator's purge between a lookup's read of KV and
// its claim would.
type erasedAfterRead struct {
	intake.Fallback
	erase func()
	done  bool
}

func (e *erasedAfterRead) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	rec, err := e.Fallback.Lookup(ctx, key)
	if !e.done {
		e.done = true
		e.erase()
	}
	return rec, err
}

// TestALookupRacingAPurgeCopiesNothingBack: a lookup read KV's receipt,
// and an operator's purge erased it before the lookup's claim. The
// lookup must not copy it into the ledger: it reads KV again once its
// claim holds the key, and answers what it finds (found by a long
// simulation, seed 8931700042542389514, ledger mode, migrating).
func TestALookupRacingAPurgeCopiesNothingBack(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	old := kv.NewMemoryNamespace()
	old.Now = clock.Now
	receipt := order.Receipt{OrderID: "legacy-1", Status: order.StatusAccepted, AcceptedAt: acceptedAt}
	if err := old.Put(ctx, "result:k", kv.Entry{Value: string(receipt.JSON())}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	mem := ledger.NewMemoryStore()
	mem.Now = clock.Now
	fallback := &erasedAfterRead{Fallback: kv.NewStore(old, clock.Now), erase: func() { old.Delete(ctx, "result:k") }}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Now: clock.Now, Fallback: fallback, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	if out, err := svc.Lookup(ctx, key("k")); !errors.Is(err, intake.ErrNotFound) {
		t.Errorf("Lookup = %q, %v; want ErrNotFound: the receipt was purged", out.Receipt, err)
	}
	if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Absent {
		t.Errorf("the ledger's record = %v, %v; want the purged receipt not copied back", rec.State, err)
	}
}

// migratingService is migrating's world with the ledger-mode Service over
// it, KV its Fallback, and a scripted gateway.
func migratingService(t *testing.T) (*fakeClock, *kv.MemoryNamespace, *ledger.MemoryStore, *scriptedGateway, *intake.Service) {
	clock, old, mem := migrating(t)
	g := &scriptedGateway{clock: clock}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g,
		Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	return clock, old, mem, g, svc
}

// TestAPurgeThatFoundTheKeyOnlyInKVDeletesKVsClaimOnceARetryStoredIt: the
// purge began while the ledger had nothing, and its pass over KV found
// only KV mode's open claim, which it left: the key was not final. A retry
// then adopted the key and stored its receipt in the ledger, which the
// purge erased. KV's claim goes too, or the next adoption would store the
// erased receipt again (invariant: a purged receipt is never stored
// again; found by a long run, seed 8042151180799246591, ledger,
// migrating, a resolve racing the purge).
func TestAPurgeThatFoundTheKeyOnlyInKVDeletesKVsClaimOnceARetryStoredIt(t *testing.T) {
	ctx := context.Background()
	clock, old, mem, _, svc := migratingService(t)
	hooked := &hookedFallback{Store: kv.NewStore(old, clock.Now)}
	hooked.beforePurge = func() {
		if out, err := svc.Submit(ctx, key("k"), []byte(validBody), ""); err != nil || out.OrderID != "order-x" {
			t.Errorf("the retry that adopts the key = %q, %v; want order-x's receipt", out.OrderID, err)
		}
	}
	operator := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Now: clock.Now, Fallback: hooked, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	if rec, err := intake.NewAdmin(operator, mem).Purge(ctx, key("k"), "order-x"); err != nil || rec.State != intake.Stored {
		t.Fatalf("Purge = %v, %v; want the retry's receipt purged", rec.State, err)
	}
	if _, err := old.Get(ctx, "pending:k"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("KV's claim after the purge: %v, want it deleted", err)
	}
	if adopted, err := svc.Adopt(ctx, key("k")); err != nil || adopted {
		t.Errorf("Adopt after the purge = %v, %v; want nothing to adopt", adopted, err)
	}
	if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Absent {
		t.Errorf("the ledger after the purge holds %v, %v; want nothing", rec.State, err)
	}
}

// TestAPurgeThatFindsTheKeyHeldDuringTheMigrationWaits: KV holds a
// receipt, and a request holds the ledger's key, copying it in. The purge
// must delete KV's copy before the ledger's, and cannot while the request
// may still read KV: it says in progress and changes nothing, and its
// retry purges both. It used to purge the ledger's copy, which the request had
// committed meanwhile, and only then KV's, between which a lookup copied
// KV's back into the ledger: a purged receipt served again (invariant: a
// purged receipt is never stored again; found by a long run, seed
// 3876053143621019001, ledger, migrating, at 133,234 histories).
func TestAPurgeThatFindsTheKeyHeldDuringTheMigrationWaits(t *testing.T) {
	ctx := context.Background()
	_, old, mem, opts := receiptOnlyInKV(t)
	looking := intake.New(mem, opts)
	operator := intake.New(mem, opts)
	copying := intake.Claim{Token: "copying", Lease: time.Minute}
	if rec, err := mem.Begin(ctx, key("kept"), copying); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("the copying request's claim = %v, %v", rec.State, err)
	}
	admin := intake.NewAdmin(operator, mem)
	if _, err := admin.Purge(ctx, key("kept"), ""); !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("a purge while the request holds the key = %v, want ErrInProgress", err)
	}
	if _, err := old.Get(ctx, "result:kept"); err != nil {
		t.Fatalf("a purge that answered in progress deleted KV's receipt (%v): it must change nothing", err)
	}
	// The request commits KV's receipt once the purge has looked at the
	// key, and a lookup elsewhere runs once the ledger's copy is purged.
	var looked, purged bool
	mem.RoundTrip = func(ctx context.Context, method string, apply func()) error {
		apply()
		switch {
		case method == "lookup" && !looked:
			looked = true
			if err := mem.Commit(ctx, key("kept"), copying, intake.Result{Body: []byte(keptReceipt), TTL: time.Hour}); err != nil {
				t.Errorf("the copying request's commit: %v", err)
			}
		case method == "purge" && !purged:
			purged = true
			looking.Lookup(ctx, key("kept"))
		}
		return nil
	}
	rec, err := admin.Purge(ctx, key("kept"), "")
	switch {
	case errors.Is(err, intake.ErrInProgress):
		if _, err := old.Get(ctx, "result:kept"); err != nil {
			t.Errorf("a purge that answered in progress deleted KV's receipt (%v): it must change nothing", err)
		}
		mem.RoundTrip = nil
		if rec, err = admin.Purge(ctx, key("kept"), ""); err != nil || string(rec.Body) != keptReceipt {
			t.Fatalf("the purge's retry = %s, %v; want the receipt purged", rec.Body, err)
		}
	case err != nil || string(rec.Body) != keptReceipt:
		t.Fatalf("Purge = %s, %v; want in progress, or the receipt purged", rec.Body, err)
	}
	if rec, err := mem.Lookup(ctx, key("kept")); err != nil || rec.State != intake.Absent {
		t.Errorf("after the purge the ledger holds %v %s, %v; want nothing", rec.State, rec.Body, err)
	}
	if _, err := old.Get(ctx, "result:kept"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("KV's receipt after the purge: %v, want deleted", err)
	}
}

// TestAResolveRacingARequestThatHeldTheKeyIsInProgress: a resolve of a
// key only KV holds adopts it first. If another request held the key in
// the ledger while the adoption looked (a retry of another order, which
// is told 422 and lets it go), the adoption leaves it, and the resolve
// finds the ledger's key free: the key is in progress, not "no receipt"
// (found by a long run, seed 16954821683010879487, ledger, migrating,
// which fails the same on f9c09ea). A resolve once the request is gone
// stores the answer.
func TestAResolveRacingARequestThatHeldTheKeyIsInProgress(t *testing.T) {
	ctx := context.Background()
	_, _, mem, g, svc := migratingService(t)
	other := intake.Claim{Token: "other order's retry", Fingerprint: "another order", Lease: time.Minute}
	held, lookups := false, 0
	mem.RoundTrip = func(ctx context.Context, method string, apply func()) error {
		if method == "lookup" {
			lookups++
		}
		// The resolve's own read finds the ledger's key free; the
		// adoption's look at it then finds the retry holding the key.
		if method == "lookup" && lookups == 2 {
			held = true
			mem.RoundTrip = nil
			if rec, err := mem.Begin(ctx, key("k"), other); err != nil || rec.Took != intake.EventClaim {
				t.Fatalf("the other request's claim = %+v, %v", rec, err)
			}
			apply()
			if err := mem.Release(ctx, key("k"), other); err != nil {
				t.Fatal(err)
			}
			return nil
		}
		apply()
		return nil
	}
	admin := intake.NewAdmin(svc, mem)
	res := intake.Resolution{Status: order.StatusAccepted, OrderID: "order-x"}
	if _, err := admin.Resolve(ctx, key("k"), res); !held || !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("Resolve beside the request (it held the key: %v) = %v; want ErrInProgress", held, err)
	}
	rec, err := admin.Resolve(ctx, key("k"), res)
	if err != nil || rec.State != intake.Stored {
		t.Fatalf("Resolve again = %v, %v; want the answer stored", rec.State, err)
	}
	if n := len(g.placements()); n != 0 {
		t.Errorf("gateway calls = %d, want none: the operator answered", n)
	}
}

// TestAResolveWhoseClaimFailsAfterTheAdoptionSaysStorageUnavailable: the
// resolve's claim after it adopted a key only KV held fails: the operator
// is told storage failed, not that the key holds nothing.
func TestAResolveWhoseClaimFailsAfterTheAdoptionSaysStorageUnavailable(t *testing.T) {
	ctx := context.Background()
	_, _, mem, _, svc := migratingService(t)
	claims := 0
	mem.RoundTrip = func(ctx context.Context, method string, apply func()) error {
		if method == "claim" {
			if claims++; claims == 3 { // the resolve's, the adoption's, then the resolve's again
				return errStorage
			}
		}
		apply()
		return nil
	}
	admin := intake.NewAdmin(svc, mem)
	_, err := admin.Resolve(ctx, key("k"), intake.Resolution{Status: order.StatusAccepted, OrderID: "order-x"})
	if claims != 3 || !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("Resolve whose claim failed (claims %d) = %v; want ErrStorageUnavailable", claims, err)
	}
}

// scriptedFallback answers the n-th Lookup (from 1) with its script's
// step for n, if any, after the read.
type scriptedFallback struct {
	intake.Fallback
	n    int
	step map[int]func() error
}

func (f *scriptedFallback) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	rec, err := f.Fallback.Lookup(ctx, key)
	f.n++
	if step := f.step[f.n]; step != nil {
		if serr := step(); serr != nil {
			return intake.Record{}, serr
		}
	}
	return rec, err
}

// TestAResolveWhoseReadOfKVFailsAfterItsAdoptionOutlastedSaysStorageUnavailable:
// the resolve's adoption read KV again past its claim's lease and let the
// key go, and the resolve's look at KV, to tell a key in progress from
// one with nothing held, failed: the operator is told storage failed, not
// that the key holds nothing, which KV holds open with an order the OMS
// may have (found by a long run, seed 229299513, ledger, migrating).
func TestAResolveWhoseReadOfKVFailsAfterItsAdoptionOutlastedSaysStorageUnavailable(t *testing.T) {
	ctx := context.Background()
	clock, old, mem, g, _ := migratingService(t)
	fb := &scriptedFallback{Fallback: kv.NewStore(old, clock.Now), step: map[int]func() error{
		2: func() error { clock.Advance(config.DefaultPendingTTL + time.Second); return nil }, // the adoption's second read
		3: func() error { return errStorage },                                                 // the resolve's own
	}}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g,
		Now: clock.Now, Fallback: fb, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	admin := intake.NewAdmin(svc, mem)
	res := intake.Resolution{Status: order.StatusAccepted, OrderID: "order-x"}
	if _, err := admin.Resolve(ctx, key("k"), res); fb.n != 3 || !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("Resolve whose read of KV failed (reads %d) = %v; want ErrStorageUnavailable", fb.n, err)
	}
	rec, err := admin.Resolve(ctx, key("k"), res)
	if err != nil || rec.State != intake.Stored {
		t.Fatalf("Resolve again = %v, %v; want the answer stored", rec.State, err)
	}
}

// TestAResolveOfAKeyOnlyKVHoldsSaysWhatKVHolds: during the migration, a
// resolve of a key the ledger has never seen tells the operator what KV
// holds for it, as Inspect shows it: a receipt there is final (409), a
// live claim there in progress (409), not "not found" (404), which says
// no order exists under the key.
func TestAResolveOfAKeyOnlyKVHoldsSaysWhatKVHolds(t *testing.T) {
	ctx := context.Background()
	o, err := order.Parse([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		commit bool
		want   error
	}{
		{"a receipt", true, intake.ErrOutcomeFinal},
		{"a live claim", false, intake.ErrInProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{now: acceptedAt}
			old := kv.NewMemoryNamespace()
			old.Now = clock.Now
			oldStore := kv.NewStore(old, clock.Now)
			c := intake.Claim{Token: "old", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-x", AcceptedAt: acceptedAt,
				Lease: config.DefaultPendingTTL, KeepUntil: acceptedAt.Add(keepWindow)}
			if _, err := oldStore.Begin(ctx, key("k"), c); err != nil {
				t.Fatal(err)
			}
			if tc.commit {
				receipt := order.Receipt{OrderID: "order-x", Status: order.StatusAccepted, Order: o, AcceptedAt: acceptedAt}
				if err := oldStore.Commit(ctx, key("k"), c, intake.Result{Body: receipt.JSON(), Fingerprint: o.Fingerprint(), TTL: config.DefaultResultTTL}); err != nil {
					t.Fatal(err)
				}
			}
			_, admin, mem, g := resolvingOver(t, clock, oldStore)
			if _, err := admin.Resolve(ctx, key("k"), intake.Resolution{Status: order.StatusAccepted}); !errors.Is(err, tc.want) {
				t.Fatalf("Resolve = %v; want %v", err, tc.want)
			}
			if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Absent {
				t.Errorf("the ledger after the resolve: %v, %v; want nothing stored", rec.State, err)
			}
			if n := len(g.placements()); n != 0 {
				t.Errorf("gateway calls = %d, want none", n)
			}
		})
	}
}

// TestARefusedResolveOfAKeyOnlyKVHoldsClaimsNothing: during the
// migration, a resolve naming another order id than KV holds open for a
// key the ledger has not is refused for what its read of KV shows,
// before any adoption or claim: none holds the key from its client
// (found by a review: the key was adopted, taken and given back).
func TestARefusedResolveOfAKeyOnlyKVHoldsClaimsNothing(t *testing.T) {
	ctx := context.Background()
	clock, old, mem := migrating(t)
	if rec, err := kv.NewStore(old, clock.Now).Lookup(ctx, key("k")); err != nil || rec.State != intake.Open || rec.OrderID != "order-x" {
		t.Fatalf("KV holds %v %s, %v; want the key open with order-x", rec.State, rec.OrderID, err)
	}
	counted := &countingBegins{Store: mem}
	svc := intake.New(counted, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Gateway: &scriptedGateway{clock: clock}, Now: clock.Now, Fallback: kv.NewStore(old, clock.Now), FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	if _, err := intake.NewAdmin(svc, mem).Resolve(ctx, key("k"), intake.Resolution{Status: order.StatusAccepted, OrderID: "another"}); !errors.Is(err, intake.ErrPrecondition) {
		t.Fatalf("Resolve = %v, want ErrPrecondition", err)
	}
	if counted.begins != 0 {
		t.Errorf("the refused resolve began %d claims in the ledger; want none", counted.begins)
	}
	if rec, err := mem.Lookup(ctx, key("k")); err != nil || rec.State != intake.Absent {
		t.Errorf("the ledger after the refused resolve: %v, %v; want nothing adopted", rec.State, err)
	}
}

// resolvingOver is a migrating Service, and its Admin, over a new ledger
// (mem), with old, the KV store a key is only held in, as its Fallback.
func resolvingOver(t *testing.T, clock *fakeClock, old *kv.Store) (*intake.Service, *intake.Admin, *ledger.MemoryStore, *scriptedGateway) {
	t.Helper()
	_, _, mem := migrating(t)
	g := &scriptedGateway{clock: clock}
	svc := intake.New(mem, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g,
		Now: clock.Now, Fallback: old, FallbackUntil: acceptedAt.Add(48 * time.Hour)})
	return svc, intake.NewAdmin(svc, mem), mem, g
}
