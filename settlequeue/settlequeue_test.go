package settlequeue_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
	"github.com/edge-orders/edge-orders/settlequeue"
)

// now is the fixed clock of every test here.
var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// grace is the Worker's default sweep grace.
const grace = time.Minute

// fakeSettler answers Settle for each key with its scripted settlement
// (the zero Settlement, not final, by default) or error, and records the
// keys it was asked to settle.
type fakeSettler struct {
	answers map[intake.Key]intake.Settlement
	errs    map[intake.Key]error

	mu      sync.Mutex
	settled []intake.Key
}

func (s *fakeSettler) Settle(_ context.Context, key intake.Key) (intake.Settlement, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settled = append(s.settled, key)
	return s.answers[key], s.errs[key]
}

func (s *fakeSettler) keys() []intake.Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]intake.Key(nil), s.settled...)
}

// sent is one message a recordingSender sent.
type sent struct {
	body  string
	delay time.Duration
}

// recordingSender records each message, and fails each with err if set.
type recordingSender struct {
	err error

	mu   sync.Mutex
	sent []sent
}

func (r *recordingSender) Send(_ context.Context, body []byte, delay time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, sent{string(body), delay})
	return r.err
}

func (r *recordingSender) messages() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sent(nil), r.sent...)
}

func TestMessageRoundTrips(t *testing.T) {
	for _, key := range []intake.Key{
		{ID: "k"},
		{Client: "desk-a", ID: "order-1"},
		{Client: "desk-a", ID: `a:b "quoted" \ back`},
		{ID: "é\u2028<&>\x7f"},
	} {
		t.Run(key.String(), func(t *testing.T) {
			b := settlequeue.Message(key)
			got, err := settlequeue.ParseMessage(b)
			if err != nil || got != key {
				t.Errorf("ParseMessage(%s) = %+v, %v; want %+v", b, got, err, key)
			}
		})
	}
}

func TestParseMessageRefusesWhatMessageDoesNotWrite(t *testing.T) {
	for _, body := range []string{
		``,
		`garbage`,
		`null`,
		`[]`,
		`{}`,
		`{"client":"desk-a"}`,
		`{"client":"desk-a","id":""}`,
		`{"client":"desk-a","id":7}`,
		`{"client":1,"id":"k"}`,
		`{"id":"k"}`,
		`{"client":"desk-a","id":"k"`,
	} {
		t.Run(body, func(t *testing.T) {
			if key, err := settlequeue.ParseMessage([]byte(body)); !errors.Is(err, settlequeue.ErrNotMessage) {
				t.Errorf("ParseMessage(%s) = %+v, %v; want ErrNotMessage", body, key, err)
			}
		})
	}
}

// FuzzParseMessage: whatever ParseMessage accepts names a key that Message
// writes back to a body naming the same key.
func FuzzParseMessage(f *testing.F) {
	f.Add([]byte(`{"client":"desk-a","id":"k"}`))
	f.Add([]byte(`{"client":"","id":"\ud800:x"}`))
	f.Add([]byte(`{"id":"k","client":"c","id":"j"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		key, err := settlequeue.ParseMessage(body)
		if err != nil {
			return
		}
		if key.ID == "" {
			t.Fatalf("ParseMessage(%q) accepted an empty id", body)
		}
		again, err := settlequeue.ParseMessage(settlequeue.Message(key))
		if err != nil || again != key {
			t.Fatalf("ParseMessage(Message(%+v)) = %+v, %v", key, again, err)
		}
	})
}

// TestHandle checks what the consumer does with each answer of the
// settler: a final key needs no message, a key still unknown gets one
// for its next attempt, and a failure is the queue's to retry.
func TestHandle(t *testing.T) {
	ctx := context.Background()
	key := intake.Key{Client: "desk-a", ID: "k"}
	errStorage := errors.New("intake: storage unavailable")
	errQueue := errors.New("queue: send failed")
	tests := []struct {
		name    string
		st      intake.Settlement
		err     error
		sendErr error
		wantErr error
		want    []sent
	}{
		{name: "final: no message", st: intake.Settlement{Final: true}},
		{name: "unresolved: no message", st: intake.Settlement{Final: true, Unresolved: true}},
		{name: "not final: one message for the next attempt", st: intake.Settlement{NextAttempt: now.Add(4 * time.Second), Attempts: 3},
			want: []sent{{string(settlequeue.Message(key)), 4 * time.Second}}},
		{name: "not final and already due: no delay", st: intake.Settlement{NextAttempt: now.Add(-time.Second)},
			want: []sent{{string(settlequeue.Message(key)), 0}}},
		{name: "not final and due after the queue's longest delay: the longest, and the due time", st: intake.Settlement{NextAttempt: now.Add(24 * time.Hour)},
			want: []sent{{`{"client":"desk-a","id":"k","due":` + strconv.FormatInt(now.Add(24*time.Hour).UnixMilli(), 10) + `}`, settlequeue.MaxDelay}}},
		{name: "the settler fails: returned, no message", err: errStorage, wantErr: errStorage},
		{name: "the settler fails with the key left open: the next message", st: intake.Settlement{NextAttempt: now.Add(8 * time.Second), Attempts: 4},
			err: errStorage, want: []sent{{string(settlequeue.Message(key)), 8 * time.Second}}},
		{name: "the settler fails with the key left open, and the send fails: the send's error", st: intake.Settlement{NextAttempt: now.Add(8 * time.Second)},
			err: errStorage, sendErr: errQueue, wantErr: errQueue, want: []sent{{string(settlequeue.Message(key)), 8 * time.Second}}},
		{name: "the send fails: returned", st: intake.Settlement{NextAttempt: now.Add(time.Second)}, sendErr: errQueue, wantErr: errQueue,
			want: []sent{{string(settlequeue.Message(key)), time.Second}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &fakeSettler{answers: map[intake.Key]intake.Settlement{key: tc.st}, errs: map[intake.Key]error{key: tc.err}}
			q := &recordingSender{err: tc.sendErr}
			c := settlequeue.Consumer{Settler: s, Queue: q, Now: func() time.Time { return now }}
			err := c.Handle(ctx, settlequeue.Message(key))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("Handle = %v, want %v", err, tc.wantErr)
			}
			if got := s.keys(); !slices.Equal(got, []intake.Key{key}) {
				t.Errorf("settled %v, want %v", got, key)
			}
			if got := q.messages(); !slices.Equal(got, tc.want) {
				t.Errorf("sent %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("not a message: ErrNotMessage, nothing settled", func(t *testing.T) {
		s := &fakeSettler{}
		q := &recordingSender{}
		c := settlequeue.Consumer{Settler: s, Queue: q, Now: func() time.Time { return now }}
		if err := c.Handle(ctx, []byte(`{"hello":"world"}`)); !errors.Is(err, settlequeue.ErrNotMessage) {
			t.Errorf("Handle = %v, want ErrNotMessage", err)
		}
		if len(s.keys()) != 0 || len(q.messages()) != 0 {
			t.Errorf("settled %v and sent %v, want nothing", s.keys(), q.messages())
		}
	})
}

// TestAMessageThatComesBeforeItsDueTimeIsSentAgain: a key due past the
// queue's longest delay (a give-up check 2 × KV_READ_LAG_SECONDS out) is
// sent a message carrying its due time. Arriving early, the message
// settles nothing and is sent again, for what remains; settled early, it
// would find the key not due and end the key's chain (found by a review).
func TestAMessageThatComesBeforeItsDueTimeIsSentAgain(t *testing.T) {
	ctx := context.Background()
	key := intake.Key{Client: "desk-a", ID: "k"}
	due := now.Add(30 * time.Hour)
	clock := now
	s := &fakeSettler{answers: map[intake.Key]intake.Settlement{key: {Final: true, Result: intake.SettleAccepted}}}
	q := &recordingSender{}
	c := settlequeue.Consumer{Settler: s, Queue: q, Now: func() time.Time { return clock }}
	if err := c.Schedule(ctx, key, due); err != nil {
		t.Fatal(err)
	}
	for i, wantDelay := range []time.Duration{settlequeue.MaxDelay, settlequeue.MaxDelay, 6 * time.Hour} {
		msgs := q.messages()
		if len(msgs) != i+1 || msgs[i].delay != wantDelay {
			t.Fatalf("messages %+v; want message %d after %v", msgs, i+1, wantDelay)
		}
		if got, err := settlequeue.ParseMessage([]byte(msgs[i].body)); err != nil || got != key {
			t.Fatalf("ParseMessage(%s) = %+v, %v; want %+v", msgs[i].body, got, err, key)
		}
		clock = clock.Add(msgs[i].delay)
		if err := c.Handle(ctx, []byte(msgs[i].body)); err != nil {
			t.Fatalf("Handle(%s) = %v", msgs[i].body, err)
		}
		if i < 2 && len(s.keys()) != 0 {
			t.Fatalf("message %d, %v before the due time, settled %v; want nothing settled", i+1, due.Sub(clock), s.keys())
		}
	}
	if !clock.Equal(due) || !slices.Equal(s.keys(), []intake.Key{key}) || len(q.messages()) != 3 {
		t.Errorf("at %v settled %v, with %d messages; want the key settled at its due time %v, by the third", clock, s.keys(), len(q.messages()), due)
	}
	for _, body := range []string{`{"client":"c","id":"k","due":"soon"}`, `{"client":"c","id":"k","due":-1}`, `{"client":"c","id":"k","due":1e300}`} {
		if _, err := settlequeue.ParseMessage([]byte(body)); !errors.Is(err, settlequeue.ErrNotMessage) {
			t.Errorf("ParseMessage(%s) = %v, want ErrNotMessage", body, err)
		}
	}
	// A due time past MaxDue, which the Worker never writes, is refused,
	// not sent again for ever (found by a review).
	s.settled, q.sent = nil, nil
	far := `{"client":"desk-a","id":"k","due":` + strconv.FormatInt(clock.Add(settlequeue.MaxDue+time.Second).UnixMilli(), 10) + `}`
	if err := c.Handle(ctx, []byte(far)); !errors.Is(err, settlequeue.ErrNotMessage) || len(q.messages()) != 0 || len(s.keys()) != 0 {
		t.Errorf("Handle(%s) = %v, sending %v and settling %v; want ErrNotMessage, nothing sent or settled", far, err, q.messages(), s.keys())
	}
}

// TestMaxDueIsPastEveryDueTime: the latest a key is due is a give-up
// check 2 × KV_READ_LAG_SECONDS out, after a backoff.
func TestMaxDueIsPastEveryDueTime(t *testing.T) {
	if latest := 2*config.MaxSeconds*time.Second + intake.MaxSettleDelay; latest >= settlequeue.MaxDue {
		t.Errorf("a key may be due %v out, past MaxDue (%v)", latest, settlequeue.MaxDue)
	}
	// A settler that finds the key held looks again when the holder's
	// lease ends (intake.DueAfterHolder), a whole lease out at most.
	vars := map[string]string{"RESULT_TTL_SECONDS": "2592000", "PENDING_TTL_SECONDS": "691200", "OPEN_ACCESS": "true"} // 30 days, 8
	if cfg, err := config.Load(func(n string) (string, bool) { v, ok := vars[n]; return v, ok }); err == nil && cfg.PendingTTL >= settlequeue.MaxDue {
		t.Errorf("config takes a lease of %v, past MaxDue (%v): a settler's look at a held key would be refused", cfg.PendingTTL, settlequeue.MaxDue)
	}
}

// TestScheduleSendsTheKeysMessage: Schedule is what intake.Options.Schedule
// calls after an unknown outcome.
func TestScheduleSendsTheKeysMessage(t *testing.T) {
	q := &recordingSender{}
	c := settlequeue.Consumer{Queue: q, Now: func() time.Time { return now }}
	key := intake.Key{ID: "k"}
	if err := c.Schedule(context.Background(), key, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, want := q.messages(), []sent{{string(settlequeue.Message(key)), 2 * time.Second}}; !slices.Equal(got, want) {
		t.Errorf("sent %+v, want %+v", got, want)
	}
}

// overdueStore is a kv.Store holding open keys due at the given offsets
// from now.
func overdueStore(t *testing.T, due map[intake.Key]time.Duration) *kv.Store {
	t.Helper()
	ctx := context.Background()
	clock := func() time.Time { return now }
	mem := kv.NewMemoryNamespace()
	mem.Now = clock
	store := kv.NewStore(mem, clock)
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	for key, at := range due {
		c := intake.Claim{Token: "t", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-" + key.ID, AcceptedAt: now.Add(-time.Hour),
			Lease: kv.MinTTL, KeepUntil: now.Add(48 * time.Hour)}
		if _, err := store.Begin(ctx, key, c); err != nil {
			t.Fatal(err)
		}
		c.Stage, c.Attempts, c.NextAttempt = intake.StageSent, 5, now.Add(at)
		if err := store.Release(ctx, key, c); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// TestSweepSettlesOnlyKeysOverdueByMoreThanTheGrace: the sweep takes a
// key's message for lost only once the key is due by more than the
// grace; it settles those, and sends each one still unknown a message.
func TestSweepSettlesOnlyKeysOverdueByMoreThanTheGrace(t *testing.T) {
	ctx := context.Background()
	lost := intake.Key{Client: "desk-a", ID: "lost"}
	lostLong := intake.Key{Client: "desk-a", ID: "lost-long-ago"}
	store := overdueStore(t, map[intake.Key]time.Duration{
		lostLong:                           -time.Hour,
		lost:                               -grace - time.Second,
		{Client: "desk-a", ID: "at-grace"}: -grace,
		{Client: "desk-a", ID: "coming"}:   -grace + time.Second,
		{Client: "desk-a", ID: "later"}:    time.Minute,
	})
	s := &fakeSettler{answers: map[intake.Key]intake.Settlement{
		lostLong: {Final: true},
		lost:     {NextAttempt: now.Add(8 * time.Second), Attempts: 6},
	}}
	q := &recordingSender{}
	c := settlequeue.Consumer{Settler: s, Queue: q, Now: func() time.Time { return now }}
	n, err := c.Sweep(ctx, store, now, grace, 100)
	if err != nil {
		t.Fatal(err)
	}
	got := s.keys()
	slices.SortFunc(got, func(a, b intake.Key) int { return strings.Compare(a.String(), b.String()) })
	if want := []intake.Key{lost, lostLong}; n != 2 || !slices.Equal(got, want) {
		t.Errorf("Sweep settled %d: %v, want %v", n, got, want)
	}
	if got, want := q.messages(), []sent{{string(settlequeue.Message(lost)), 8 * time.Second}}; !slices.Equal(got, want) {
		t.Errorf("sent %+v, want %+v: one message for the key still unknown", got, want)
	}

	t.Run("a failure is returned, and the other keys are settled", func(t *testing.T) {
		errStorage := errors.New("intake: storage unavailable")
		s := &fakeSettler{answers: map[intake.Key]intake.Settlement{lostLong: {Final: true}}, errs: map[intake.Key]error{lost: errStorage}}
		c := settlequeue.Consumer{Settler: s, Queue: &recordingSender{}, Now: func() time.Time { return now }}
		n, err := c.Sweep(ctx, store, now, grace, 100)
		if !errors.Is(err, errStorage) || n != 2 || len(s.keys()) != 2 {
			t.Errorf("Sweep = %d, %v, settling %v; want 2, the settler's error, both keys tried", n, err, s.keys())
		}
	})
	t.Run("a failure beside a key left open: returned, and the key's next message sent", func(t *testing.T) {
		errStorage := errors.New("intake: storage unavailable")
		s := &fakeSettler{answers: map[intake.Key]intake.Settlement{lost: {NextAttempt: now.Add(8 * time.Second)}, lostLong: {Final: true}},
			errs: map[intake.Key]error{lost: errStorage}}
		q := &recordingSender{}
		c := settlequeue.Consumer{Settler: s, Queue: q, Now: func() time.Time { return now }}
		if _, err := c.Sweep(ctx, store, now, grace, 100); !errors.Is(err, errStorage) {
			t.Errorf("Sweep = %v, want the settler's error", err)
		}
		if got, want := q.messages(), []sent{{string(settlequeue.Message(lost)), 8 * time.Second}}; !slices.Equal(got, want) {
			t.Errorf("sent %+v, want %+v", got, want)
		}
	})
	t.Run("at most limit keys", func(t *testing.T) {
		s := &fakeSettler{}
		c := settlequeue.Consumer{Settler: s, Queue: &recordingSender{}, Now: func() time.Time { return now }}
		if n, err := c.Sweep(ctx, store, now, grace, 1); err != nil || n != 1 || len(s.keys()) != 1 {
			t.Errorf("Sweep(limit 1) = %d, %v, settling %v; want one key", n, err, s.keys())
		}
	})
	t.Run("a list that fails settles nothing", func(t *testing.T) {
		s := &fakeSettler{}
		c := settlequeue.Consumer{Settler: s, Queue: &recordingSender{}, Now: func() time.Time { return now }}
		errList := errors.New("kv: list failed")
		if n, err := c.Sweep(ctx, failingOverdue{errList}, now, grace, 100); !errors.Is(err, errList) || n != 0 || len(s.keys()) != 0 {
			t.Errorf("Sweep = %d, %v, settling %v; want 0 and the list's error", n, err, s.keys())
		}
	})
}

// failingOverdue is a list of overdue keys that always fails.
type failingOverdue struct{ err error }

func (f failingOverdue) Overdue(context.Context, time.Time, int) ([]intake.Key, error) {
	return nil, f.err
}

// partialOverdue is a list of overdue keys that found keys and failed
// after, as kv.Store.Overdue does when it cannot save its cursor.
type partialOverdue struct {
	keys []intake.Key
	err  error
}

func (p partialOverdue) Overdue(context.Context, time.Time, int) ([]intake.Key, error) {
	return p.keys, p.err
}

// TestSweepSettlesTheKeysAListFoundBesideItsError: a listing that found
// overdue keys and then failed (its cursor's save got KV's 429, two Cron
// runs at once) returns them beside its error; the sweep settles them and
// reports the error. Dropped, they would wait for a run whose save works,
// and never come while the save keeps failing (found by a review).
func TestSweepSettlesTheKeysAListFoundBesideItsError(t *testing.T) {
	ctx := context.Background()
	found := []intake.Key{{Client: "desk-a", ID: "a"}, {Client: "desk-a", ID: "b"}}
	errCursor := errors.New("kv: saving the sweep's cursor: 429")
	s := &fakeSettler{answers: map[intake.Key]intake.Settlement{}}
	cons := settlequeue.Consumer{Settler: s, Queue: &recordingSender{}, Now: func() time.Time { return now }}
	n, err := cons.Sweep(ctx, partialOverdue{keys: found, err: errCursor}, now, grace, 10)
	if n != len(found) || !errors.Is(err, errCursor) || len(s.keys()) != len(found) {
		t.Fatalf("Sweep = %d, %v, settling %v; want both keys settled and the list's error", n, err, s.keys())
	}
}

// slowSettler settles each key in took of its clock's time, as a settle
// that waits the OMS's timeout does.
type slowSettler struct {
	fakeSettler
	clock *time.Time
	took  time.Duration
}

func (s *slowSettler) Settle(ctx context.Context, key intake.Key) (intake.Settlement, error) {
	*s.clock = s.clock.Add(s.took)
	return s.fakeSettler.Settle(ctx, key)
}

// TestASweepPastItsBudgetLeavesTheRestToTheQueue: settling each key may
// wait the OMS's timeout, and a sweep that outlasted the Cron Trigger's
// interval, or its 15 minutes, would be cut off among keys its walk has
// passed, which would wait for the walk to come round. Past SweepBudget
// it settles no more, and sends each key left a message due now, for the
// queue to settle (found by a review).
func TestASweepPastItsBudgetLeavesTheRestToTheQueue(t *testing.T) {
	ctx := context.Background()
	var keys []intake.Key
	final := map[intake.Key]intake.Settlement{}
	for i := range 10 {
		keys = append(keys, intake.Key{Client: "desk-a", ID: "k" + strconv.Itoa(i)})
		final[keys[i]] = intake.Settlement{Final: true}
	}
	clock := now
	s := &slowSettler{fakeSettler: fakeSettler{answers: final}, clock: &clock, took: time.Minute}
	q := &recordingSender{}
	c := settlequeue.Consumer{Settler: s, Queue: q, Now: func() time.Time { return clock }}
	n, err := c.Sweep(ctx, partialOverdue{keys: keys}, now, grace, 10)
	settled := int(settlequeue.SweepBudget / time.Minute)
	if err != nil || n != len(keys) || len(s.keys()) != settled {
		t.Fatalf("Sweep = %d, %v, settling %v; want %d keys settled in its budget", n, err, s.keys(), settled)
	}
	var want []sent
	for _, k := range keys[settled:] {
		want = append(want, sent{string(settlequeue.Message(k)), 0})
	}
	if got := q.messages(); !slices.Equal(got, want) {
		t.Errorf("sent %+v, want %+v: a message due now for each key left", got, want)
	}
}
