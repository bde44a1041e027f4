package ledger_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
)

// leaveOpen claims key for an order and releases it open, as a request
// does after an unknown outcome, due for the settler at due.
func leaveOpen(t *testing.T, m *ledger.MemoryStore, c *clock, key intake.Key, due time.Time) intake.Claim {
	t.Helper()
	ctx := context.Background()
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	claim := intake.Claim{Token: "t-" + key.String(), Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-" + key.String(),
		AcceptedAt: c.now, Lease: time.Minute, KeepUntil: c.now.Add(48 * time.Hour)}
	if rec, err := m.Begin(ctx, key, claim); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("Begin(%v) = %+v, %v; want a claim", key, rec, err)
	}
	claim.Stage, claim.Attempts, claim.NextAttempt = intake.StageSent, 1, due
	if err := m.Release(ctx, key, claim); err != nil {
		t.Fatal(err)
	}
	return claim
}

// TestAlarmReturnsDueKeys checks the settler's half of the object's one
// alarm: it is set for the earliest due key, the alarm returns the keys
// due then (named with their client, the longest due first, at most the
// limit), and AlarmDone sets the next alarm no sooner than the retry
// delay for a key still due, for a later key, or for the sweep.
func TestAlarmReturnsDueKeys(t *testing.T) {
	m, c := newMemory()
	start := c.now
	desk := intake.Key{Client: "desk-a", ID: "x:y"}
	open := intake.Key{ID: "desk-a:z"} // the open Worker's key, whose id has a colon
	later := intake.Key{Client: "desk-b", ID: "later"}
	leaveOpen(t, m, c, open, start.Add(2*time.Second))
	leaveOpen(t, m, c, desk, start.Add(time.Second))
	leaveOpen(t, m, c, later, start.Add(time.Hour))
	if want := start.Add(time.Second); !m.Alarm.Equal(want) {
		t.Fatalf("alarm at %v, want the earliest due key's %v", m.Alarm, want)
	}

	t.Run("nothing is due before its time", func(t *testing.T) {
		c.Advance(500 * time.Millisecond)
		if keys := m.DueKeys(10); len(keys) != 0 {
			t.Fatalf("DueKeys = %v, want none", keys)
		}
		// The next alarm is for the earliest due key, but no sooner than
		// the retry delay from now.
		m.AlarmDone(time.Second)
		if want := c.now.Add(time.Second); !m.Alarm.Equal(want) {
			t.Fatalf("alarm at %v after an early alarm, want %v", m.Alarm, want)
		}
	})
	t.Run("due keys come with their client, the longest due first, up to the limit", func(t *testing.T) {
		c.now = start.Add(2 * time.Second)
		if got, want := m.DueKeys(1), []intake.Key{desk}; !slices.Equal(got, want) {
			t.Fatalf("DueKeys(1) = %v, want %v", got, want)
		}
		if !m.Alarm.IsZero() {
			t.Errorf("the alarm is still set for %v once it fired", m.Alarm)
		}
		if got, want := m.DueKeys(10), []intake.Key{desk, open}; !slices.Equal(got, want) {
			t.Fatalf("DueKeys(10) = %v, want %v", got, want)
		}
	})
	t.Run("a key still due is tried again after the retry delay", func(t *testing.T) {
		m.AlarmDone(5 * time.Second)
		if want := c.now.Add(5 * time.Second); !m.Alarm.Equal(want) {
			t.Fatalf("alarm at %v, want %v", m.Alarm, want)
		}
	})
	t.Run("once settled, the next alarm is for the next due key", func(t *testing.T) {
		ctx := context.Background()
		for _, key := range []intake.Key{desk, open} {
			settler := intake.Claim{Token: "settler-" + key.String(), Lease: time.Minute, By: intake.RoleSettler}
			if rec, err := m.Begin(ctx, key, settler); err != nil || rec.Took != intake.EventTakeOver {
				t.Fatalf("the settler's Begin(%v) = %+v, %v; want a takeover", key, rec, err)
			}
			if err := m.Commit(ctx, key, settler, intake.Result{Body: []byte(`{"orderId":"x"}`), TTL: 24 * time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		if keys := m.DueKeys(10); len(keys) != 0 {
			t.Fatalf("DueKeys after settling = %v, want none", keys)
		}
		m.AlarmDone(5 * time.Second)
		// The sweep, ten minutes after the first claim, comes before the
		// key due in an hour.
		if !m.Alarm.After(c.now) || !m.Alarm.Before(start.Add(time.Hour)) {
			t.Fatalf("alarm at %v, want after %v and no later than the sweep, before %v", m.Alarm, c.now, start.Add(time.Hour))
		}
		c.now = start.Add(time.Hour)
		if got, want := m.DueKeys(10), []intake.Key{later}; !slices.Equal(got, want) {
			t.Fatalf("DueKeys an hour on = %v, want %v", got, want)
		}
	})
}

// TestAlarmFindsAClaimWhoseHolderDied: a claim that may reach the gateway
// is due for the settler at its lease's end, so a request that died
// holding it is settled without a client.
func TestAlarmFindsAClaimWhoseHolderDied(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	key := intake.Key{Client: "desk-a", ID: "k"}
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	claim := intake.Claim{Token: "t", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-1", AcceptedAt: c.now,
		Lease: time.Minute, KeepUntil: c.now.Add(48 * time.Hour)}
	if _, err := m.Begin(ctx, key, claim); err != nil {
		t.Fatal(err)
	}
	if want := c.now.Add(time.Minute); !m.Alarm.Equal(want) {
		t.Fatalf("alarm at %v, want the lease's end %v", m.Alarm, want)
	}
	c.Advance(59 * time.Second)
	if keys := m.DueKeys(10); len(keys) != 0 {
		t.Fatalf("DueKeys within the lease = %v, want none", keys)
	}
	c.Advance(time.Second)
	if got, want := m.DueKeys(10), []intake.Key{key}; !slices.Equal(got, want) {
		t.Fatalf("DueKeys at the lease's end = %v, want %v", got, want)
	}
}

// TestAlarmSkipsUnresolvedKeys: a key the settler gave up on is never due
// again.
func TestAlarmSkipsUnresolvedKeys(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	key := intake.Key{ID: "k"}
	claim := leaveOpen(t, m, c, key, c.now.Add(time.Second))
	settler := intake.Claim{Token: "settler", Lease: time.Minute, By: intake.RoleSettler}
	c.Advance(time.Second)
	if rec, err := m.Begin(ctx, key, settler); err != nil || rec.Took != intake.EventTakeOver {
		t.Fatalf("the settler's Begin = %+v, %v; want a takeover", rec, err)
	}
	settler.OrderID, settler.AcceptedAt, settler.Stage, settler.GiveUp = claim.OrderID, claim.AcceptedAt, intake.StageSent, intake.GivenUp
	settler.KeepUntil = c.now.Add(24 * time.Hour)
	if err := m.Release(ctx, key, settler); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour)
	if keys := m.DueKeys(10); len(keys) != 0 {
		t.Fatalf("DueKeys = %v, want none: the key is unresolved", keys)
	}
	if rec, err := m.Lookup(ctx, key); err != nil || rec.State != intake.Open || rec.GiveUp != intake.GivenUp || rec.OrderID != claim.OrderID {
		t.Fatalf("Lookup = %+v, %v; want Open, unresolved, with %s", rec, err, claim.OrderID)
	}
}

// TestAnOpenRowStaysOpenWhenATakeoverIsReleasedUnsent: a claim whose
// answer was lost is released as its caller sent it, not knowing it took
// an open row over; every claim for the order carries the same order id
// (intake.OrderIDFor), so the row itself must remember that its order id
// may have reached the gateway, and stay open, due for the settler.
func TestAnOpenRowStaysOpenWhenATakeoverIsReleasedUnsent(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	k := intake.Key{Client: "desk-a", ID: "k"}
	first := leaveOpen(t, m, c, k, c.now.Add(time.Second))
	retry := first
	retry.Token, retry.Stage, retry.Attempts, retry.NextAttempt = "t-retry", intake.StageFirm, 0, time.Time{}
	if rec, err := m.Begin(ctx, k, retry); err != nil || rec.Took != intake.EventTakeOver {
		t.Fatalf("the retry's Begin = %+v, %v; want a takeover", rec, err)
	}
	if err := m.Release(ctx, k, retry); err != nil {
		t.Fatal(err)
	}
	rec, err := m.Lookup(ctx, k)
	if err != nil || rec.State != intake.Open || rec.OrderID != first.OrderID {
		t.Fatalf("Lookup = %+v, %v; want the key open with %s", rec, err, first.OrderID)
	}
	c.Advance(time.Second)
	if keys := m.DueKeys(10); len(keys) != 1 {
		t.Errorf("DueKeys = %v, want the open key", keys)
	}
}

// TestAnOutcomeIsKeptAsLongAsItsClaimKeptTheKey: the receipt is kept its
// TTL, and at least until the claim's KeepUntil, so that a record of the
// key elsewhere (the KV namespace a migration adopted it from) never
// outlives the outcome.
func TestAnOutcomeIsKeptAsLongAsItsClaimKeptTheKey(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	k := intake.Key{Client: "desk-a", ID: "k"}
	cl := leaveOpen(t, m, c, k, c.now.Add(time.Second))
	settler := cl
	settler.Token = "t-settler"
	if rec, err := m.Begin(ctx, k, settler); err != nil || rec.Took != intake.EventTakeOver {
		t.Fatalf("Begin = %+v, %v; want a takeover", rec, err)
	}
	if err := m.Commit(ctx, k, settler, intake.Result{Body: []byte(`{"orderId":"x"}`), Fingerprint: cl.Fingerprint, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c.now = cl.KeepUntil.Add(-time.Second)
	if rec, err := m.Lookup(ctx, k); err != nil || rec.State != intake.Stored {
		t.Errorf("Lookup just before KeepUntil = %v, %v; want the outcome Stored", rec.State, err)
	}
}

// TestAClaimThatDiedMidCallStaysOpenAfterATakeoverReleasedUnsent: a claim
// whose holder died during its gateway call is open once its lease ends;
// a takeover whose answer was lost, released as its caller sent it, must
// leave the key open and due, not delete the order id the dead holder may
// have sent.
func TestAClaimThatDiedMidCallStaysOpenAfterATakeoverReleasedUnsent(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	k := intake.Key{Client: "desk-a", ID: "k"}
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	dead := intake.Claim{Token: "t-dead", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-k", AcceptedAt: c.now,
		Lease: time.Minute, KeepUntil: c.now.Add(48 * time.Hour)}
	if rec, err := m.Begin(ctx, k, dead); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("Begin = %+v, %v; want a claim", rec, err)
	}
	c.Advance(time.Minute + time.Second) // the holder died at the gateway
	retry := dead
	retry.Token = "t-retry"
	if rec, err := m.Begin(ctx, k, retry); err != nil || rec.Took != intake.EventTakeOver {
		t.Fatalf("the retry's Begin = %+v, %v; want a takeover", rec, err)
	}
	if err := m.Release(ctx, k, retry); err != nil {
		t.Fatal(err)
	}
	if rec, err := m.Lookup(ctx, k); err != nil || rec.State != intake.Open || rec.OrderID != "order-k" {
		t.Fatalf("Lookup = %+v, %v; want the key open with order-k", rec, err)
	}
}

// TestATentativeClaimWhoseLeaseEndedCommitsNothing: a tentative claim
// whose lease ended freed its key (its order never reached the gateway
// under it), so its commit is refused, as its release already changes
// nothing: the key was free for any request meanwhile, and a commit
// would move it from absent to stored, which the table has no row for.
func TestATentativeClaimWhoseLeaseEndedCommitsNothing(t *testing.T) {
	m, c := newMemory()
	ctx := context.Background()
	key := intake.Key{Client: "desk-a", ID: "k"}
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	claim := intake.Claim{Token: "t", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-k", AcceptedAt: c.now,
		Lease: time.Minute, KeepUntil: c.now.Add(48 * time.Hour), Stage: intake.StageTentative}
	if rec, err := m.Begin(ctx, key, claim); err != nil || rec.Took != intake.EventClaim {
		t.Fatalf("Begin = %+v, %v; want a claim", rec, err)
	}
	c.now = c.now.Add(time.Minute + time.Second)
	receipt := intake.Result{Body: []byte(`{"orderId":"kv-order","status":"accepted"}`), Fingerprint: o.Fingerprint(), TTL: time.Hour}
	if err := m.Commit(ctx, key, claim, receipt); !errors.Is(err, intake.ErrLostClaim) {
		t.Fatalf("Commit after the tentative lease ended = %v, want ErrLostClaim", err)
	}
	if rec, err := m.Lookup(ctx, key); err != nil || rec.State != intake.Absent {
		t.Fatalf("Lookup = %+v, %v; want the key free", rec, err)
	}
}

// TestAMisconfiguredAlarmWaitsAMinute: an alarm that cannot settle (the
// Worker is misconfigured: no settler) leaves its keys due and comes
// again after MisconfiguredRetry, not each second until a fix is
// deployed; one that can settles the keys due and comes again a second
// later for a key still due.
func TestAMisconfiguredAlarmWaitsAMinute(t *testing.T) {
	m, c := newMemory()
	key := intake.Key{Client: "desk-a", ID: "due"}
	leaveOpen(t, m, c, key, c.now)
	c.Advance(time.Second)
	if err := m.RunAlarm(nil); err != nil {
		t.Fatal(err)
	}
	if want := c.now.Add(ledger.MisconfiguredRetry); !m.Alarm.Equal(want) {
		t.Fatalf("alarm at %v after one that could not settle, want %v", m.Alarm, want)
	}
	c.now = m.Alarm
	var settled []intake.Key
	if err := m.RunAlarm(func(keys []intake.Key) error { settled = keys; return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(settled, []intake.Key{key}) {
		t.Fatalf("the alarm settled %v, want the key left due: %v", settled, key)
	}
	if want := c.now.Add(intake.FirstSettleDelay); !m.Alarm.Equal(want) {
		t.Fatalf("alarm at %v for a key still due, want %v", m.Alarm, want)
	}
}
