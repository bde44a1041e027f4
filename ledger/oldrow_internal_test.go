package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
)

// unanswered is a gateway whose every call ends without an answer.
type unanswered struct{ calls []intake.Placement }

func (g *unanswered) Place(_ context.Context, p intake.Placement) error {
	g.calls = append(g.calls, p)
	return errors.New("gateway timeout")
}

// oldRowWorld is a MemoryStore holding an older version's open row of
// desk's key "old", for an order of AAPL under order id old-order, and a
// Service over it whose gateway never answers.
type oldRowWorld struct {
	now *time.Time
	m   *MemoryStore
	svc *intake.Service
	g   *unanswered
	key intake.Key
	o   order.Order
}

// newOldRowWorld is an oldRowWorld whose row is the one amend makes of a
// row that kept the order's fingerprint and order id, but not the order
// or the client.
func newOldRowWorld(amend func(row) row) oldRowWorld {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	w := oldRowWorld{now: &now, m: NewMemoryStore(), g: &unanswered{}, key: intake.Key{Client: "desk", ID: "old"},
		o: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}}
	w.m.Now = func() time.Time { return now }
	w.m.obj.rows.put(amend(row{key: w.key.String(), fingerprint: w.o.Fingerprint(), orderID: "old-order",
		acceptedAt: now.Add(-time.Hour), sent: true, expires: now.Add(48 * time.Hour)}))
	w.svc = intake.New(w.m, intake.Options{ResultTTL: 24 * time.Hour, PendingTTL: time.Minute, SettleMaxAge: 24 * time.Hour,
		Gateway: w.g, Now: w.m.Now})
	return w
}

// TestAnOlderRowWithoutItsOrderTakesItsRetrysOrder: an older version kept
// open rows with the order's fingerprint and order id but not the order,
// which the settler needs to call the OMS without the client. A retry of
// the same order takes the row over with the row's order id and its own
// order (TakeOver: the claim keeps its order where the key kept none), and
// the row keeps that order from then on: when the retry's call fails too,
// the key is due for the alarm, as KV mode leaves it, instead of waiting
// for another retry of a client that may never come.
func TestAnOlderRowWithoutItsOrderTakesItsRetrysOrder(t *testing.T) {
	ctx := context.Background()
	w := newOldRowWorld(func(r row) row { r.client, r.attempts = "desk", 1; return r })
	m, key, o, g, svc := w.m, w.key, w.o, w.g, w.svc
	var open *intake.Unsettled
	if _, err := svc.Submit(ctx, key, o.JSON(), ""); !errors.As(err, &open) || len(g.calls) != 1 || g.calls[0].OrderID != "old-order" {
		t.Fatalf("Submit = %v, with calls %+v; want an unknown outcome of one call under old-order", err, g.calls)
	}
	rec, err := m.Lookup(ctx, key)
	if err != nil || rec.State != intake.Open || !rec.HasOrder || rec.Order != o || rec.NextAttempt.IsZero() {
		t.Fatalf("Lookup = %v with order %v (%v), due %v, %v; want it open with the retry's order, due for the alarm", rec.State, rec.Order, rec.HasOrder, rec.NextAttempt, err)
	}
	if m.Alarm.IsZero() || m.Alarm.After(rec.NextAttempt) {
		t.Errorf("the alarm is set for %v; want it by %v", m.Alarm, rec.NextAttempt)
	}
}

// TestAReleaseThatNeverLearnedTheCheckLeavesItDue: a claim took over a key
// awaiting the give-up's check, but the answer to its Claim was lost, so
// it never learned of the check, and its client released it. The key
// stays as it was, awaiting the check, due: turned into a key given up
// on, it would never be asked about again, though the OMS answered the
// retry whose commit failed.
func TestAReleaseThatNeverLearnedTheCheckLeavesItDue(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	m := NewMemoryStore()
	m.Now = func() time.Time { return now }
	key := intake.Key{Client: "desk", ID: "checked"}
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	m.obj.rows.put(row{key: key.String(), client: key.Client, fingerprint: o.Fingerprint(), order: o, hasOrder: true, orderID: "o-1",
		acceptedAt: now.Add(-time.Hour), sent: true, attempts: 3, giveUp: intake.AwaitingCheck, due: now.Add(10 * time.Second),
		expires: now.Add(48 * time.Hour)})
	c := intake.Claim{Token: "retry", Fingerprint: o.Fingerprint(), Order: o, OrderID: "o-1", AcceptedAt: now,
		Lease: time.Minute, KeepUntil: now.Add(24 * time.Hour)}
	if rec, err := m.obj.Claim(key, c); err != nil || rec.Took != intake.EventTakeOver {
		t.Fatalf("Claim = %+v, %v; want a takeover (whose answer the client never sees)", rec, err)
	}
	if err := m.obj.Release(key, c); err != nil {
		t.Fatal(err)
	}
	r, _ := m.obj.rows.get(key.String())
	if r.giveUp != intake.AwaitingCheck || r.due.IsZero() {
		t.Errorf("the row is %v, due %v; want it awaiting the check, due", r.giveUp, r.due)
	}
}

// TestAnOlderRowWithoutItsClientIsNamedByItsRetry: rows written before
// the client column (and the order with it) read an empty one. A retry of the
// same order takes such an open row over and, unknown again, leaves it
// due for the alarm. The row names its key's client from then on: the
// alarm settles desk's key, not an open Worker's "desk:old", the settler's
// call names the client to the OMS, and desk's listing shows the key.
func TestAnOlderRowWithoutItsClientIsNamedByItsRetry(t *testing.T) {
	ctx := context.Background()
	w := newOldRowWorld(func(r row) row { return r })
	m, key, o, g, svc := w.m, w.key, w.o, w.g, w.svc
	var open *intake.Unsettled
	if _, err := svc.Submit(ctx, key, o.JSON(), ""); !errors.As(err, &open) || len(g.calls) != 1 {
		t.Fatalf("Submit = %v, with calls %+v; want an unknown outcome of one call", err, g.calls)
	}

	page, err := m.List(ctx, intake.ListQuery{Clients: []string{"desk"}, States: intake.AnyAttention, Limit: 10})
	if err != nil || len(page.Keys) != 1 || page.Keys[0].Key != key {
		t.Errorf("desk's listing = %+v, %v; want the open key %v", page.Keys, err, key)
	}
	*w.now = w.now.Add(time.Hour)
	var settled []intake.Key
	if err := m.RunAlarm(func(keys []intake.Key) error {
		for _, k := range keys {
			settled = append(settled, k)
			_, _ = svc.Settle(ctx, k)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(settled) != 1 || settled[0] != key {
		t.Errorf("the alarm settled %#v; want %#v", settled, key)
	}
	if len(g.calls) != 2 || g.calls[1].Client != key.Client || g.calls[1].OrderID != "old-order" {
		t.Errorf("the gateway's calls = %+v; want the settler's call under old-order for %s", g.calls, key.Client)
	}
}
