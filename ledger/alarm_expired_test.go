package ledger_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
)

// TestExpiredDueRowsLeaveTheAlarmsBatchToLiveOnes: rows that expired while
// still due (an alarm long delayed) are found absent by the settler and
// stay due until the sweep deletes them. They are left out of the alarm's
// batch, which would otherwise hold them ahead of every live due row
// until then (found by a review).
func TestExpiredDueRowsLeaveTheAlarmsBatchToLiveOnes(t *testing.T) {
	ctx := context.Background()
	m, c := newMemory()
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	open := func(id string, keep time.Duration) {
		key := intake.Key{Client: "desk-a", ID: id}
		cl := intake.Claim{Token: "t-" + id, Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-" + id,
			AcceptedAt: c.now, Lease: time.Minute, KeepUntil: c.now.Add(keep)}
		if _, err := m.Begin(ctx, key, cl); err != nil {
			t.Fatal(err)
		}
		cl.Stage, cl.Attempts, cl.NextAttempt = intake.StageSent, 1, c.now.Add(time.Second)
		if err := m.Release(ctx, key, cl); err != nil {
			t.Fatal(err)
		}
	}
	const batch = 32
	for i := range batch {
		open("expired"+strconv.Itoa(i), 2*time.Minute)
	}
	c.Advance(time.Second)
	open("live", 48*time.Hour)
	c.Advance(3 * time.Minute)
	keys := m.DueKeys(batch)
	if len(keys) != 1 || keys[0].ID != "live" {
		t.Fatalf("the alarm's batch is %v, want the live due key alone", keys)
	}
}
