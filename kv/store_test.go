package kv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/intake/storetest"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/order"
)

// TestStoreConformance runs the checks every intake.Store passes against
// the reference's KV lifecycle over MemoryNamespace, on a clock the test moves. KV
// neither fences claims nor grants them atomically, and its shortest TTL
// is a minute.
func TestStoreConformance(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := kv.NewMemoryNamespace()
	mem.Now = clock
	storetest.Run(t, kv.NewStore(mem, clock), "memory:", storetest.Options{
		Short:   kv.MinTTL,
		Now:     clock,
		Advance: func(d time.Duration) { now = now.Add(d) },
	})
}

// validBody is an order the Service accepts.
const validBody = `{"symbol":"AAPL","side":"buy","quantity":10}`

// openKey is the open Worker's key id, as the reference stores it.
func openKey(id string) intake.Key { return intake.Key{ID: id} }

// fingerprint is the fingerprint of the order in body.
func fingerprint(t *testing.T, body string) string {
	t.Helper()
	o, err := order.Parse([]byte(body))
	if err != nil {
		t.Fatalf("order.Parse(%s): %v", body, err)
	}
	return o.Fingerprint()
}

// recordedStore is a kv.Store over hooks → recording → MemoryNamespace, on
// a fixed clock: a test sees every call that reaches KV, and what KV holds.
type recordedStore struct {
	mem   *kv.MemoryNamespace
	rec   *kvtest.Recording
	hooks *kvtest.Hooked // set its hooks before the first call
	store *kv.Store
}

func newRecordedStore() *recordedStore {
	s := &recordedStore{mem: kv.NewMemoryNamespace()}
	now := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	s.mem.Now = func() time.Time { return now }
	s.rec = &kvtest.Recording{Namespace: s.mem}
	s.hooks = &kvtest.Hooked{Namespace: s.rec}
	s.store = kv.NewStore(s.hooks, s.mem.Now)
	return s
}

// service is a Service over the Store with the Worker's default TTLs, as
// the Worker runs it in KV mode.
func (s *recordedStore) service() *intake.Service {
	acceptedAt := time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	return intake.New(s.store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		Now: func() time.Time { return acceptedAt }})
}

// stored returns the entry under kvKey in the MemoryNamespace, bypassing
// the wrappers.
func (s *recordedStore) stored(t *testing.T, kvKey string) (kv.Entry, bool) {
	t.Helper()
	e, err := s.mem.Get(context.Background(), kvKey)
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return kv.Entry{}, false
	case err != nil:
		t.Fatalf("MemoryNamespace.Get(%q): %v", kvKey, err)
	}
	return e, true
}

// put stores e under kvKey in the MemoryNamespace, as another Worker would.
func (s *recordedStore) put(t *testing.T, kvKey string, e kv.Entry, ttl time.Duration) {
	t.Helper()
	if err := s.mem.Put(context.Background(), kvKey, e, kv.PutOptions{TTL: ttl}); err != nil {
		t.Fatalf("MemoryNamespace.Put(%q): %v", kvKey, err)
	}
}

// putClaim stores a claim on pending:<kvKey>, as a request in progress on
// another instance (or the reference Worker) does.
func (s *recordedStore) putClaim(t *testing.T, kvKey string) {
	t.Helper()
	s.put(t, "pending:"+kvKey, kv.Entry{Value: "1"}, kv.MinTTL)
}

// wantNoWrites fails if a Put or Delete reached the MemoryNamespace after
// the first before writes.
func (s *recordedStore) wantNoWrites(t *testing.T, what string, before int) {
	t.Helper()
	if got := s.rec.Writes()[before:]; len(got) != 0 {
		t.Errorf("%s wrote %v, want no writes", what, got)
	}
}

// TestLookupAndBeginInEachState checks what Begin and Lookup find in each
// state, and that Begin alone writes, and only when it claims.
func TestLookupAndBeginInEachState(t *testing.T) {
	ctx := context.Background()
	claim := intake.Claim{Token: "t1", Lease: 90 * time.Second}
	tests := []struct {
		name      string
		setup     func(t *testing.T, s *recordedStore)
		wantBegin intake.State
		wantFound intake.State // what Lookup finds, before Begin
	}{
		{"nothing stored is claimed", func(*testing.T, *recordedStore) {}, intake.Held, intake.Absent},
		{"a claim holds the key", func(t *testing.T, s *recordedStore) { s.putClaim(t, "k") }, intake.Held, intake.Held},
		{"a receipt is stored", func(t *testing.T, s *recordedStore) {
			s.put(t, "result:k", kv.Entry{Value: "r", Metadata: []byte(`{"fingerprint":"f"}`)}, time.Hour)
		}, intake.Stored, intake.Stored},
		{"a receipt wins over a claim", func(t *testing.T, s *recordedStore) {
			s.putClaim(t, "k")
			s.put(t, "result:k", kv.Entry{Value: "r", Metadata: []byte(`{"fingerprint":"f"}`)}, time.Hour)
		}, intake.Stored, intake.Stored},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newRecordedStore()
			tc.setup(t, s)
			found, err := s.store.Lookup(ctx, openKey("k"))
			if err != nil || found.State != tc.wantFound {
				t.Fatalf("Lookup = %+v, %v; want state %v", found, err, tc.wantFound)
			}
			s.wantNoWrites(t, "Lookup", 0)
			rec, err := s.store.Begin(ctx, openKey("k"), claim)
			if claims := tc.wantFound == intake.Absent; err != nil || rec.State != tc.wantBegin || rec.Holds() != claims {
				t.Fatalf("Begin = %+v, %v; want state %v, its claim holding the key %v", rec, err, tc.wantBegin, claims)
			}
			if tc.wantBegin == intake.Stored && (string(rec.Body) != "r" || rec.Fingerprint != "f") {
				t.Errorf("Begin = %+v, want the stored receipt r with fingerprint f", rec)
			}
			puts := s.rec.Filter(kvtest.OpPut, "")
			if !rec.Holds() {
				if len(s.rec.Writes()) != 0 {
					t.Errorf("Begin wrote %v, want nothing when it does not claim", s.rec.Writes())
				}
				return
			}
			if len(puts) != 1 || puts[0].Key != "pending:k" || puts[0].Options.TTL != claim.Lease {
				t.Fatalf("Begin wrote %+v, want one claim on pending:k with the lease %v as TTL", puts, claim.Lease)
			}
			if err := s.store.Release(ctx, openKey("k"), claim); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if _, ok := s.stored(t, "pending:k"); ok {
				t.Errorf("pending:k still stored after Release")
			}
			if err := s.store.Release(ctx, openKey("k"), claim); err != nil {
				t.Errorf("second Release: %v, want releasing a free key to succeed", err)
			}
		})
	}
}

// TestLookupPanicReachesTheCaller checks that a panic in the claim lookup,
// which runs on its own goroutine, reaches the caller's goroutine, where
// the HTTP layer recovers it, instead of killing the instance.
func TestLookupPanicReachesTheCaller(t *testing.T) {
	s := newRecordedStore()
	s.hooks.Before = func(op kvtest.Op, k string) error {
		if strings.HasPrefix(k, "pending:") {
			panic("kv: binding exploded")
		}
		return nil
	}
	defer func() {
		if got := recover(); got != "kv: binding exploded" {
			t.Errorf("recovered %v, want the binding's panic", got)
		}
	}()
	s.store.Lookup(context.Background(), openKey("k"))
	t.Errorf("Lookup returned, want it to panic")
}

// TestASettlersBeginSeesTheReceiptWhoseClaimItCannotDelete: beside a
// stored receipt the settler's Begin deletes the claim left there; when
// that delete fails, Begin still says Stored, with the receipt: what it
// read is known, and the claim goes on the next sweep.
func TestASettlersBeginSeesTheReceiptWhoseClaimItCannotDelete(t *testing.T) {
	ctx := context.Background()
	mem := kv.NewMemoryNamespace()
	faulty := &kvtest.Faulty{Namespace: mem, Err: errors.New("kv: delete failed")}
	store := kv.NewStore(faulty, nil)
	key := intake.Key{Client: "desk-a", ID: "k"}
	if err := mem.Put(ctx, "result:desk-a:k", kv.Entry{Value: `{"orderId":"o"}`}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := mem.Put(ctx, "pending:desk-a:k", kv.Entry{Value: "1"}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	faulty.Set(kvtest.Fault{Op: kvtest.OpDelete, Prefix: "pending:", Nth: 1})
	rec, err := store.Begin(ctx, key, intake.Claim{Token: "t", By: intake.RoleSettler, Lease: time.Minute})
	if err != nil || rec.State != intake.Stored || string(rec.Body) != `{"orderId":"o"}` {
		t.Errorf("Begin = %+v, %v; want Stored with the receipt", rec, err)
	}
}

// TestAReleaseRefusedByTheWriteLimitWaitsOutTheSecond: KV takes one write
// a second per key, and a release that follows its claim within one is
// refused: it waits out the second and writes again, so the key is open
// (or free) at once rather than held for the claim's lease.
func TestAReleaseRefusedByTheWriteLimitWaitsOutTheSecond(t *testing.T) {
	ctx := context.Background()
	for _, stage := range []intake.Stage{intake.StageFirm, intake.StageSent} {
		name := map[intake.Stage]string{intake.StageFirm: "a claim deleted", intake.StageSent: "a sent claim left open"}[stage]
		t.Run(name, func(t *testing.T) {
			mem, now := limitedMemory()
			store := kv.NewStore(mem, mem.Now)
			var slept time.Duration
			store.Sleep = func(_ context.Context, d time.Duration) error {
				slept += d
				*now = now.Add(d)
				return nil
			}
			key := intake.Key{Client: "desk-a", ID: "k"}
			claim := intake.Claim{Token: "t", Fingerprint: fingerprint(t, validBody), OrderID: "o", AcceptedAt: *now,
				Lease: config.DefaultPendingTTL, KeepUntil: now.Add(time.Hour)}
			if rec, err := store.Begin(ctx, key, claim); err != nil || rec.Took != intake.EventClaim {
				t.Fatalf("Begin = %+v, %v", rec, err)
			}
			*now = now.Add(50 * time.Millisecond)
			claim.Stage = stage
			if err := store.Release(ctx, key, claim); err != nil {
				t.Fatalf("Release within a second of the claim = %v, want it written once the second has passed", err)
			}
			if slept != time.Second {
				t.Errorf("slept %v, want a second", slept)
			}
			rec, err := store.Lookup(ctx, key)
			want := map[intake.Stage]intake.State{intake.StageFirm: intake.Absent, intake.StageSent: intake.Open}[stage]
			if err != nil || rec.State != want {
				t.Errorf("after the release the key is %v (%v), want %v", rec.State, err, want)
			}
		})
	}
}

// TestAClaimRefusedByTheWriteLimitLeavesTheKeyAlone: a claim written
// within a second of another's write is refused (429): nothing of it
// landed, so Begin writes nothing more, where a release would have
// overwritten the other's claim with its own order.
func TestAClaimRefusedByTheWriteLimitLeavesTheKeyAlone(t *testing.T) {
	ctx := context.Background()
	mem, now := limitedMemory()
	first := kv.NewStore(mem, mem.Now)
	hooked := &kvtest.Hooked{Namespace: mem}
	second := kv.NewStore(hooked, mem.Now)
	second.Sleep = func(context.Context, time.Duration) error { *now = now.Add(time.Second); return nil }
	key := intake.Key{Client: "desk-a", ID: "k"}
	claim := func(token, body string) intake.Claim {
		return intake.Claim{Token: token, Fingerprint: fingerprint(t, body), OrderID: "order-" + token, AcceptedAt: *now,
			Lease: config.DefaultPendingTTL, KeepUntil: now.Add(time.Hour)}
	}
	// Both read the key free; the first's claim lands between the
	// second's read and its write.
	hooked.Before = func(op kvtest.Op, k string) error {
		if op == kvtest.OpPut && strings.HasPrefix(k, "pending:") {
			hooked.Before = nil
			if rec, err := first.Begin(ctx, key, claim("a", validBody)); err != nil || rec.Took != intake.EventClaim {
				t.Fatalf("the first Begin = %+v, %v", rec, err)
			}
		}
		return nil
	}
	other := `{"symbol":"MSFT","side":"sell","quantity":5}`
	if _, err := second.Begin(ctx, key, claim("b", other)); !errors.Is(err, kv.ErrRateLimited) {
		t.Fatalf("the second Begin within the second = %v, want ErrRateLimited", err)
	}
	rec, err := first.Lookup(ctx, key)
	if err != nil || rec.State != intake.Held || rec.OrderID != "order-a" {
		t.Errorf("the key after the refused claim = %v %s (%v), want held by the first claim, order-a", rec.State, rec.OrderID, err)
	}
}

// TestAHeldClaimOnAnUnresolvedKeyHoldsIt: a live claim on a key the
// settler gave up on ("state":"unresolved-held", as an earlier version
// wrote every such takeover, and a claim minted from the instance's
// memory of an unresolved key still does) holds the key until its lease
// ends, like any claim, and is open and unresolved after: no other
// request takes it over while its holder may be calling the gateway.
func TestAHeldClaimOnAnUnresolvedKeyHoldsIt(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	mem, store := storeAt(&now)
	key := intake.Key{Client: "desk-a", ID: "k"}
	meta := `{"orderId":"o","acceptedAt":` + fmt.Sprint(now.Add(-time.Hour).UnixMilli()) + `,"leaseUntil":` +
		fmt.Sprint(now.Add(time.Minute).UnixMilli()) + `,"client":"desk-a","attempts":3,"symbol":"AAPL","side":"buy","quantity":10,"state":"unresolved-held"}`
	if err := mem.Put(ctx, "pending:desk-a:k", kv.Entry{Value: "1", Metadata: []byte(meta)}, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	rec, err := store.Lookup(ctx, key)
	if err != nil || rec.State != intake.Held || rec.GiveUp != intake.GivenUp || rec.OrderID != "o" || rec.WrittenPhase != intake.PhaseAbsent {
		t.Fatalf("a live claim on an unresolved key = %+v, %v; want Held, unresolved, order o, no phase written", rec, err)
	}
	claim := intake.Claim{Token: "t", Fingerprint: fingerprint(t, validBody), OrderID: "other", AcceptedAt: now, Lease: time.Minute, KeepUntil: now.Add(time.Hour)}
	if rec, err := store.Begin(ctx, key, claim); err != nil || rec.State != intake.Held {
		t.Errorf("Begin beside it = %+v, %v; want Held: the claim is live", rec, err)
	}
	now = now.Add(time.Minute)
	if rec, err := store.Lookup(ctx, key); err != nil || rec.State != intake.Open || rec.GiveUp != intake.GivenUp {
		t.Errorf("once its lease ended = %+v, %v; want Open, unresolved", rec, err)
	}
}

// TestClaimsWriteTheirPhase: a claim made with a gateway writes its key's
// phase in its metadata by name, beside the flags it follows from, and a
// release writes the phase it leaves: what a later version decides by.
func TestClaimsWriteTheirPhase(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	mem, store := storeAt(&now)
	key := intake.Key{Client: "desk-a", ID: "k"}
	phase := func() string {
		t.Helper()
		e, err := mem.Get(ctx, "pending:desk-a:k")
		if err != nil {
			t.Fatal(err)
		}
		_, after, _ := strings.Cut(string(e.Metadata), `"phase":"`)
		name, _, _ := strings.Cut(after, `"`)
		return name
	}
	claim := intake.Claim{Token: "t", Fingerprint: fingerprint(t, validBody), OrderID: "o", AcceptedAt: now, Lease: time.Minute, KeepUntil: now.Add(time.Hour)}
	if _, err := store.Begin(ctx, key, claim); err != nil {
		t.Fatal(err)
	}
	if got := phase(); got != "held" {
		t.Errorf("a claim's phase = %q, want held", got)
	}
	now = now.Add(time.Second)
	claim.Stage, claim.Attempts, claim.GiveUp = intake.StageSent, 5, intake.GivenUp
	if err := store.Release(ctx, key, claim); err != nil {
		t.Fatal(err)
	}
	if got := phase(); got != "unresolved" {
		t.Errorf("the phase of a key released given up on = %q, want unresolved", got)
	}
}

// storeAt is a Store over a memory namespace whose clock, and the
// Store's, read *now.
func storeAt(now *time.Time) (*kv.MemoryNamespace, *kv.Store) {
	mem := kv.NewMemoryNamespace()
	mem.Now = func() time.Time { return *now }
	return mem, kv.NewStore(mem, mem.Now)
}
