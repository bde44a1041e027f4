package kv_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
)

// staleReads is a namespace whose reads miss the keys in hidden, as a KV
// read in another location misses a write it has not yet seen; writes
// reach the namespace underneath.
type staleReads struct {
	*kv.MemoryNamespace
	hidden map[string]bool
}

func (s *staleReads) Get(ctx context.Context, key string) (kv.Entry, error) {
	if s.hidden[key] {
		return kv.Entry{}, kv.ErrNotFound
	}
	return s.MemoryNamespace.Get(ctx, key)
}

func (s *staleReads) List(ctx context.Context, prefix, cursor string, limit int) ([]kv.Listed, string, error) {
	names, next, err := s.MemoryNamespace.List(ctx, prefix, cursor, limit)
	kept := names[:0]
	for _, l := range names {
		if !s.hidden[l.Name] {
			kept = append(kept, l)
		}
	}
	return kept, next, err
}

// letterStore is a DeadLetterStore over mem on a fixed clock, and the
// store's view whose reads miss what hide names.
func letterStore(t *testing.T) (*kv.DeadLetterStore, *staleReads) {
	t.Helper()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	mem := kv.NewMemoryNamespace()
	mem.Now = func() time.Time { return now }
	stale := &staleReads{MemoryNamespace: mem, hidden: map[string]bool{}}
	s := kv.NewDeadLetterStore(stale)
	s.Now = mem.Now
	return s, stale
}

// names lists the namespace's dead-letter names, as written.
func letterNames(t *testing.T, mem *kv.MemoryNamespace) []string {
	t.Helper()
	names, _, err := mem.List(context.Background(), "deadletter:", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range names {
		got = append(got, l.Name)
	}
	return got
}

// TestAcknowledgeNeverTouchesALetterItsReadMissed: two letters of one key,
// the newer one recorded where the acknowledgement's reads have not yet
// seen it. Acknowledging the key's letter acknowledges the older one, the
// one it names, and the newer one stays listed.
func TestAcknowledgeNeverTouchesALetterItsReadMissed(t *testing.T) {
	ctx := context.Background()
	s, stale := letterStore(t)
	key := intake.Key{Client: "desk", ID: "k1"}
	older := intake.DeadLetter{Key: key, ID: "m1", OrderID: "o1", Unresolved: true, Received: stale.Now()}
	newer := intake.DeadLetter{Key: key, ID: "m2", OrderID: "o1", Unresolved: true, Received: stale.Now().Add(time.Minute)}
	for _, d := range []intake.DeadLetter{older, newer} {
		if err := s.Record(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	names := letterNames(t, stale.MemoryNamespace)
	if len(names) != 2 {
		t.Fatalf("letter names %q, want one per letter", names)
	}
	for _, n := range names {
		if strings.HasSuffix(n, "m2") {
			stale.hidden[n] = true
		}
	}
	got, err := s.Acknowledge(ctx, key, "")
	if err != nil || got.ID != "m1" || got.Acknowledged.IsZero() {
		t.Fatalf("Acknowledge(key, \"\") = %+v, %v; want m1 acknowledged, the one letter its read saw", got, err)
	}
	clear(stale.hidden)
	left, err := s.Letters(ctx, key)
	if err != nil || len(left) != 1 || left[0].ID != "m2" {
		t.Fatalf("letters after the acknowledgement %+v, %v; want m2, which the acknowledgement never read", left, err)
	}
	listed, _, err := s.List(ctx, "", 10)
	if err != nil || len(listed) != 1 || listed[0].ID != "m2" {
		t.Errorf("List = %+v, %v; want m2 alone", listed, err)
	}
}

// TestAcknowledgeOfANamedLetterChangesNothingWhenTheKeyHoldsAnother: the
// precondition. A letter named but not held, beside another of the key,
// is a 409's error and acknowledges nothing; with none named, a key of
// two letters is too; a key of none is ErrNotFound.
func TestAcknowledgeOfANamedLetterChangesNothingWhenTheKeyHoldsAnother(t *testing.T) {
	ctx := context.Background()
	s, stale := letterStore(t)
	key := intake.Key{ID: "k1"}
	if _, err := s.Acknowledge(ctx, key, "m1"); !errors.Is(err, intake.ErrNotFound) {
		t.Errorf("Acknowledge of a key without letters = %v, want ErrNotFound", err)
	}
	for _, id := range []string{"m2", "m3"} {
		if err := s.Record(ctx, intake.DeadLetter{Key: key, ID: id, Received: stale.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Acknowledge(ctx, key, "m1"); !errors.Is(err, intake.ErrOtherLetter) {
		t.Errorf("Acknowledge of m1 while the key holds m2 and m3 = %v, want ErrOtherLetter", err)
	}
	if _, err := s.Acknowledge(ctx, key, ""); !errors.Is(err, intake.ErrOtherLetter) {
		t.Errorf("Acknowledge naming no letter of a key with two = %v, want ErrOtherLetter", err)
	}
	if left, _ := s.Letters(ctx, key); len(left) != 2 {
		t.Fatalf("letters after the refusals %+v, want both", left)
	}
	got, err := s.Acknowledge(ctx, key, "m3")
	if err != nil || got.ID != "m3" {
		t.Fatalf("Acknowledge(m3) = %+v, %v", got, err)
	}
	if again, err := s.Acknowledge(ctx, key, "m3"); err != nil || again.ID != "m3" || !again.Acknowledged.Equal(got.Acknowledged) {
		t.Errorf("Acknowledge(m3) again = %+v, %v; want m3 as it was acknowledged", again, err)
	}
	if left, _ := s.Letters(ctx, key); len(left) != 1 || left[0].ID != "m2" {
		t.Errorf("letters %+v, want m2 alone", left)
	}
}

// TestALetterDeliveredAgainAfterItsAcknowledgementIsNotListedAgain: the
// acknowledgement is a mark kept as long as Queues keeps a message, which
// a later delivery of the same message finds.
func TestALetterDeliveredAgainAfterItsAcknowledgementIsNotListedAgain(t *testing.T) {
	ctx := context.Background()
	s, stale := letterStore(t)
	d := intake.DeadLetter{Key: intake.Key{Client: "desk", ID: "k1"}, ID: "m1", Unresolved: true, Received: stale.Now()}
	if err := s.Record(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acknowledge(ctx, d.Key, "m1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, d); !errors.Is(err, intake.ErrLetterAcknowledged) {
		t.Errorf("Record of the letter again = %v, want ErrLetterAcknowledged", err)
	}
	if listed, _, _ := s.List(ctx, "", 10); len(listed) != 0 {
		t.Errorf("List = %+v, want nothing: the letter was acknowledged", listed)
	}
	// Another message about the key is another letter.
	if err := s.Record(ctx, intake.DeadLetter{Key: d.Key, ID: "m2", Received: stale.Now()}); err != nil {
		t.Errorf("Record of a new letter of the key = %v", err)
	}
}

// TestALetterAnOlderVersionRecordedCanBeAcknowledged: such a letter has no
// id, and its name is deadletter:<key>; naming no letter acknowledges it.
func TestALetterAnOlderVersionRecordedCanBeAcknowledged(t *testing.T) {
	ctx := context.Background()
	s, stale := letterStore(t)
	old := kv.Entry{Value: "1", Metadata: []byte(`{"client":"desk","key":"k1","orderId":"o1","attempts":3,"unresolved":"true","received":1795000000000}`)}
	if err := stale.Put(ctx, "deadletter:desk:k1", old, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	key := intake.Key{Client: "desk", ID: "k1"}
	got, err := s.Acknowledge(ctx, key, "")
	if err != nil || got.OrderID != "o1" || got.ID != "" {
		t.Fatalf("Acknowledge = %+v, %v; want the older version's letter", got, err)
	}
	if listed, _, _ := s.List(ctx, "", 10); len(listed) != 0 {
		t.Errorf("List = %+v, want nothing", listed)
	}
}

// TestAKeysLettersAreFoundBehindLongerKeys: a letter's name is
// deadletter:<key>\x7f<id>, and \x7f sorts after every printable byte: a
// list of the names that start with deadletter:<key> alone meets the
// letters of every longer key that starts with it first (1, then 10000 …
// 20000), and gave up before it reached the key's own (found by a review).
func TestAKeysLettersAreFoundBehindLongerKeys(t *testing.T) {
	ctx := context.Background()
	s, _ := letterStore(t)
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	key := intake.Key{Client: "desk-a", ID: "1"}
	if err := s.Record(ctx, intake.DeadLetter{Key: key, ID: "m-1", OrderID: "o1", Unresolved: true, Received: at}); err != nil {
		t.Fatal(err)
	}
	for i := 10000; i <= 20000; i++ {
		id := strconv.Itoa(i)
		if err := s.Record(ctx, intake.DeadLetter{Key: intake.Key{Client: "desk-a", ID: id}, ID: "m" + id, Received: at}); err != nil {
			t.Fatal(err)
		}
	}
	if letters, err := s.Letters(ctx, key); err != nil || len(letters) != 1 || letters[0].ID != "m-1" {
		t.Fatalf("Letters(desk-a:1) = %+v, %v; want its one letter", letters, err)
	}
	if got, err := s.Acknowledge(ctx, key, ""); err != nil || got.ID != "m-1" {
		t.Fatalf("Acknowledge(desk-a:1) naming no letter = %+v, %v; want its one letter", got, err)
	}
}

// TestTheDeadLettersRefuseAnotherListingsCursor: the orders' listing and
// the dead letters' hand out cursors of one form; each goes on only with
// its own list (found by a review: the letters answered an empty page).
func TestTheDeadLettersRefuseAnotherListingsCursor(t *testing.T) {
	ctx := context.Background()
	s, ns := letterStore(t)
	store := kv.NewStore(ns, time.Now)
	for _, id := range []string{"a", "b"} {
		k := intake.Key{Client: "desk-a", ID: id}
		c := intake.Claim{Token: id, Lease: time.Minute}
		if _, err := store.Begin(ctx, k, c); err != nil {
			t.Fatal(err)
		}
	}
	page, err := store.List(ctx, intake.ListQuery{Clients: []string{"desk-a"}, States: intake.AnyAttention, Limit: 1})
	if err != nil || page.Cursor == "" {
		t.Fatalf("the orders' first page = %+v, %v; want a cursor", page, err)
	}
	if _, _, err := s.List(ctx, page.Cursor, 10); !errors.Is(err, intake.ErrBadCursor) {
		t.Fatalf("the dead letters' List with the orders' cursor = %v, want ErrBadCursor", err)
	}
}
