package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
)

// TestADueAlarmIsNotPushedBackByAClaim: the object's alarm is set for a
// key due at T. At T it is due, but the runtime has not run it yet (the
// alarm is delivered some time after T, and requests keep coming). A new
// claim in that window must not move the alarm to its own lease's end:
// the due key would wait a whole lease, and every claim that lands in
// the next window pushes it again.
func TestADueAlarmIsNotPushedBackByAClaim(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	due := intake.Key{Client: "desk-a", ID: "due"}
	leaveOpen(t, m, c, due, c.now.Add(time.Second))
	at := m.Alarm
	c.Advance(time.Second + 50*time.Millisecond) // the alarm is due, not yet run
	o := order.Order{Symbol: "MSFT", Side: order.Sell, Quantity: 1}
	claim := intake.Claim{Token: "t-new", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-new",
		AcceptedAt: c.now, Lease: time.Minute, KeepUntil: c.now.Add(48 * time.Hour)}
	if _, err := m.Begin(ctx, intake.Key{Client: "desk-a", ID: "new"}, claim); err != nil {
		t.Fatal(err)
	}
	if m.Alarm.After(c.now) {
		t.Fatalf("alarm moved from %v (due) to %v, %v from now: the due key waits a lease", at, m.Alarm, m.Alarm.Sub(c.now))
	}
}

// TestADueSweepIsNotPushedBackByAClaim: the sweep is due at S and its
// alarm has not run yet when a claim lands; the claim must leave the
// sweep due, so that the alarm, when it runs, deletes the rows expired by
// then. Moved 10 minutes on by every claim in that window, a busy
// object never sweeps.
func TestADueSweepIsNotPushedBackByAClaim(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	short := intake.Claim{Token: "short", Lease: time.Minute} // kept its lease only
	if _, err := m.Begin(ctx, intake.Key{Client: "desk-a", ID: "short"}, short); err != nil {
		t.Fatal(err)
	}
	sweep := m.Alarm
	c.now = sweep.Add(50 * time.Millisecond) // the sweep is due, its alarm not run yet
	o := order.Order{Symbol: "MSFT", Side: order.Sell, Quantity: 1}
	claim := intake.Claim{Token: "t-new", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-new",
		AcceptedAt: c.now, Lease: time.Minute, KeepUntil: c.now.Add(48 * time.Hour)}
	if _, err := m.Begin(ctx, intake.Key{Client: "desk-a", ID: "new"}, claim); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second) // the alarm runs
	m.DueKeys(32)
	m.AlarmDone(intake.FirstSettleDelay)
	if got := m.Rows(); got != 1 {
		t.Fatalf("after the alarm that was due for the sweep, %d rows remain, want 1: the expired claim was not swept", got)
	}
}
