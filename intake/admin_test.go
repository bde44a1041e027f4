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

// admin is the operator's actions over e's store, on a new instance.
func (e *settleEnv) admin(t *testing.T) (*intake.Admin, *intake.Service) {
	t.Helper()
	svc := e.service()
	return intake.NewAdmin(svc, e.adminStore(t)), svc
}

// adminStore is the store as the admin API lists and purges it.
func (e *settleEnv) adminStore(t *testing.T) intake.AdminStore {
	t.Helper()
	store, ok := e.store.(intake.AdminStore)
	if !ok {
		t.Fatalf("%T is no AdminStore", e.store)
	}
	return store
}

// TestResolveStoresTheReceiptTheSettlerWould: the operator's answer is
// stored as the settler stores the gateway's: the receipt built from the
// key's own claim, byte for byte, replayed to the client's retry with no
// gateway call, and the settler stops.
func TestResolveStoresTheReceiptTheSettlerWould(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		u := leaveUnknown(t, e)
		admin, _ := e.admin(t)
		rec, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted})
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		want := order.Receipt{OrderID: u.OrderID, Status: order.StatusAccepted, Order: parsedValid(t), AcceptedAt: acceptedAt}.JSON()
		if rec.State != intake.Stored || string(rec.Body) != string(want) {
			t.Errorf("Resolve returned %v %s, want Stored %s", rec.State, rec.Body, want)
		}
		out, err := e.service().Submit(ctx, deskKey, []byte(validBody), "")
		if err != nil || !out.Replayed || string(out.Receipt) != string(want) {
			t.Errorf("the client's retry = %s replayed %v, %v; want the replay of %s", out.Receipt, out.Replayed, err, want)
		}
		if n := len(e.g.placements()); n != 1 {
			t.Errorf("gateway calls = %d, want 1: the operator's answer replaced the settler's call", n)
		}
		e.clock.Advance(time.Hour)
		if keys := e.due(t); len(keys) != 0 {
			t.Errorf("keys due after the resolve: %v, want none", keys)
		}
		if st, err := e.service().Settle(ctx, deskKey); err != nil || !st.Final || st.Result != intake.SettleIdle {
			t.Errorf("Settle after the resolve = %+v, %v; want Final and idle", st, err)
		}
		if n := len(e.g.placements()); n != 1 {
			t.Errorf("gateway calls = %d after the settler looked again, want 1", n)
		}
	})
}

// TestResolveRejectedIsReplayedAsTheRejection: a rejection carries the
// operator's reason, and the retry gets it as the gateway's own.
func TestResolveRejectedIsReplayedAsTheRejection(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		u := leaveUnknown(t, e)
		admin, _ := e.admin(t)
		rec, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusRejected, Reason: "no such account"})
		if err != nil || !rec.Rejected {
			t.Fatalf("Resolve = %+v, %v; want a stored rejection", rec, err)
		}
		_, err = e.service().Submit(ctx, deskKey, []byte(validBody), "")
		var rejection *intake.Rejection
		if !errors.As(err, &rejection) || !rejection.Replayed || rejection.Reason != "no such account" || rejection.OrderID != u.OrderID {
			t.Fatalf("the client's retry = %v, want the replayed rejection of %s with the operator's reason", err, u.OrderID)
		}
		if n := len(e.g.placements()); n != 1 {
			t.Errorf("gateway calls = %d, want 1", n)
		}
	})
}

// TestResolveSettlesAnUnresolvedKey: the settler gave up; the operator's
// answer still settles the key.
func TestResolveSettlesAnUnresolvedKey(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	forEachStore(t, intake.Options{SettleMaxAge: maxAge}, func(t *testing.T, e *settleEnv) {
		leaveUnknown(t, e)
		e.clock.Advance(maxAge)
		e.g.answer(errLost)
		if st, err := e.service().Settle(ctx, deskKey); err != nil || !st.Unresolved {
			t.Fatalf("Settle = %+v, %v; want the key unresolved", st, err)
		}
		admin, _ := e.admin(t)
		before, err := admin.Inspect(ctx, deskKey)
		if err != nil || intake.AttentionOf(before) != intake.Unresolved {
			t.Fatalf("Inspect before = %+v, %v; want unresolved", before, err)
		}
		if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted}); err != nil {
			t.Fatalf("Resolve of the unresolved key: %v", err)
		}
		if rec, err := admin.Inspect(ctx, deskKey); err != nil || rec.State != intake.Stored || rec.Rejected {
			t.Fatalf("Inspect after = %+v, %v; want the receipt stored", rec, err)
		}
		if n := len(e.g.placements()); n != 2 {
			t.Errorf("gateway calls = %d, want 2: the client's and the settler's last", n)
		}
	})
}

// TestResolveRefusesAndChangesNothing: only an Open key is resolved.
func TestResolveRefusesAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		t.Run("an answer that is neither accepted nor a reasoned rejection", func(t *testing.T) {
			leaveUnknown(t, e)
			admin, _ := e.admin(t)
			for _, res := range []intake.Resolution{{Status: "maybe"}, {Status: order.StatusRejected}, {Status: order.StatusAccepted, Reason: "why"}} {
				if _, err := admin.Resolve(ctx, deskKey, res); !errors.Is(err, intake.ErrBadResolution) {
					t.Errorf("Resolve(%+v) = %v, want ErrBadResolution", res, err)
				}
			}
			if rec, _ := admin.Inspect(ctx, deskKey); rec.State != intake.Open {
				t.Errorf("the key is %v after refused resolves, want still Open", rec.State)
			}
		})
		t.Run("a key whose outcome is final", func(t *testing.T) {
			admin, _ := e.admin(t)
			if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted}); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			_, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusRejected, Reason: "changed my mind"})
			if !errors.Is(err, intake.ErrOutcomeFinal) {
				t.Fatalf("a second Resolve = %v, want ErrOutcomeFinal", err)
			}
			if rec, _ := admin.Inspect(ctx, deskKey); rec.Rejected {
				t.Errorf("the second Resolve changed the outcome to a rejection")
			}
		})
		t.Run("a key nothing is held for", func(t *testing.T) {
			admin, _ := e.admin(t)
			other := intake.Key{Client: deskKey.Client, ID: "never"}
			if _, err := admin.Resolve(ctx, other, intake.Resolution{Status: order.StatusAccepted}); !errors.Is(err, intake.ErrNotFound) {
				t.Fatalf("Resolve = %v, want ErrNotFound", err)
			}
			if _, err := admin.Inspect(ctx, other); !errors.Is(err, intake.ErrNotFound) {
				t.Fatalf("Inspect after = %v, want ErrNotFound: the refused Resolve claimed the key", err)
			}
		})
		t.Run("a key a live claim holds", func(t *testing.T) {
			admin, _ := e.admin(t)
			held := intake.Key{Client: deskKey.Client, ID: "held"}
			c := intake.Claim{Token: "live", Fingerprint: fingerprint(t, validBody), Order: parsedValid(t), OrderID: "order-held",
				AcceptedAt: acceptedAt, Lease: time.Minute, KeepUntil: acceptedAt.Add(time.Hour)}
			if rec, err := e.store.Begin(ctx, held, c); err != nil || rec.Took != intake.EventClaim {
				t.Fatalf("Begin = %v, %v", rec.State, err)
			}
			if _, err := admin.Resolve(ctx, held, intake.Resolution{Status: order.StatusAccepted}); !errors.Is(err, intake.ErrInProgress) {
				t.Fatalf("Resolve = %v, want ErrInProgress", err)
			}
			if _, err := admin.Purge(ctx, held, ""); !errors.Is(err, intake.ErrInProgress) {
				t.Fatalf("Purge = %v, want ErrInProgress", err)
			}
			if rec, _ := admin.Inspect(ctx, held); rec.State != intake.Held {
				t.Errorf("the key is %v, want still Held", rec.State)
			}
		})
	})
}

// TestPurgeFreesAFinalKeyOnly: a purged key is free, even in the memory
// of the instance that purged it; an unknown outcome is never purged.
func TestPurgeFreesAFinalKeyOnly(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		leaveUnknown(t, e)
		admin, svc := e.admin(t)
		if _, err := admin.Purge(ctx, deskKey, ""); !errors.Is(err, intake.ErrOutcomeOpen) {
			t.Fatalf("Purge of the unknown key = %v, want ErrOutcomeOpen", err)
		}
		if rec, _ := admin.Inspect(ctx, deskKey); rec.State != intake.Open {
			t.Fatalf("the key is %v after the refused purge, want still Open", rec.State)
		}
		// The same instance replays it from memory first.
		if _, err := svc.Submit(ctx, deskKey, []byte(validBody), ""); err != nil {
			t.Fatalf("the client's retry: %v", err)
		}
		if _, err := svc.Lookup(ctx, deskKey); err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		purged, err := admin.Purge(ctx, deskKey, "")
		if err != nil || purged.State != intake.Stored {
			t.Fatalf("Purge of the final key = %+v, %v; want what was stored", purged, err)
		}
		if _, err := svc.Lookup(ctx, deskKey); !errors.Is(err, intake.ErrNotFound) {
			t.Errorf("Lookup after the purge on the same instance = %v, want ErrNotFound", err)
		}
		if _, err := admin.Purge(ctx, deskKey, ""); !errors.Is(err, intake.ErrNotFound) {
			t.Errorf("a second Purge = %v, want ErrNotFound", err)
		}
		calls := len(e.g.placements())
		out, err := svc.Submit(ctx, deskKey, []byte(validBody), "")
		if err != nil || out.Replayed {
			t.Fatalf("a retry after the purge = replayed %v, %v; want a new order", out.Replayed, err)
		}
		if n := len(e.g.placements()); n != calls+1 {
			t.Errorf("gateway calls = %d, want %d: the retry after the purge is a new order", n, calls+1)
		}
	})
}

// TestAdminListFindsUnknownKeys: the listing shows the key an unknown
// outcome left, until it is resolved.
func TestAdminListFindsUnknownKeys(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		u := leaveUnknown(t, e)
		admin, _ := e.admin(t)
		q := intake.ListQuery{Clients: []string{deskKey.Client}, States: intake.AnyAttention}
		page, err := admin.List(ctx, q)
		if err != nil || len(page.Keys) != 1 || page.Keys[0].Key != deskKey || page.Keys[0].Record.OrderID != u.OrderID ||
			intake.AttentionOf(page.Keys[0].Record) != intake.Unknown {
			t.Fatalf("List = %+v, %v; want %v unknown with %s", page, err, deskKey, u.OrderID)
		}
		if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Hour) // past the operator's claim's lease, which KV lists until it goes
		if page, err := admin.List(ctx, q); err != nil || len(page.Keys) != 0 {
			t.Fatalf("List after the resolve = %+v, %v; want nothing", page, err)
		}
	})
}

// Both stores are AdminStores.
var (
	_ intake.AdminStore = (*kv.Store)(nil)
	_ intake.AdminStore = (*ledger.MemoryStore)(nil)
)

// TestResolveNeverContradictsTheStandInsAnswer: over the ledger, the
// stand-in answers 201 before its commit; when the commit fails the key
// is left open, and an operator's rejection would contradict the 201.
// Resolve refuses it, changing nothing, and records accepted.
func TestResolveNeverContradictsTheStandInsAnswer(t *testing.T) {
	ctx := context.Background()
	store := ledger.NewMemoryStore()
	store.Now = func() time.Time { return acceptedAt }
	failCommit := true
	store.RoundTrip = func(ctx context.Context, method string, apply func()) error {
		if method == "commit" && failCommit {
			return errors.New("storage down")
		}
		apply()
		return nil
	}
	opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Now: store.Now}
	svc := intake.New(store, opts)
	out, err := svc.Submit(ctx, deskKey, []byte(validBody), "")
	if err != nil || out.Replayed {
		t.Fatalf("Submit = %+v, %v; want the stand-in's 201", out, err)
	}
	failCommit = false
	admin := intake.NewAdmin(intake.New(store, opts), store)
	if rec, err := admin.Inspect(ctx, deskKey); err != nil || rec.State != intake.Open {
		t.Fatalf("Inspect = %+v, %v; want the key left open by the failed commit", rec, err)
	}
	if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusRejected, Reason: "not in the OMS"}); !errors.Is(err, intake.ErrAnswered) {
		t.Fatalf("Resolve rejected = %v, want ErrAnswered", err)
	}
	if rec, _ := admin.Inspect(ctx, deskKey); rec.State != intake.Open {
		t.Errorf("the key is %v after the refusal, want still Open", rec.State)
	}
	rec, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted})
	if err != nil || rec.State != intake.Stored || string(rec.Body) != string(out.Receipt) {
		t.Fatalf("Resolve accepted = %s, %v; want the receipt the client got: %s", rec.Body, err, out.Receipt)
	}
}

// TestAResolvedUnresolvedKeyLeavesTheListing: over KV with claims left to
// expire (KV_CLAIM_AFTER_RECEIPT=expire), the claim that stored an
// unresolved key's outcome, the operator's or a client retry's, stays
// beside the receipt; the sweep must find and delete it once its lease
// ends, so that the key leaves the listing.
func TestAResolvedUnresolvedKeyLeavesTheListing(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	for _, by := range []string{"the operator", "a client's retry"} {
		t.Run(by, func(t *testing.T) {
			clock := &fakeClock{now: acceptedAt}
			mem := kv.NewMemoryNamespace()
			mem.Now = clock.Now
			store := kv.NewStore(mem, clock.Now) // ReleaseClaims false
			e := &settleEnv{clock: clock, store: store, g: &scriptedGateway{clock: clock}}
			e.opts = intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
				SettleMaxAge: maxAge, Gateway: e.g, Now: clock.Now, OnUnresolved: e.onUnresolved}
			leaveUnknown(t, e)
			e.clock.Advance(maxAge)
			e.g.answer(errLost)
			if st, err := e.service().Settle(ctx, deskKey); err != nil || !st.Unresolved {
				t.Fatalf("Settle = %+v, %v; want the key unresolved", st, err)
			}
			admin, _ := e.admin(t)
			if by == "the operator" {
				if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted}); err != nil {
					t.Fatalf("Resolve: %v", err)
				}
			} else if _, err := e.service().Submit(ctx, deskKey, []byte(validBody), ""); err != nil {
				t.Fatalf("the client's retry: %v", err)
			}
			clock.Advance(time.Hour) // past the claim's lease
			keys, err := store.Overdue(ctx, clock.Now(), 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if _, err := e.service().Settle(ctx, k); err != nil {
					t.Fatalf("Settle %v: %v", k, err)
				}
			}
			q := intake.ListQuery{Clients: []string{deskKey.Client}, States: intake.AnyAttention}
			if page, err := admin.List(ctx, q); err != nil || len(page.Keys) != 0 {
				t.Errorf("List after the sweep = %+v, %v; want nothing", page, err)
			}
			if n := len(e.g.placements()); n != 2+btoi(by != "the operator") {
				t.Errorf("gateway calls = %d: the sweep called the OMS again", n)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestResolveAndPurgeRefuseAKeyThatHoldsAnotherOrder: given the order id
// the operator saw, a resolve or a purge of a key that holds another
// order id is refused with ErrPrecondition and changes nothing; given the
// key's own, it goes ahead.
func TestResolveAndPurgeRefuseAKeyThatHoldsAnotherOrder(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		u := leaveUnknown(t, e)
		admin, _ := e.admin(t)
		if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted, OrderID: "another"}); !errors.Is(err, intake.ErrPrecondition) {
			t.Fatalf("Resolve of another order id = %v, want ErrPrecondition", err)
		}
		if rec, err := admin.Inspect(ctx, deskKey); err != nil || rec.State != intake.Open || rec.OrderID != u.OrderID {
			t.Fatalf("after the refused resolve the key is %v %s, %v; want it open with %s", rec.State, rec.OrderID, err, u.OrderID)
		}
		if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted, OrderID: u.OrderID}); err != nil {
			t.Fatalf("Resolve of the key's own order id = %v", err)
		}
		if _, err := admin.Purge(ctx, deskKey, "another"); !errors.Is(err, intake.ErrPrecondition) {
			t.Fatalf("Purge of another order id = %v, want ErrPrecondition", err)
		}
		if rec, err := admin.Inspect(ctx, deskKey); err != nil || rec.State != intake.Stored {
			t.Fatalf("after the refused purge the key is %v, %v; want its receipt kept", rec.State, err)
		}
		if rec, err := admin.Purge(ctx, deskKey, u.OrderID); err != nil || rec.State != intake.Stored {
			t.Fatalf("Purge of the key's own order id = %v, %v", rec.State, err)
		}
		if _, err := admin.Inspect(ctx, deskKey); !errors.Is(err, intake.ErrNotFound) {
			t.Errorf("after the purge Inspect = %v, want ErrNotFound", err)
		}
	})
}

// TestARetryFromMemoryAfterAPurgeIsANewOrder: over the ledger, whose reads
// are exact, an instance that left the key open moments before a purge
// does not mint its retry's claim from its memory of that key: the
// receipt the purge erased, the same bytes, would be stored again
// (invariant: a purged receipt is never stored again; found by a long
// run, seed 13223690485473522922, ledger, migrating). Over KV the memory
// stands, against reads that miss the key's writes (operating.md says
// when a purge there is final).
func TestARetryFromMemoryAfterAPurgeIsANewOrder(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: acceptedAt}
	store := ledger.NewMemoryStore()
	store.Now = clock.Now
	e := &settleEnv{clock: clock, store: store, g: &scriptedGateway{clock: clock}}
	e.opts = intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: e.g, Now: clock.Now}
	e.g.answer(errLost)
	first := e.service()
	if _, err := first.Submit(ctx, deskKey, []byte(validBody), ""); err == nil {
		t.Fatal("the first attempt's lost answer = nil, want an unknown outcome")
	}
	clock.Advance(time.Second)
	out, err := e.service().Submit(ctx, deskKey, []byte(validBody), "")
	if err != nil {
		t.Fatalf("the retry in another instance: %v", err)
	}
	admin, _ := e.admin(t)
	if _, err := admin.Purge(ctx, deskKey, ""); err != nil {
		t.Fatalf("Purge: %v", err)
	}
	clock.Advance(time.Second)
	again, err := first.Submit(ctx, deskKey, []byte(validBody), "")
	if err != nil {
		t.Fatalf("a retry after the purge in the first instance: %v", err)
	}
	if string(again.Receipt) == string(out.Receipt) {
		t.Errorf("the retry after the purge stored the purged receipt again: %s", again.Receipt)
	}
}

// TestAResolveNotStoredSendsTheKeysNextMessage: an operator's resolve
// whose commit fails leaves the key open, due for the settler after the
// backoff; nothing but the resolve knows that time, so it sends the key's
// settle message (over KV's queue), or the key waits for the sweep
// (found by the simulator's settle chain invariant).
func TestAResolveNotStoredSendsTheKeysNextMessage(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		leaveUnknown(t, e)
		adminStore := e.adminStore(t)
		var scheduled []time.Time
		e.opts.Schedule = func(_ context.Context, _ intake.Key, at time.Time) error {
			scheduled = append(scheduled, at)
			return nil
		}
		e.store = &commitFailing{Store: e.store}
		admin := intake.NewAdmin(e.service(), adminStore)
		if _, err := admin.Resolve(ctx, deskKey, intake.Resolution{Status: order.StatusAccepted}); !errors.Is(err, intake.ErrStorageUnavailable) {
			t.Fatalf("Resolve whose commit failed = %v, want storage unavailable", err)
		}
		rec, err := admin.Inspect(ctx, deskKey)
		if err != nil || rec.State != intake.Open || len(scheduled) != 1 || !scheduled[0].Equal(rec.NextAttempt) {
			t.Fatalf("after the failed resolve: %v due %v, messages %v; want the key open and one message for when it is due", rec.State, rec.NextAttempt, scheduled)
		}
	})
}
