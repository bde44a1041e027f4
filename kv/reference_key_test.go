package kv_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/order"
)

// referenceReceipt is a receipt as the TypeScript reference stored it: the
// receipt alone, no metadata.
const referenceReceipt = `{"orderId":"11111111-2222-4333-8444-555555555555","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2026-03-14T15:00:00.000Z"}`

// quotedKey is the open Worker's key id its client sent in the draft's
// quoted form.
func quotedKey(id string) intake.Key { return intake.Key{ID: id, Quoted: true} }

// TestAQuotedKeyTheReferenceStoredReplays: the reference stored a key as
// its header came, quotes and all, so a client that sent the draft's
// quoted form "abc" left its receipt under result:"abc"; this Worker reads
// that header as the key abc. A retry after the route moved to this
// Worker, over the same namespace, repeating its header unchanged,
// replays that receipt instead of placing a second order (found by a
// review). The reference's receipt of the unquoted abc replays as ever.
func TestAQuotedKeyTheReferenceStoredReplays(t *testing.T) {
	for name, key := range map[string]intake.Key{`result:abc`: openKey("abc"), `result:"abc"`: quotedKey("abc")} {
		s := newRecordedStore()
		s.put(t, name, kv.Entry{Value: referenceReceipt}, time.Hour)
		out, err := s.service().Submit(context.Background(), key, []byte(validBody), "")
		if err != nil || !out.Replayed || string(out.Receipt) != referenceReceipt {
			t.Errorf("stored by the reference under %s: Submit = %+v, %v; want its receipt replayed", name, out, err)
		}
		if puts := s.rec.Count(kvtest.OpPut, ""); puts != 0 {
			t.Errorf("stored by the reference under %s: %d puts, want none", name, puts)
		}
	}
}

// TestOnlyAQuotedKeyReadsTheReferencesNames: a key sent unquoted, as
// nearly every key is, costs its two reads and no more; the reference's
// names are read only for a key sent quoted, the one form whose name the
// reference kept apart (this session's first version read them for every
// key, and settled keys less often under storage faults).
func TestOnlyAQuotedKeyReadsTheReferencesNames(t *testing.T) {
	for key, want := range map[intake.Key]int{openKey("abc"): 2, quotedKey("abc"): 4, {Client: "desk-a", ID: "abc", Quoted: true}: 2} {
		s := newRecordedStore()
		if _, err := s.store.Lookup(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		if gets := s.rec.Count(kvtest.OpGet, ""); gets != want {
			t.Errorf("%+v: Lookup made %d reads, want %d", key, gets, want)
		}
	}
}

// TestTheReferencesClaimOfAQuotedKeyHoldsIt: a request the reference was
// still running for the quoted key when the route moved holds the key
// (its claim, "1" with no metadata, until it expires), as for the key's
// own claim.
func TestTheReferencesClaimOfAQuotedKeyHoldsIt(t *testing.T) {
	s := newRecordedStore()
	s.put(t, `pending:"abc"`, kv.Entry{Value: "1"}, time.Minute)
	if _, err := s.service().Submit(context.Background(), quotedKey("abc"), []byte(validBody), ""); !errors.Is(err, intake.ErrInProgress) {
		t.Errorf("Submit = %v, want ErrInProgress while the reference's claim holds the key", err)
	}
}

// TestAnotherKeysNameIsNotTheReferences: the key id "abc", quotes and
// all, is this Worker's own key (its client sent "\"abc\""), stored under
// result:"abc" with its fingerprint. That name is no receipt of the key
// abc's: only what the reference wrote, without metadata, is.
func TestAnotherKeysNameIsNotTheReferences(t *testing.T) {
	ctx := context.Background()
	s := newRecordedStore()
	if _, err := s.service().Submit(ctx, openKey(`"abc"`), []byte(validBody), ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.stored(t, `result:"abc"`); !ok {
		t.Fatal(`result:"abc" missing`)
	}
	if rec, err := s.store.Lookup(ctx, quotedKey("abc")); err != nil || rec.State != intake.Absent {
		t.Errorf("Lookup(abc) = %v, %v; want nothing: the receipt is another key's", rec.State, err)
	}
	if rec, err := s.store.Lookup(ctx, intake.Key{Client: "desk-a", ID: "abc", Quoted: true}); err != nil || rec.State != intake.Absent {
		t.Errorf("a client's key abc: Lookup = %v, %v; want nothing: the reference had no clients", rec.State, err)
	}
}

// TestAPurgeOfAQuotedKeyDeletesTheReferencesReceipt: a purge of the key
// deletes the receipt it found, under the reference's name, so that no
// lookup finds it again.
func TestAPurgeOfAQuotedKeyDeletesTheReferencesReceipt(t *testing.T) {
	ctx := context.Background()
	s := newRecordedStore()
	s.put(t, `result:"abc"`, kv.Entry{Value: referenceReceipt}, time.Hour)
	// The reference's claim beside it, its delete failed: a purge frees
	// the key of it too (found by a review: quoted retries met 409).
	s.put(t, `pending:"abc"`, kv.Entry{Value: "1"}, time.Hour)
	if rec, err := s.store.Purge(ctx, openKey("abc"), ""); err != nil || rec.State != intake.Stored {
		t.Fatalf("Purge = %v, %v; want the reference's receipt purged", rec.State, err)
	}
	for _, name := range []string{`result:"abc"`, `pending:"abc"`} {
		if _, ok := s.stored(t, name); ok {
			t.Errorf("%s is still there", name)
		}
	}
	if rec, err := s.store.Lookup(ctx, quotedKey("abc")); err != nil || rec.State != intake.Absent {
		t.Errorf("Lookup after the purge = %v, %v; want nothing", rec.State, err)
	}
}

// TestAKeyWhoseQuotedNameIsPastKVsLimitStillWorks: escaping the quotes of
// a long key id makes a name past KV's 512 bytes, which KV refuses; the
// reference could never have written it, so it is not read, and the key
// works as it did (found by a review: every call for it failed).
func TestAKeyWhoseQuotedNameIsPastKVsLimitStillWorks(t *testing.T) {
	id := strings.Repeat(`"`, 250) + "abcde"
	s := newRecordedStore()
	if _, err := s.service().Submit(context.Background(), quotedKey(id), []byte(validBody), ""); err != nil {
		t.Fatalf("Submit = %v", err)
	}
}

// TestAPurgeDeletesTheKeysOutcomesUnderBothNames: the reference stored a
// receipt under result:"abc" and another under result:abc (its clients
// sent the key both ways), or this Worker placed an order under abc before
// it read the reference's name. A purge deletes both: the key is free, and
// no receipt comes back once the other is gone (found by a review).
func TestAPurgeDeletesTheKeysOutcomesUnderBothNames(t *testing.T) {
	ctx := context.Background()
	s := newRecordedStore()
	if _, err := s.service().Submit(ctx, openKey("abc"), []byte(validBody), ""); err != nil {
		t.Fatal(err)
	}
	s.put(t, `result:"abc"`, kv.Entry{Value: referenceReceipt}, time.Hour)
	if rec, err := s.store.Purge(ctx, openKey("abc"), ""); err != nil || rec.State != intake.Stored {
		t.Fatalf("Purge = %v, %v; want the key's receipt purged", rec.State, err)
	}
	if rec, err := s.store.Lookup(ctx, quotedKey("abc")); err != nil || rec.State != intake.Absent {
		t.Errorf("Lookup after the purge = %v %s, %v; want nothing", rec.State, rec.Body, err)
	}
}

// TestTheWorkersOwnOpenKeyWinsOverTheReferencesReceipt: a version before
// this one missed the reference's receipt under result:"abc" and left the
// key abc open with its own order id, which may be at the OMS. The key is
// the Worker's own: it stays open for the settler, which asks the OMS and
// stores that order's outcome, rather than reading as the reference's
// receipt, which would have the settler delete the open claim unasked.
func TestTheWorkersOwnOpenKeyWinsOverTheReferencesReceipt(t *testing.T) {
	ctx := context.Background()
	mem, store, c := newSettleStore()
	// The version before, which read no quoted name, claimed the key and
	// left it open; the reference's receipt was there all along.
	claim := claimFor(c, "second", order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10})
	if rec, err := store.Begin(ctx, openKey("abc"), claim); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("Begin = %+v, %v; want the key claimed", rec, err)
	}
	claim.Stage = intake.StageSent
	if err := store.Release(ctx, openKey("abc"), claim); err != nil {
		t.Fatal(err)
	}
	if err := mem.Put(ctx, `result:"abc"`, kv.Entry{Value: referenceReceipt}, kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if rec, err := store.Lookup(ctx, quotedKey("abc")); err != nil || rec.State != intake.Open || rec.OrderID != "order-second" {
		t.Fatalf("Lookup = %v %s, %v; want the key open with its own order id", rec.State, rec.OrderID, err)
	}
	c.now = c.now.Add(time.Hour)
	settler := intake.Claim{Token: "settler", Lease: kv.MinTTL, By: intake.RoleSettler, KeepUntil: c.now.Add(keep)}
	if rec, err := store.Begin(ctx, openKey("abc"), settler); err != nil || rec.Took != intake.EventTakeOver || rec.OrderID != "order-second" {
		t.Errorf("the settler's Begin = %+v, %v; want it to take the open key over, to ask the OMS about order second", rec, err)
	}
}
