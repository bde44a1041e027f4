package intake_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
)

// scriptedGateway is a Gateway that records every placement, with the
// clock's time, and answers each call with the next of its answers (then
// nil: accepted). During, if set, runs inside each call, outside the lock,
// with the call's number from 1: it may block, or panic as a killed
// isolate does. It counts how many calls overlap.
type scriptedGateway struct {
	clock  *fakeClock
	during func(n int)

	mu        sync.Mutex
	answers   []error
	calls     []intake.Placement
	at        []time.Time
	inCall    int
	maxInCall int
}

func (g *scriptedGateway) Place(_ context.Context, p intake.Placement) error {
	g.mu.Lock()
	g.calls = append(g.calls, p)
	g.at = append(g.at, g.clock.Now())
	n := len(g.calls)
	g.inCall++
	g.maxInCall = max(g.maxInCall, g.inCall)
	during := g.during
	g.mu.Unlock()
	if during != nil {
		during(n)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inCall--
	if len(g.answers) == 0 {
		return nil
	}
	err := g.answers[0]
	g.answers = g.answers[1:]
	return err
}

// answer appends answers to the script.
func (g *scriptedGateway) answer(answers ...error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.answers = append(g.answers, answers...)
}

func (g *scriptedGateway) placements() []intake.Placement {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]intake.Placement(nil), g.calls...)
}

func (g *scriptedGateway) callTimes() []time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]time.Time(nil), g.at...)
}

func (g *scriptedGateway) overlapped() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.maxInCall
}

// holdCall makes call n of g wait until release is closed; entered is
// closed once it started.
func holdCall(g *scriptedGateway, n int) (entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	g.during = func(call int) {
		if call == n {
			close(entered)
			<-release
		}
	}
	return entered, release
}

// unresolvedCall is one OnUnresolved call.
type unresolvedCall struct {
	key      intake.Key
	p        intake.Placement
	attempts int
}

// settleEnv is one store under the settler, on a fake clock, with a
// scripted gateway. Each Service it makes is another instance: it shares
// the store and nothing else.
type settleEnv struct {
	clock *fakeClock
	store intake.Store
	g     *scriptedGateway
	opts  intake.Options
	// due lists the keys the store says are due for the settler now.
	due func(t *testing.T) []intake.Key

	mu         sync.Mutex
	unresolved []unresolvedCall
}

// service is a new instance over the store.
func (e *settleEnv) service() *intake.Service { return intake.New(e.store, e.opts) }

func (e *settleEnv) onUnresolved(_ context.Context, key intake.Key, p intake.Placement, attempts int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.unresolved = append(e.unresolved, unresolvedCall{key, p, attempts})
}

func (e *settleEnv) unresolvedCalls() []unresolvedCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]unresolvedCall(nil), e.unresolved...)
}

// settleStores are the stores the settler runs over, each as the Worker
// builds it for its mode, with the overdue keys it lists.
var settleStores = []struct {
	name string
	new  func(clock *fakeClock) (intake.Store, func(t *testing.T) []intake.Key)
}{
	{"kv", func(clock *fakeClock) (intake.Store, func(t *testing.T) []intake.Key) {
		mem := kv.NewMemoryNamespace()
		mem.Now = clock.Now
		store := kv.NewStore(mem, clock.Now)
		store.ReleaseClaims = true
		due := func(t *testing.T) []intake.Key {
			t.Helper()
			keys, err := store.Overdue(context.Background(), clock.Now().Add(time.Millisecond), 100)
			if err != nil {
				t.Fatalf("Overdue: %v", err)
			}
			return keys
		}
		return store, due
	}},
	{"ledger", func(clock *fakeClock) (intake.Store, func(t *testing.T) []intake.Key) {
		mem := ledger.NewMemoryStore()
		mem.Now = clock.Now
		due := func(t *testing.T) []intake.Key {
			keys := mem.DueKeys(100)
			mem.AlarmDone(intake.FirstSettleDelay)
			return keys
		}
		return mem, due
	}},
}

// forEachStore runs test over each settle store, with opts (zero TTLs take
// config's defaults).
func forEachStore(t *testing.T, opts intake.Options, test func(t *testing.T, e *settleEnv)) {
	for _, st := range settleStores {
		t.Run(st.name, func(t *testing.T) {
			clock := &fakeClock{now: acceptedAt}
			store, due := st.new(clock)
			e := &settleEnv{clock: clock, store: store, g: &scriptedGateway{clock: clock}, due: due}
			o := opts
			if o.ResultTTL == 0 {
				o.ResultTTL = config.DefaultResultTTL
			}
			if o.PendingTTL == 0 {
				o.PendingTTL = config.DefaultPendingTTL
			}
			o.Gateway, o.Now, o.OnUnresolved = e.g, clock.Now, e.onUnresolved
			e.opts = o
			test(t, e)
		})
	}
}

// deskKey is a client's key, so that placements name their client.
var deskKey = intake.Key{Client: "desk-a", ID: "k"}

// leaveUnknown submits validBody under deskKey on a new instance with
// the gateway's answer lost, and returns the Unsettled.
func leaveUnknown(t *testing.T, e *settleEnv) *intake.Unsettled {
	t.Helper()
	e.g.answer(errLost)
	_, err := e.service().Submit(context.Background(), deskKey, []byte(validBody), "")
	var u *intake.Unsettled
	if !errors.As(err, &u) {
		t.Fatalf("Submit = %v, want an *Unsettled", err)
	}
	return u
}

// parsedValid is validBody's order.
func parsedValid(t *testing.T) order.Order {
	t.Helper()
	o, err := order.Parse([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// wantSamePlacement fails unless every call carried the first call's
// placement.
func wantSamePlacement(t *testing.T, calls []intake.Placement) {
	t.Helper()
	for _, c := range calls {
		if c.OrderID != calls[0].OrderID || c.Client != calls[0].Client || c.Order != calls[0].Order || !c.AcceptedAt.Equal(calls[0].AcceptedAt) {
			t.Fatalf("gateway calls %+v, want the same placement every time", calls)
		}
	}
}

// TestSettleStoresTheReceiptAsAClientsRetryWould: after an unknown
// outcome and no client, the settler calls again with the same placement
// and stores the receipt a client's retry would have: replayed byte for
// byte by a later Submit and by Lookup.
func TestSettleStoresTheReceiptAsAClientsRetryWould(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		u := leaveUnknown(t, e)
		if got, want := u.NextAttempt, acceptedAt.Add(intake.FirstSettleDelay); !got.Equal(want) || u.Attempts != 1 {
			t.Errorf("Unsettled = attempts %d next %v, want 1 and %v", u.Attempts, got, want)
		}
		e.clock.Advance(intake.FirstSettleDelay)
		st, err := e.service().Settle(ctx, deskKey)
		if err != nil || !st.Final || st.Unresolved {
			t.Fatalf("Settle = %+v, %v; want Final", st, err)
		}
		calls := e.g.placements()
		if len(calls) != 2 || calls[0].Client != deskKey.Client || calls[0].OrderID != u.OrderID {
			t.Fatalf("gateway calls %+v, want two for %s of %s", calls, u.OrderID, deskKey.Client)
		}
		wantSamePlacement(t, calls)
		want := order.Receipt{OrderID: u.OrderID, Status: order.StatusAccepted, Order: parsedValid(t), AcceptedAt: acceptedAt}.JSON()

		later := e.service()
		out, err := later.Submit(ctx, deskKey, []byte(validBody), "")
		if err != nil || !out.Replayed || string(out.Receipt) != string(want) || out.OrderID != u.OrderID {
			t.Errorf("Submit after the settle = %s replayed %v, %v; want the replay of %s", out.Receipt, out.Replayed, err, want)
		}
		looked, err := e.service().Lookup(ctx, deskKey)
		if err != nil || string(looked.Receipt) != string(want) {
			t.Errorf("Lookup after the settle = %s, %v; want %s", looked.Receipt, err, want)
		}
		rec, err := e.store.Lookup(ctx, deskKey)
		if err != nil || rec.State != intake.Stored || rec.Rejected || rec.Fingerprint != fingerprint(t, validBody) {
			t.Errorf("stored record = %+v, %v; want a receipt with the order's fingerprint", rec, err)
		}
		if n := len(e.g.placements()); n != 2 {
			t.Errorf("gateway calls = %d after the replays, want 2", n)
		}
		if keys := e.due(t); len(keys) != 0 {
			t.Errorf("keys due after the settle: %v, want none", keys)
		}
	})
}

// TestSettleBackoff checks the settler's delays: doubling from a second,
// capped at five minutes.
func TestSettleBackoff(t *testing.T) {
	tests := []struct {
		attempts int
		want     time.Duration
	}{
		{1, time.Second},
		{2, 2 * time.Second},
		{3, 4 * time.Second},
		{4, 8 * time.Second},
		{5, 16 * time.Second},
		{6, 32 * time.Second},
		{7, 64 * time.Second},
		{8, 128 * time.Second},
		{9, 256 * time.Second},
		{10, 300 * time.Second},
		{11, 300 * time.Second},
		{1 << 20, 300 * time.Second},
	}
	for _, tc := range tests {
		if got := intake.SettleBackoff(tc.attempts); got != tc.want {
			t.Errorf("SettleBackoff(%d) = %v, want %v", tc.attempts, got, tc.want)
		}
	}
	if intake.MaxSettleDelay != 5*time.Minute || intake.FirstSettleDelay != time.Second {
		t.Errorf("FirstSettleDelay, MaxSettleDelay = %v, %v; want 1s, 5m", intake.FirstSettleDelay, intake.MaxSettleDelay)
	}
}

// TestSettleCallsAreSpacedByTheBackoff drives the settler at each time it
// asks for while the gateway keeps failing: its calls come 1, 2, 4 … s
// apart, a lookup tells the attempts and the next one, and the order id
// never changes.
func TestSettleCallsAreSpacedByTheBackoff(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		const settles = 10
		u := leaveUnknown(t, e)
		for range settles {
			e.g.answer(errLost)
		}
		next := u.NextAttempt
		settler := e.service()
		for i := 1; i <= settles; i++ {
			e.clock.Advance(next.Sub(e.clock.Now()))
			st, err := settler.Settle(ctx, deskKey)
			if err != nil || st.Final {
				t.Fatalf("Settle %d = %+v, %v; want not final", i, st, err)
			}
			attempts := i + 1
			if want := e.clock.Now().Add(intake.SettleBackoff(attempts)); st.Attempts != attempts || !st.NextAttempt.Equal(want) {
				t.Fatalf("Settle %d = attempts %d next %v, want %d and %v", i, st.Attempts, st.NextAttempt, attempts, want)
			}
			_, err = e.service().Lookup(ctx, deskKey)
			var looked *intake.Unsettled
			if !errors.As(err, &looked) || looked.Attempts != attempts || !looked.NextAttempt.Equal(st.NextAttempt) || looked.OrderID != u.OrderID {
				t.Fatalf("Lookup after settle %d = %v, want Unsettled with %d attempts, next at %v", i, err, attempts, st.NextAttempt)
			}
			next = st.NextAttempt
		}
		at := e.g.callTimes()
		for i := 1; i < len(at); i++ {
			if got, want := at[i].Sub(at[i-1]), intake.SettleBackoff(i); got != want {
				t.Errorf("call %d came %v after call %d, want %v", i+1, got, i, want)
			}
		}
		wantSamePlacement(t, e.g.placements())
	})
}

// TestSettleStoresARejectionAndNeverSendsAgain: a rejection on the
// settler's call is the key's outcome: replayed to the client, and the
// gateway is never called for the key again.
func TestSettleStoresARejectionAndNeverSendsAgain(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		u := leaveUnknown(t, e)
		e.g.answer(&intake.Rejection{Reason: "symbol halted"})
		e.clock.Advance(intake.FirstSettleDelay)
		if st, err := e.service().Settle(ctx, deskKey); err != nil || !st.Final {
			t.Fatalf("Settle = %+v, %v; want Final", st, err)
		}
		want := intake.Rejection{Reason: "symbol halted", OrderID: u.OrderID, Replayed: true, AcceptedAt: acceptedAt}
		for name, ask := range map[string]func() error{
			"Submit": func() error { _, err := e.service().Submit(ctx, deskKey, []byte(validBody), ""); return err },
			"Lookup": func() error { _, err := e.service().Lookup(ctx, deskKey); return err },
		} {
			var got *intake.Rejection
			if err := ask(); !errors.As(err, &got) || withoutExpiry(*got) != want {
				t.Errorf("%s after the settler's rejection = %v, want %+v", name, err, want)
			}
		}
		if st, err := e.service().Settle(ctx, deskKey); err != nil || !st.Final {
			t.Errorf("a second Settle = %+v, %v; want Final", st, err)
		}
		if n := len(e.g.placements()); n != 2 {
			t.Errorf("gateway calls = %d, want 2: the rejection is never re-sent", n)
		}
	})
}

// TestSettleLeavesKeysWithNothingUnknownAlone: a key with nothing stored,
// or with its outcome stored, needs no settling: Settle calls no gateway
// and writes nothing.
func TestSettleLeavesKeysWithNothingUnknownAlone(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		t.Run("absent", func(t *testing.T) {
			st, err := e.service().Settle(ctx, intake.Key{Client: "desk-a", ID: "never"})
			if err != nil || !st.Final || st.Attempts != 0 {
				t.Fatalf("Settle = %+v, %v; want Final", st, err)
			}
			if rec, err := e.store.Lookup(ctx, intake.Key{Client: "desk-a", ID: "never"}); err != nil || rec.State != intake.Absent {
				t.Errorf("after Settle the key is %v (%v), want Absent", rec.State, err)
			}
			if n := len(e.g.placements()); n != 0 {
				t.Errorf("gateway calls = %d, want 0", n)
			}
		})
		t.Run("stored", func(t *testing.T) {
			first, err := e.service().Submit(ctx, deskKey, []byte(validBody), "")
			if err != nil {
				t.Fatal(err)
			}
			st, err := e.service().Settle(ctx, deskKey)
			if err != nil || !st.Final {
				t.Fatalf("Settle = %+v, %v; want Final", st, err)
			}
			if n := len(e.g.placements()); n != 1 {
				t.Errorf("gateway calls = %d, want only the order's own", n)
			}
			if out, err := e.service().Lookup(ctx, deskKey); err != nil || string(out.Receipt) != string(first.Receipt) {
				t.Errorf("Lookup = %s, %v; want the receipt %s", out.Receipt, err, first.Receipt)
			}
		})
	})
}

// TestSettleWaitsForAClientHoldingTheKey: a key a client's retry holds on
// another instance is not settled: Settle calls no gateway and says when
// to come back: when the claim's lease ends, not a whole lease from now.
func TestSettleWaitsForAClientHoldingTheKey(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		leaveUnknown(t, e)
		entered, release := holdCall(e.g, 2)
		retried := make(chan error, 1)
		go func() {
			_, err := e.service().Submit(ctx, deskKey, []byte(validBody), "")
			retried <- err
		}()
		<-entered
		leaseEnd := e.clock.Now().Add(config.DefaultPendingTTL) // the retry claimed the key at this time
		e.clock.Advance(intake.FirstSettleDelay)
		st, err := e.service().Settle(ctx, deskKey)
		calls := len(e.g.placements())
		close(release)
		if err := <-retried; err != nil {
			t.Errorf("the client's retry = %v, want its receipt", err)
		}
		if err != nil || st.Final || !st.NextAttempt.Equal(leaseEnd) {
			t.Errorf("Settle while a client holds the key = %+v, %v; want not final, next at the lease's end %v",
				st, err, leaseEnd)
		}
		if calls != 2 {
			t.Errorf("gateway calls during the client's = %d, want 2", calls)
		}
		if st, err := e.service().Settle(ctx, deskKey); err != nil || !st.Final || len(e.g.placements()) != 2 {
			t.Errorf("Settle once the client stored the receipt = %+v, %v, %d gateway calls; want Final and 2", st, err, len(e.g.placements()))
		}
	})
}

// checkGiveUp, over a Store whose reads lag, makes the settler's last
// call, whose answer the test has set to be lost: the key is Unresolved
// but not reported, and due for the give-up's check once reads have
// caught up. It moves the clock there, has that check's call lost too,
// and reports whether it did; over other Stores it does nothing.
func checkGiveUp(t *testing.T, e *settleEnv) bool {
	t.Helper()
	lag := e.store.Lifecycle().ReadsLag
	if lag == 0 {
		return false
	}
	st, err := e.service().Settle(context.Background(), deskKey)
	if err != nil || st.Final || !st.Unresolved || st.Result != intake.SettleUnknown || st.NextAttempt.Before(e.clock.Now().Add(lag)) {
		t.Fatalf("the last call, lost = %+v, %v; want Unresolved, not final, due for its check once reads have caught up (%v)", st, err, lag)
	}
	if calls := e.unresolvedCalls(); len(calls) != 0 {
		t.Fatalf("OnUnresolved calls %+v before the give-up's check, want none", calls)
	}
	e.clock.Advance(st.NextAttempt.Sub(e.clock.Now()))
	e.g.answer(errLost)
	return true
}

// TestSettleGivesUpAfterSettleMaxAge: once the order is SettleMaxAge old
// the settler calls the gateway one last time, and if that answer is
// unknown too the key is unresolved: reported once, shown by a lookup,
// kept for another ResultTTL, never due again; a client's retry still
// calls the gateway with the key's order id and can settle it.
func TestSettleGivesUpAfterSettleMaxAge(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	forEachStore(t, intake.Options{SettleMaxAge: maxAge}, func(t *testing.T, e *settleEnv) {
		u := leaveUnknown(t, e)
		e.clock.Advance(maxAge)
		e.g.answer(errLost)
		attempts := 2
		if checked := checkGiveUp(t, e); checked {
			attempts++
		}
		for i := range 2 {
			st, err := e.service().Settle(ctx, deskKey)
			if err != nil || !st.Final || !st.Unresolved || st.Attempts != attempts {
				t.Fatalf("Settle %d after SettleMaxAge = %+v, %v; want Final, Unresolved, %d attempts", i+1, st, err, attempts)
			}
		}
		if n := len(e.g.placements()); n != attempts {
			t.Errorf("gateway calls = %d, want %d: the last calls, then none once unresolved", n, attempts)
		}
		calls := e.unresolvedCalls()
		if len(calls) != 1 {
			t.Fatalf("OnUnresolved calls %+v, want 1", calls)
		}
		if c := calls[0]; c.key != deskKey || c.p.OrderID != u.OrderID || c.p.Client != deskKey.Client || c.p.Order != parsedValid(t) ||
			!c.p.AcceptedAt.Equal(acceptedAt) || c.attempts != attempts {
			t.Errorf("OnUnresolved(%v, %+v, %d), want %v, order %s accepted at %v, %d attempts", c.key, c.p, c.attempts, deskKey, u.OrderID, acceptedAt, attempts)
		}
		if keys := e.due(t); len(keys) != 0 {
			t.Errorf("keys due after giving up: %v, want none", keys)
		}

		// Kept for another ResultTTL, and shown as unresolved meanwhile.
		e.clock.Advance(config.DefaultResultTTL - time.Minute)
		_, err := e.service().Lookup(ctx, deskKey)
		var looked *intake.Unsettled
		if !errors.As(err, &looked) || !errors.Is(err, intake.ErrUnresolved) || !errors.Is(err, intake.ErrOutcomeUnknown) ||
			!looked.Unresolved() || looked.OrderID != u.OrderID || !looked.NextAttempt.IsZero() {
			t.Fatalf("Lookup of the unresolved key = %v (%+v), want an unresolved Unsettled for %s with no next attempt", err, looked, u.OrderID)
		}

		out, err := e.service().Submit(ctx, deskKey, []byte(validBody), "")
		if err != nil || out.OrderID != u.OrderID {
			t.Fatalf("a client's retry of the unresolved key = %s, %v; want the receipt of %s", out.OrderID, err, u.OrderID)
		}
		wantSamePlacement(t, e.g.placements())
		if looked, err := e.service().Lookup(ctx, deskKey); err != nil || looked.OrderID != u.OrderID {
			t.Errorf("Lookup after the client settled it = %s, %v; want the receipt of %s", looked.OrderID, err, u.OrderID)
		}
		if n := len(e.unresolvedCalls()); n != 1 {
			t.Errorf("OnUnresolved calls = %d, want 1", n)
		}
	})
}

// TestAnAcceptedOrderIsNeverReportedUnresolved: past SettleMaxAge the
// settler's last call finds the order the OMS has, and stores its receipt
// instead of giving up: a read that missed the stored receipt (a stale KV
// read) costs a gateway call, never a false alert.
func TestAnAcceptedOrderIsNeverReportedUnresolved(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	forEachStore(t, intake.Options{SettleMaxAge: maxAge}, func(t *testing.T, e *settleEnv) {
		u := leaveUnknown(t, e)
		e.clock.Advance(maxAge)
		st, err := e.service().Settle(ctx, deskKey)
		if err != nil || !st.Final || st.Unresolved {
			t.Fatalf("Settle after SettleMaxAge of an order the OMS accepts = %+v, %v; want Final, not unresolved", st, err)
		}
		if calls := e.unresolvedCalls(); len(calls) != 0 {
			t.Errorf("OnUnresolved calls %+v, want none", calls)
		}
		if out, err := e.service().Lookup(ctx, deskKey); err != nil || out.OrderID != u.OrderID {
			t.Errorf("Lookup = %s, %v; want the receipt of %s", out.OrderID, err, u.OrderID)
		}
	})
}

// TestSettleNeverCallsTheGatewayBesideAClientInOneInstance: within one
// Service the settler and a client's retry never call the gateway for one
// key at once, whichever came first.
func TestSettleNeverCallsTheGatewayBesideAClientInOneInstance(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		t.Run("settle while a client's retry is at the gateway", func(t *testing.T) {
			k := intake.Key{Client: "desk-a", ID: "client-first"}
			svc := e.service()
			e.g.answer(errLost)
			if _, err := svc.Submit(ctx, k, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
				t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
			}
			calls := len(e.g.placements())
			entered, release := holdCall(e.g, calls+1)
			defer func() { e.g.during = nil }()
			retried := make(chan error, 1)
			go func() {
				_, err := svc.Submit(ctx, k, []byte(validBody), "")
				retried <- err
			}()
			<-entered
			st, err := svc.Settle(ctx, k)
			during := len(e.g.placements())
			close(release)
			if err := <-retried; err != nil {
				t.Errorf("the retry = %v, want its receipt", err)
			}
			if err != nil || st.Final || st.NextAttempt.IsZero() {
				t.Errorf("Settle beside the retry = %+v, %v; want not final, with a next attempt", st, err)
			}
			if during != calls+1 {
				t.Errorf("gateway calls while the retry was at the gateway = %d, want %d", during, calls+1)
			}
		})
		t.Run("a client's retry while the settler is at the gateway", func(t *testing.T) {
			k := intake.Key{Client: "desk-a", ID: "settler-first"}
			svc := e.service()
			e.g.answer(errLost)
			if _, err := svc.Submit(ctx, k, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
				t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
			}
			calls := len(e.g.placements())
			entered, release := holdCall(e.g, calls+1)
			defer func() { e.g.during = nil }()
			e.clock.Advance(intake.FirstSettleDelay)
			type settled struct {
				st  intake.Settlement
				err error
			}
			done := make(chan settled, 1)
			go func() {
				st, err := svc.Settle(ctx, k)
				done <- settled{st, err}
			}()
			<-entered
			_, retryErr := svc.Submit(ctx, k, []byte(validBody), "")
			during := len(e.g.placements())
			close(release)
			if s := <-done; s.err != nil || !s.st.Final {
				t.Errorf("Settle = %+v, %v; want Final", s.st, s.err)
			}
			if !errors.Is(retryErr, intake.ErrInProgress) {
				t.Errorf("the retry beside the settler = %v, want ErrInProgress", retryErr)
			}
			if during != calls+1 {
				t.Errorf("gateway calls while the settler was at the gateway = %d, want %d", during, calls+1)
			}
			if out, err := svc.Submit(ctx, k, []byte(validBody), ""); err != nil || !out.Replayed {
				t.Errorf("the retry after the settle = %+v, %v; want the replay", out, err)
			}
		})
		if n := e.g.overlapped(); n != 1 {
			t.Errorf("at most %d gateway calls overlapped, want 1", n)
		}
	})
}

// TestSettlerKilledAtTheGatewayKeepsTheOrderID: a settler whose isolate
// dies during its gateway call (after its claim, before any release)
// leaves the key's order id stored, so a retry after its lease calls the
// gateway with the same order id, never a second.
func TestSettlerKilledAtTheGatewayKeepsTheOrderID(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		u := leaveUnknown(t, e)
		e.g.during = func(n int) {
			if n == 2 {
				panic(isolateKilled{})
			}
		}
		e.clock.Advance(intake.FirstSettleDelay)
		if !dies(func() { e.service().Settle(ctx, deskKey) }) {
			t.Fatal("Settle returned; want its isolate killed at the gateway")
		}
		e.g.during = nil
		e.clock.Advance(config.DefaultPendingTTL + time.Second) // the settler's lease
		rec, err := e.store.Lookup(ctx, deskKey)
		if err != nil || rec.OrderID != u.OrderID {
			t.Errorf("after the settler's lease the key is %v with order %q (%v), want order %s kept", rec.State, rec.OrderID, err, u.OrderID)
		}
		out, err := e.service().Submit(ctx, deskKey, []byte(validBody), "")
		if err != nil {
			t.Fatalf("the client's retry = %v, want the receipt", err)
		}
		ids := make([]string, 0, 3)
		for _, p := range e.g.placements() {
			ids = append(ids, p.OrderID)
		}
		if id := wantOneOrderID(t, ids, 3); out.OrderID != id {
			t.Fatalf("receipt names %s, want the key's order id %s", out.OrderID, id)
		}
	})
}

// TestKVSettlerWhoseClaimWriteFailsReopensTheKey: in KV mode, when the
// settler's claim write fails, the key is written back open with its
// order id, as a client's takeover does, and never left without it.
func TestKVSettlerWhoseClaimWriteFailsReopensTheKey(t *testing.T) {
	ctx := context.Background()
	g := &gatewayDouble{answers: []error{errLost}}
	h := newHarness(t, intake.Options{Gateway: g})
	if _, err := h.submit("k", validBody); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
	}
	id := g.placements()[0].OrderID
	h.now = acceptedAt.Add(intake.FirstSettleDelay) // the key is due
	// The settler's claim write; its write back goes through.
	h.faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "pending:", Nth: 1})
	if _, err := h.svc.Settle(ctx, key("k")); !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("Settle with its claim write failing = %v, want ErrStorageUnavailable", err)
	}
	h.faulty.Set()
	rec, err := h.store.Lookup(ctx, key("k"))
	if err != nil || rec.State != intake.Open || rec.OrderID != id || !rec.HasOrder {
		t.Fatalf("after the failed settle the key is %v with order %q, has order %v (%v); want Open with %s and its order",
			rec.State, rec.OrderID, rec.HasOrder, err, id)
	}
}

// commitFailing is a Store whose first Commit fails before it is made.
type commitFailing struct {
	intake.Store
	failed bool
}

func (s *commitFailing) Commit(ctx context.Context, key intake.Key, c intake.Claim, r intake.Result) error {
	if !s.failed {
		s.failed = true
		return errors.New("commit refused")
	}
	return s.Store.Commit(ctx, key, c, r)
}

// TestSettlerStoresAnAnswerThatWasNotStored: the OMS accepted the order,
// the client has its receipt, but the commit after the response failed.
// The order is live at the OMS, so the key is left open as after an
// unknown outcome: due for the settler, and Schedule told, which calls
// again with the same order id and stores the receipt the client got.
func TestSettlerStoresAnAnswerThatWasNotStored(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		e.store = &commitFailing{Store: e.store}
		var scheduled []time.Time
		e.opts.Schedule = func(_ context.Context, key intake.Key, at time.Time) error {
			if key != deskKey {
				t.Errorf("Schedule(%v), want %v", key, deskKey)
			}
			scheduled = append(scheduled, at)
			return nil
		}
		first, err := e.service().Submit(ctx, deskKey, []byte(validBody), "")
		if err != nil {
			t.Fatalf("Submit with the receipt's write failing = %v, want the receipt: the commit follows the response", err)
		}
		if want := e.clock.Now().Add(intake.FirstSettleDelay); len(scheduled) != 1 || !scheduled[0].Equal(want) {
			t.Fatalf("Schedule told %v, want once, for %v", scheduled, want)
		}
		e.clock.Advance(intake.FirstSettleDelay)
		if due := e.due(t); len(due) != 1 || due[0] != deskKey {
			t.Fatalf("due after the backoff: %v, want %v", due, deskKey)
		}
		if st, err := e.service().Settle(ctx, deskKey); err != nil || !st.Final {
			t.Fatalf("Settle = %+v, %v; want Final", st, err)
		}
		calls := e.g.placements()
		wantSamePlacement(t, calls)
		if len(calls) != 2 {
			t.Fatalf("gateway calls = %d, want 2: the client's and the settler's", len(calls))
		}
		out, err := e.service().Lookup(ctx, deskKey)
		if err != nil || !bytes.Equal(out.Receipt, first.Receipt) {
			t.Fatalf("Lookup = %s, %v; want the receipt the client got, %s", out.Receipt, err, first.Receipt)
		}
	})
}

// TestASettlerWhoseAnswerWasNotStoredSaysWhenTheKeyIsDue: the OMS
// answered the settler, and the receipt's write failed. The key is open
// again, due after the backoff, and Settle says when beside its error,
// so that the queue's consumer sends the next message: the message it
// fails is retried within seconds, finds the key not due yet, and would
// end the chain (found by a review). The error is storage's alone, never
// an unknown outcome.
func TestASettlerWhoseAnswerWasNotStoredSaysWhenTheKeyIsDue(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		leaveUnknown(t, e)
		e.clock.Advance(intake.FirstSettleDelay)
		e.store = &commitFailing{Store: e.store}
		st, err := e.service().Settle(ctx, deskKey)
		var open *intake.Unsettled
		if !errors.Is(err, intake.ErrStorageUnavailable) || errors.As(err, &open) {
			t.Fatalf("Settle whose commit failed = %v, want storage unavailable alone", err)
		}
		if st.Final || !st.NextAttempt.After(e.clock.Now()) || st.Attempts != 2 {
			t.Fatalf("Settle whose commit failed = %+v; want not final, 2 attempts, and when the key is due next", st)
		}
		e.clock.Advance(st.NextAttempt.Sub(e.clock.Now()) - intake.DueSlack - time.Millisecond)
		if early, err := e.service().Settle(ctx, deskKey); err != nil || !early.Final || early.Result != intake.SettleIdle {
			t.Fatalf("Settle before NextAttempt = %+v, %v; want the key not due yet", early, err)
		}
		e.clock.Advance(st.NextAttempt.Sub(e.clock.Now()))
		if st, err := e.service().Settle(ctx, deskKey); err != nil || st.Result != intake.SettleAccepted {
			t.Errorf("Settle at NextAttempt = %+v, %v; want the receipt stored", st, err)
		}
	})
}

// TestAGiveUpBesideAStoredReceiptIsNoAlert: over KV another isolate may
// call the gateway for the key at the same time as the settler's last
// call, and store the receipt; the settler's own call failing then leaves
// the key's receipt winning every read, and no unresolved alert is raised.
func TestAGiveUpBesideAStoredReceiptIsNoAlert(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	forEachStore(t, intake.Options{SettleMaxAge: maxAge}, func(t *testing.T, e *settleEnv) {
		s, ok := e.store.(*kv.Store)
		if !ok {
			t.Skip("only KV lets two isolates call the gateway for one key at once")
		}
		u := leaveUnknown(t, e)
		e.clock.Advance(maxAge)
		e.g.answer(errLost)
		e.g.during = func(int) {
			// Another isolate's call, meanwhile, stored the receipt.
			s.Commit(ctx, deskKey, intake.Claim{}, intake.Result{Body: []byte(`{"orderId":"` + u.OrderID + `","status":"accepted"}`), TTL: time.Hour})
		}
		defer func() { e.g.during = nil }()
		if _, err := e.service().Settle(ctx, deskKey); err != nil {
			t.Fatalf("Settle = %v", err)
		}
		if calls := e.unresolvedCalls(); len(calls) != 0 {
			t.Errorf("OnUnresolved calls %+v, want none: the receipt is stored", calls)
		}
	})
}

// TestSettleSaysWhatItDid: each Settle says what it did with its key,
// and, once it took the key, when the key's order was accepted, so that
// the time a key took to settle can be told.
func TestSettleSaysWhatItDid(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	forEachStore(t, intake.Options{SettleMaxAge: maxAge}, func(t *testing.T, e *settleEnv) {
		want := func(what string, st intake.Settlement, err error, result intake.SettleResult, accepted time.Time) {
			t.Helper()
			if err != nil || st.Result != result || !st.AcceptedAt.Equal(accepted) {
				t.Errorf("%s: Settle = %+v, %v; want result %d, accepted at %v", what, st, err, result, accepted)
			}
		}
		st, err := e.service().Settle(ctx, intake.Key{Client: "desk-a", ID: "never"})
		want("a key with nothing stored", st, err, intake.SettleIdle, time.Time{})

		leaveUnknown(t, e)
		e.clock.Advance(intake.FirstSettleDelay)
		e.g.answer(errLost)
		st, err = e.service().Settle(ctx, deskKey)
		want("an answer lost again", st, err, intake.SettleUnknown, acceptedAt)

		e.clock.Advance(maxAge)
		e.g.answer(errLost)
		checkGiveUp(t, e)
		st, err = e.service().Settle(ctx, deskKey)
		want("the last call's answer lost", st, err, intake.SettleGaveUp, acceptedAt)
		st, err = e.service().Settle(ctx, deskKey)
		want("an unresolved key", st, err, intake.SettleIdle, time.Time{})

		rejected := intake.Key{Client: "desk-a", ID: "rejected"}
		e.g.answer(errLost)
		if _, err := e.service().Submit(ctx, rejected, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
			t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
		}
		rejectedAt := e.clock.Now()
		e.clock.Advance(intake.FirstSettleDelay)
		e.g.answer(&intake.Rejection{Reason: "halted"})
		st, err = e.service().Settle(ctx, rejected)
		want("a rejection", st, err, intake.SettleRejected, rejectedAt)

		accepted := intake.Key{Client: "desk-a", ID: "accepted"}
		e.g.answer(errLost)
		if _, err := e.service().Submit(ctx, accepted, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
			t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
		}
		placedAt := e.clock.Now()
		e.clock.Advance(intake.FirstSettleDelay)
		entered, release := holdCall(e.g, len(e.g.placements())+1)
		done := make(chan intake.Settlement, 1)
		go func() {
			st, _ := e.service().Settle(ctx, accepted)
			done <- st
		}()
		<-entered
		st, err = e.service().Settle(ctx, accepted)
		want("a key another settler holds", st, err, intake.SettleBusy, time.Time{})
		close(release)
		st = <-done
		e.g.during = nil
		want("an acceptance", st, nil, intake.SettleAccepted, placedAt)
		st, err = e.service().Settle(ctx, accepted)
		want("a key whose outcome is stored", st, err, intake.SettleIdle, time.Time{})
	})
}

// TestObserveSettleSeesEveryAttempt: ObserveSettle is called as each
// Settle starts (and never for a client's Submit); the store is called
// under the context it returns, and its function gets what Settle
// returned, a storage failure included.
func TestObserveSettleSeesEveryAttempt(t *testing.T) {
	ctx := context.Background()
	type observed struct {
		key intake.Key
		st  intake.Settlement
		err error
	}
	type mark struct{}
	forEachStore(t, intake.Options{}, func(t *testing.T, e *settleEnv) {
		var seen []observed
		e.opts.ObserveSettle = func(ctx context.Context, key intake.Key) (context.Context, func(intake.Settlement, error)) {
			return context.WithValue(ctx, mark{}, key), func(st intake.Settlement, err error) { seen = append(seen, observed{key, st, err}) }
		}
		leaveUnknown(t, e)
		if len(seen) != 0 {
			t.Fatalf("ObserveSettle saw %d attempts after a client's Submit, want none", len(seen))
		}
		var marked []any
		e.store = &contextRecorder{Store: e.store, marks: &marked, key: mark{}}
		e.clock.Advance(intake.FirstSettleDelay)
		st, err := e.service().Settle(ctx, deskKey)
		if len(seen) != 1 || seen[0].key != deskKey || seen[0].err != err || seen[0].st.Result != st.Result || st.Result != intake.SettleAccepted {
			t.Fatalf("ObserveSettle saw %+v, want the one Settle of %v, which returned %+v, %v", seen, deskKey, st, err)
		}
		if len(marked) == 0 {
			t.Fatal("the store saw no call")
		}
		for _, m := range marked {
			if m != deskKey {
				t.Errorf("a store call's context holds %v, want ObserveSettle's, naming %v", m, deskKey)
			}
		}
		e.store = &failingStore{Store: e.store}
		_, err = e.service().Settle(ctx, deskKey)
		if len(seen) != 2 || !errors.Is(seen[1].err, intake.ErrStorageUnavailable) || seen[1].err != err {
			t.Errorf("ObserveSettle saw %+v after a storage failure, want its error %v", seen, err)
		}
	})
}

// contextRecorder records the value under key of each Begin's context.
type contextRecorder struct {
	intake.Store
	marks *[]any
	key   any
}

func (s *contextRecorder) Begin(ctx context.Context, key intake.Key, c intake.Claim) (intake.Record, error) {
	*s.marks = append(*s.marks, ctx.Value(s.key))
	return s.Store.Begin(ctx, key, c)
}

// failingStore fails every Begin.
type failingStore struct{ intake.Store }

func (failingStore) Begin(context.Context, intake.Key, intake.Claim) (intake.Record, error) {
	return intake.Record{}, errors.New("storage down")
}

// laggingNamespace serves reads of the keys in stale as they were when
// frozen, as a KV location whose cache lags behind a write does; every
// other call goes to the namespace beneath.
type laggingNamespace struct {
	kv.Namespace
	mu    sync.Mutex
	stale map[string]*kv.Entry
}

// freeze has reads of keys return what they hold now, until thaw.
func (l *laggingNamespace) freeze(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stale = make(map[string]*kv.Entry)
	for _, k := range keys {
		e, err := l.Namespace.Get(context.Background(), k)
		if err == nil {
			l.stale[k] = &e
		} else {
			l.stale[k] = nil
		}
	}
}

func (l *laggingNamespace) thaw() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stale = nil
}

func (l *laggingNamespace) Get(ctx context.Context, key string) (kv.Entry, error) {
	l.mu.Lock()
	e, frozen := l.stale[key]
	l.mu.Unlock()
	switch {
	case !frozen:
		return l.Namespace.Get(ctx, key)
	case e == nil:
		return kv.Entry{}, kv.ErrNotFound
	}
	return *e, nil
}

// laggingKV is a settleEnv over KV whose reads lag while frozen.
func laggingKV(t *testing.T, opts intake.Options) (*settleEnv, *laggingNamespace) {
	clock := &fakeClock{now: acceptedAt}
	mem := kv.NewMemoryNamespace()
	mem.Now = clock.Now
	ns := &laggingNamespace{Namespace: mem}
	e := &settleEnv{clock: clock, store: kv.NewStore(ns, clock.Now), g: &scriptedGateway{clock: clock}}
	opts.ResultTTL, opts.PendingTTL = config.DefaultResultTTL, config.DefaultPendingTTL
	opts.Gateway, opts.Now, opts.OnUnresolved = e.g, clock.Now, e.onUnresolved
	e.opts = opts
	return e, ns
}

// TestTheSettlerNeverReportsAnOrderStoredMeanwhile: past SettleMaxAge one
// settler stores the receipt, and another, 40 s later, reads KV stale,
// missing it. In the same instance it finds the receipt in memory and
// calls nobody; in another, its last call fails, the key is left for the
// give-up's check, and the check, once reads have caught up, finds the
// receipt: no alert either way, and the receipt is what a retry gets.
func TestTheSettlerNeverReportsAnOrderStoredMeanwhile(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	for _, where := range []string{"in the same instance", "in another instance"} {
		t.Run(where, func(t *testing.T) {
			e, ns := laggingKV(t, intake.Options{SettleMaxAge: maxAge})
			leaveUnknown(t, e)
			e.clock.Advance(maxAge)
			ns.freeze("result:"+deskKey.String(), "pending:"+deskKey.String())
			first := e.service()
			if st, err := first.Settle(ctx, deskKey); err != nil || st.Result != intake.SettleAccepted {
				t.Fatalf("the first settler = %+v, %v; want the receipt stored", st, err)
			}
			calls := len(e.g.placements())
			e.clock.Advance(40 * time.Second)
			second := first
			if where == "in another instance" {
				second = e.service()
			}
			e.g.answer(errLost)
			st, err := second.Settle(ctx, deskKey)
			if err != nil {
				t.Fatalf("the second settler = %v", err)
			}
			if where == "in the same instance" {
				if !st.Final || len(e.g.placements()) != calls {
					t.Errorf("the second settler = %+v after %d gateway calls; want Final, from memory, with no call", st, len(e.g.placements())-calls)
				}
			} else {
				if st.Final || !st.Unresolved {
					t.Fatalf("the second settler, its last call lost = %+v; want the give-up left for its check", st)
				}
				ns.thaw()
				e.clock.Advance(st.NextAttempt.Sub(e.clock.Now()))
				if st, err := e.service().Settle(ctx, deskKey); err != nil || !st.Final || st.Unresolved {
					t.Errorf("the give-up's check = %+v, %v; want Final: the receipt is stored", st, err)
				}
			}
			if calls := e.unresolvedCalls(); len(calls) != 0 {
				t.Errorf("OnUnresolved calls %+v, want none: the receipt is stored", calls)
			}
			ns.thaw()
			out, err := e.service().Submit(ctx, deskKey, []byte(validBody), "")
			if err != nil || !out.Replayed {
				t.Errorf("a retry = %+v, %v; want the stored receipt replayed", out, err)
			}
		})
	}
}

// TestASettleMessageBeforeItsKeyIsDueEnds: a duplicate settle message, or
// one a later attempt has overtaken, comes before the key is due again:
// it ends without a gateway call, so that one chain settles a key.
func TestASettleMessageBeforeItsKeyIsDueEnds(t *testing.T) {
	ctx := context.Background()
	e, _ := laggingKV(t, intake.Options{})
	leaveUnknown(t, e)
	e.clock.Advance(intake.FirstSettleDelay)
	e.g.answer(errLost)
	st, err := e.service().Settle(ctx, deskKey)
	if err != nil || st.Result != intake.SettleUnknown {
		t.Fatalf("the chain's attempt = %+v, %v; want unknown again", st, err)
	}
	calls := len(e.g.placements())
	dup, err := e.service().Settle(ctx, deskKey)
	if err != nil || !dup.Final || dup.Result != intake.SettleIdle || len(e.g.placements()) != calls {
		t.Errorf("a duplicate message before the key is due = %+v, %v, %d more calls; want Final and idle, no call", dup, err, len(e.g.placements())-calls)
	}
	e.clock.Advance(st.NextAttempt.Sub(e.clock.Now()))
	if st, err := e.service().Settle(ctx, deskKey); err != nil || st.Result != intake.SettleAccepted {
		t.Errorf("the chain's next attempt, when due = %+v, %v; want the receipt stored", st, err)
	}
}

// TestAFailedReportLeavesTheKeyDueUntilReported: when the report of a
// give-up fails (the pager is down), the give-up is not stored: the key
// stays due, ReportRetryDelay later the settler calls the gateway once
// more and reports again, and only the report that succeeds stores the
// key unresolved and tells OnUnresolved. The report is owed by the key
// itself, so none is lost; and if the OMS answers meanwhile, none is made.
func TestAFailedReportLeavesTheKeyDueUntilReported(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	errPagerDown := errors.New("pager down")
	for _, answersMeanwhile := range []bool{false, true} {
		name := "reported once the pager takes it"
		if answersMeanwhile {
			name = "the OMS answers before the pager takes it"
		}
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var reports []string // the order id of each report, with its result
			failures := 2
			report := func(_ context.Context, key intake.Key, p intake.Placement, attempts int) error {
				mu.Lock()
				defer mu.Unlock()
				if failures > 0 {
					failures--
					reports = append(reports, p.OrderID+" failed")
					return errPagerDown
				}
				reports = append(reports, p.OrderID+" taken")
				return nil
			}
			forEachStore(t, intake.Options{SettleMaxAge: maxAge, ReportUnresolved: report}, func(t *testing.T, e *settleEnv) {
				mu.Lock()
				reports, failures = nil, 2
				mu.Unlock()
				u := leaveUnknown(t, e)
				e.clock.Advance(maxAge)
				e.g.answer(errLost)
				checkGiveUp(t, e)
				for i := range 2 {
					st, err := e.service().Settle(ctx, deskKey)
					if err != nil || st.Final || st.Result != intake.SettleUnknown || !st.NextAttempt.Equal(e.clock.Now().Add(intake.ReportRetryDelay)) {
						t.Fatalf("report %d failed: Settle = %+v, %v; want not final, due again in %v", i+1, st, err, intake.ReportRetryDelay)
					}
					if calls := e.unresolvedCalls(); len(calls) != 0 {
						t.Fatalf("OnUnresolved calls %+v while the report failed, want none", calls)
					}
					e.clock.Advance(intake.ReportRetryDelay)
					if keys := e.due(t); !slices.Contains(keys, deskKey) {
						t.Fatalf("keys due %v after a failed report, want %v: the key owes its report", keys, deskKey)
					}
					if answersMeanwhile {
						break
					}
					e.g.answer(errLost)
				}
				st, err := e.service().Settle(ctx, deskKey)
				mu.Lock()
				got := append([]string(nil), reports...)
				mu.Unlock()
				if answersMeanwhile {
					if err != nil || !st.Final || st.Unresolved || len(got) != 1 || len(e.unresolvedCalls()) != 0 {
						t.Fatalf("Settle with the OMS answering = %+v, %v, reports %q, OnUnresolved %d; want final and settled, one failed report, no alert",
							st, err, got, len(e.unresolvedCalls()))
					}
					return
				}
				if err != nil || !st.Final || !st.Unresolved || st.Result != intake.SettleGaveUp {
					t.Fatalf("Settle once the pager takes the report = %+v, %v; want the give-up", st, err)
				}
				want := []string{u.OrderID + " failed", u.OrderID + " failed", u.OrderID + " taken"}
				if !slices.Equal(got, want) {
					t.Errorf("reports %q, want %q", got, want)
				}
				if calls := e.unresolvedCalls(); len(calls) != 1 || calls[0].p.OrderID != u.OrderID {
					t.Errorf("OnUnresolved calls %+v, want one for %s, after the report taken", calls, u.OrderID)
				}
				if keys := e.due(t); len(keys) != 0 {
					t.Errorf("keys due after the report was taken: %v, want none", keys)
				}
				if _, err := e.service().Lookup(ctx, deskKey); !errors.Is(err, intake.ErrUnresolved) {
					t.Errorf("Lookup = %v, want the key unresolved", err)
				}
			})
		})
	}
}

// TestARetryFromMemoryKeepsTheGiveUpsCheckDue: over KV, an isolate whose
// settler's last call failed remembers the key awaiting the give-up's
// check; a retry there whose read of KV misses the key (a location's
// cached "not found") claims it from that memory, and must keep the check
// due, not write the key given up on, which no settler would ever check
// or report (invariant: a key that ends unresolved was paged; found by a
// long run, seed 8599829039174172512, KV, at 12,450 histories).
func TestARetryFromMemoryKeepsTheGiveUpsCheckDue(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	clock := &fakeClock{now: acceptedAt}
	g := &scriptedGateway{clock: clock}
	mem := kv.NewMemoryNamespace()
	mem.Now = clock.Now
	cached := &kvtest.Hooked{Namespace: mem}
	store := kv.NewStore(cached, clock.Now)
	var reported []intake.Key
	svc := intake.New(store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
		SettleMaxAge: maxAge, Gateway: g, Now: clock.Now,
		OnUnresolved: func(_ context.Context, key intake.Key, _ intake.Placement, _ int) { reported = append(reported, key) }})

	g.answer(errLost)
	if _, err := svc.Submit(ctx, deskKey, []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
	}
	clock.Advance(maxAge)
	g.answer(errLost)
	if st, err := svc.Settle(ctx, deskKey); err != nil || st.Result != intake.SettleUnknown || !st.Unresolved {
		t.Fatalf("the settler's last call = %+v, %v; want the key awaiting the give-up's check", st, err)
	}
	rec, err := store.Lookup(ctx, deskKey)
	if err != nil || intake.PhaseOf(rec) != intake.PhaseChecking {
		t.Fatalf("after the last call the key is %v, %v; want checking", intake.PhaseOf(rec), err)
	}
	check := rec.NextAttempt

	clock.Advance(time.Second)
	cached.Before = func(op kvtest.Op, key string) error {
		if op == kvtest.OpGet && strings.HasPrefix(key, "pending:") {
			return kv.ErrNotFound // the location's cached "not found"
		}
		return nil
	}
	g.answer(errLost)
	if _, err := svc.Submit(ctx, deskKey, []byte(validBody), ""); err == nil {
		t.Fatal("the retry's call failed, yet Submit succeeded")
	}
	cached.Before = nil
	rec, err = store.Lookup(ctx, deskKey)
	if err != nil || intake.PhaseOf(rec) != intake.PhaseChecking || !rec.NextAttempt.Equal(check) {
		t.Fatalf("after the retry the key is %v due %v, %v; want checking, due for the check at %v", intake.PhaseOf(rec), rec.NextAttempt, err, check)
	}

	clock.Advance(check.Sub(clock.Now()))
	g.answer(errLost)
	if st, err := svc.Settle(ctx, deskKey); err != nil || st.Result != intake.SettleGaveUp {
		t.Fatalf("the give-up's check = %+v, %v; want it to give up", st, err)
	}
	if len(reported) != 1 {
		t.Fatalf("reported %v, want the key once", reported)
	}
}

// giveUpOnDeskKey leaves deskKey given up on: its order's last call, and
// over KV the give-up's check (checkGiveUp), ended without an answer.
func giveUpOnDeskKey(t *testing.T, e *settleEnv, maxAge time.Duration) {
	t.Helper()
	ctx := context.Background()
	leaveUnknown(t, e)
	e.clock.Advance(maxAge)
	e.g.answer(errLost)
	checkGiveUp(t, e)
	if st, err := e.service().Settle(ctx, deskKey); err != nil || !st.Final || !st.Unresolved {
		t.Fatalf("the give-up = %+v, %v; want the key final and unresolved", st, err)
	}
	if rec, _ := e.store.Lookup(ctx, deskKey); intake.PhaseOf(rec) != intake.PhaseUnresolved {
		t.Fatalf("the key is %v, want it given up on", intake.PhaseOf(rec))
	}
	e.clock.Advance(time.Minute)
}

// settleWhatIsDue runs the settler on every due key for 50 minutes.
func settleWhatIsDue(t *testing.T, e *settleEnv) {
	t.Helper()
	for range 5 {
		e.clock.Advance(10 * time.Minute)
		for _, k := range e.due(t) {
			if _, err := e.service().Settle(context.Background(), k); err != nil {
				t.Fatalf("Settle(%v): %v", k, err)
			}
		}
	}
}

// wantStoredOnce fails t unless deskKey stores the accepted receipt of its
// order id, which a retry replays, and the settler gave up on it once.
func wantStoredOnce(t *testing.T, e *settleEnv, orderID string) {
	t.Helper()
	ctx := context.Background()
	got, err := e.service().Lookup(ctx, deskKey)
	if err != nil || got.OrderID != orderID {
		t.Fatalf("a lookup 50 minutes later = %s, %v; want %s's receipt stored", got.Receipt, err, orderID)
	}
	if again, err := e.service().Submit(ctx, deskKey, []byte(validBody), ""); err != nil || !again.Replayed || !bytes.Equal(again.Receipt, got.Receipt) {
		t.Fatalf("a retry = %s, %v; want the stored receipt replayed: %s", again.Receipt, err, got.Receipt)
	}
	if n := len(e.unresolvedCalls()); n != 1 {
		t.Fatalf("the key was reported unresolved %d times, want once", n)
	}
}

// TestARetryOfAKeyGivenUpOnCommitsBeforeItAnswers: a client's retry of a
// key the settler gave up on, which the OMS answers now. Answered before
// its commit, the receipt would be stored by nothing if the commit never
// ran (its isolate died) or failed and its claim's release too: the key,
// given up on, is due for nothing. So the retry commits first; a commit
// that fails is answered 503, and the key awaits the give-up's check,
// once reads have caught up, which asks the OMS once more and stores the
// answer; if the release that says so fails too, the key stays given up
// on, and the client's next retry stores it (found by two reviews).
func TestARetryOfAKeyGivenUpOnCommitsBeforeItAnswers(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	for _, tc := range []struct {
		name   string
		store  func(intake.Store) intake.Store
		defer_ func(context.Context, func(context.Context))
		lease  bool // the gateway call outlasts the claim's lease
		retry  bool // the client retries before anything settles it
	}{
		{name: "its commit never runs", defer_: func(context.Context, func(context.Context)) {}},
		{name: "its commit fails", store: func(s intake.Store) intake.Store { return &commitFailing{Store: s} }},
		{name: "its commit fails past its lease", store: func(s intake.Store) intake.Store { return &commitFailing{Store: s} }, lease: true},
		{name: "its commit and its release fail", store: func(s intake.Store) intake.Store { return &releaseFailing{Store: s} }, retry: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, intake.Options{SettleMaxAge: maxAge}, func(t *testing.T, e *settleEnv) {
				giveUpOnDeskKey(t, e, maxAge)
				orderID := e.g.placements()[0].OrderID
				store := e.store
				if tc.store != nil {
					e.store = tc.store(store)
				}
				var releaseErr error
				e.opts.OnReleaseError = func(_ intake.Key, err error) { releaseErr = err }
				e.opts.Defer = tc.defer_
				var scheduled []time.Time
				e.opts.Schedule = func(_ context.Context, _ intake.Key, at time.Time) error {
					scheduled = append(scheduled, at)
					return nil
				}
				if tc.lease {
					e.g.during = func(int) { e.clock.Advance(e.opts.PendingTTL + time.Second) }
				}
				out, err := e.service().Submit(ctx, deskKey, []byte(validBody), "")
				if tc.store != nil && !errors.Is(err, intake.ErrStorageUnavailable) {
					t.Fatalf("the retry whose commit failed = %s, %v; want 503, no receipt", out.Receipt, err)
				}
				if _, isReleaseFailing := e.store.(*releaseFailing); releaseErr != nil && !isReleaseFailing {
					t.Fatalf("the release after the failed commit: %v", releaseErr)
				}
				// The check is due at a time no message of the settler's
				// is for: the retry sends one (over KV's settle queue).
				if wantSent := tc.store != nil; len(scheduled) != 1 && wantSent || len(scheduled) != 0 && !wantSent ||
					wantSent && !scheduled[0].After(e.clock.Now()) {
					t.Fatalf("Schedule told %v; want one message for the check's due time (%v)", scheduled, wantSent)
				}
				e.g.during, e.store, e.opts.OnReleaseError, e.opts.Defer, e.opts.Schedule = nil, store, nil, nil, nil
				settleWhatIsDue(t, e)
				if tc.retry {
					if out, err := e.service().Submit(ctx, deskKey, []byte(validBody), ""); err != nil || out.OrderID != orderID {
						t.Fatalf("the client's next retry = %s, %v; want %s's receipt", out.Receipt, err, orderID)
					}
				}
				wantStoredOnce(t, e, orderID)
			})
		})
	}
}

// releaseFailing is a Store whose first Commit fails before it is made,
// and whose every Release fails.
type releaseFailing struct {
	intake.Store
	committed bool
}

func (s *releaseFailing) Commit(ctx context.Context, key intake.Key, c intake.Claim, r intake.Result) error {
	if !s.committed {
		s.committed = true
		return errors.New("commit refused")
	}
	return s.Store.Commit(ctx, key, c, r)
}

func (s *releaseFailing) Release(context.Context, intake.Key, intake.Claim) error {
	return errors.New("release refused")
}

// TestTheCheckAfterAnAnswerNotStoredWaitsForReads: over KV a commit that
// failed may have landed, and a read within KV's lag may miss it: the
// give-up's check that follows is due once reads have caught up, as the
// settler's last call's is, not after the backoff alone (found by a
// review: the check paged beside the stored receipt).
func TestTheCheckAfterAnAnswerNotStoredWaitsForReads(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	forEachStore(t, intake.Options{SettleMaxAge: maxAge}, func(t *testing.T, e *settleEnv) {
		giveUpOnDeskKey(t, e, maxAge)
		store := e.store
		e.store = &commitFailing{Store: store}
		if _, err := e.service().Submit(ctx, deskKey, []byte(validBody), ""); !errors.Is(err, intake.ErrStorageUnavailable) {
			t.Fatalf("the retry whose commit failed = %v, want 503", err)
		}
		rec, err := store.Lookup(ctx, deskKey)
		if err != nil || intake.PhaseOf(rec) != intake.PhaseChecking {
			t.Fatalf("the key is %v, %v; want it awaiting the give-up's check", intake.PhaseOf(rec), err)
		}
		if lag := store.Lifecycle().ReadsLag; rec.NextAttempt.Before(e.clock.Now().Add(2 * lag)) {
			t.Fatalf("the check is due at %v, %v from now, before reads have caught up (2 × %v)", rec.NextAttempt, rec.NextAttempt.Sub(e.clock.Now()), lag)
		}
	})
}

// TestARetryOfAKeyAwaitingTheCheckSendsAMessageForIt: a client's retry of
// a key awaiting the give-up's check, whose call fails too, leaves the
// check due when it read it, and sends a message for that time: its read
// may be stale, the check given up since and its chain ended, and the
// due time would then wait for the sweep, minutes (a long simulation
// found it). Over a Store whose reads are exact no key awaits a check.
func TestARetryOfAKeyAwaitingTheCheckSendsAMessageForIt(t *testing.T) {
	ctx := context.Background()
	const maxAge = time.Hour
	forEachStore(t, intake.Options{SettleMaxAge: maxAge}, func(t *testing.T, e *settleEnv) {
		if e.store.Lifecycle().ReadsLag == 0 {
			t.Skip("no key awaits the give-up's check")
		}
		leaveUnknown(t, e)
		e.clock.Advance(maxAge)
		e.g.answer(errLost)
		st, err := e.service().Settle(ctx, deskKey)
		if err != nil || !st.Unresolved || st.Final {
			t.Fatalf("the last call = %+v, %v; want the key awaiting the check", st, err)
		}
		var scheduled []time.Time
		e.opts.Schedule = func(_ context.Context, _ intake.Key, at time.Time) error {
			scheduled = append(scheduled, at)
			return nil
		}
		e.clock.Advance(time.Second)
		e.g.answer(errLost)
		_, err = e.service().Submit(ctx, deskKey, []byte(validBody), "")
		if u := (*intake.Unsettled)(nil); !errors.As(err, &u) || u.GiveUp != intake.AwaitingCheck || !u.NextAttempt.Equal(st.NextAttempt) {
			t.Fatalf("the retry = %v; want its outcome unknown, the check due at %v as before", err, st.NextAttempt)
		}
		if len(scheduled) != 1 || !scheduled[0].Equal(st.NextAttempt) {
			t.Fatalf("Schedule told %v; want one message, for the check's due time %v", scheduled, st.NextAttempt)
		}
	})
}
