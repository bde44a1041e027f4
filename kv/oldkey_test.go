package kv_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

// noCalls is a gateway that fails the test if it is ever called.
type noCalls struct{ t *testing.T }

func (g noCalls) Place(context.Context, intake.Placement) error {
	g.t.Error("the gateway was called for a key without its order")
	return errors.New("unexpected call")
}

// TestAnOlderVersionsOpenKeyWithoutItsOrderIsNeverMadeDue: a version
// before the order travelled with its claim left keys open with their
// fingerprint and order id but no order, and no due time. Nothing but a
// client's retry can settle one: the resolver answers ErrNoOrder and the
// settler releases it "claim.NextAttempt = time.Time{}". Neither may make
// it due: it would be listed by every sweep from then on, each settle
// writing it open again, due at once and kept another SETTLE_MAX_AGE +
// RESULT_TTL, so it never expires.
func TestAnOlderVersionsOpenKeyWithoutItsOrderIsNeverMadeDue(t *testing.T) {
	ctx := context.Background()
	mem, store, c := newSettleStore()
	k := intake.Key{Client: "desk-a", ID: "old"}
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	ms := func(at time.Time) string { return strconv.FormatInt(at.UnixMilli(), 10) }
	// As the version of 40d3986 wrote an open key: kept 48 h.
	old := kv.Entry{Value: "1", Metadata: []byte(`{"fingerprint":"` + o.Fingerprint() + `","orderId":"old-order","acceptedAt":` +
		ms(c.now) + `,"leaseUntil":` + ms(c.now.Add(time.Minute)) + `,"state":"open"}`)}
	if err := mem.Put(ctx, "pending:desk-a:old", old, kv.PutOptions{TTL: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	svc := intake.New(store, intake.Options{ResultTTL: 24 * time.Hour, PendingTTL: time.Minute, Gateway: noCalls{t}, Now: c.Now})
	c.now = c.now.Add(time.Hour)
	if _, err := intake.NewAdmin(svc, store).Resolve(ctx, k, intake.Resolution{Status: order.StatusAccepted}); !errors.Is(err, intake.ErrNoOrder) {
		t.Fatalf("Resolve = %v, want ErrNoOrder", err)
	}
	for day := 1; day <= 5; day++ {
		c.now = c.now.Add(24 * time.Hour)
		keys, err := store.Overdue(ctx, c.now, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 0 {
			// What the sweep does with it: settle, which writes it back due.
			st, err := svc.Settle(ctx, keys[0])
			t.Errorf("day %d: Overdue = %v (settled: %+v, %v); want no key listed: nothing can settle it", day, keys, st, err)
		}
	}
	if _, err := mem.Get(ctx, "pending:desk-a:old"); err == nil {
		t.Errorf("5 days on the key, kept 48 h by the version that wrote it, is still there")
	}
}
