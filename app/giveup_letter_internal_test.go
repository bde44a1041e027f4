package app

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
)

// downQueue is a queue whose every send fails.
type downQueue struct{}

func (downQueue) Send(context.Context, []byte, time.Duration) error {
	return errors.New("queue unavailable")
}

// TestALaterGiveUpOfAnOrderIsANewLetter: the settler gave up on an order
// with the dead-letter queue down, so the Worker recorded its letter
// itself, and an operator acknowledged it. A later give-up of the order (a
// client's retry failed, and the give-up's check gave up again), the
// queue still down, is a new letter, listed, as its message through the
// queue would be; the same give-up recorded twice stays one letter. Under
// one id per order, the second was refused as acknowledged already, and
// its log line said it was recorded.
func TestALaterGiveUpOfAnOrderIsANewLetter(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	mem := kv.NewMemoryNamespace()
	mem.Now = func() time.Time { return now }
	var console bytes.Buffer
	vars := map[string]string{"OMS_URL": "https://oms.example/orders", "OPEN_ACCESS": "true"}
	w := New(Env{Var: func(n string) (string, bool) { v, ok := vars[n]; return v, ok }, Console: &console, KV: mem,
		SettleQueue: downQueue{}, DeadLetter: downQueue{}, Now: func() time.Time { return now }})
	if w.deadLetters == nil || w.opts.ReportUnresolved == nil {
		t.Fatalf("the Worker has no dead letters or give-up report: %s", console.String())
	}
	key := intake.Key{ID: "k1"}
	p := intake.Placement{OrderID: "11111111-2222-4333-8444-555555555555", Order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1}, AcceptedAt: now}
	report := func(attempts int) {
		t.Helper()
		if err := w.opts.ReportUnresolved(ctx, key, p, attempts); err != nil {
			t.Fatalf("the give-up's report: %v", err)
		}
	}
	report(5)
	report(5) // the same give-up, again
	letters, err := w.deadLetters.Letters(ctx, key)
	if err != nil || len(letters) != 1 {
		t.Fatalf("letters after the first give-up = %+v, %v; want one", letters, err)
	}
	if _, err := w.deadLetters.Acknowledge(ctx, key, letters[0].ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	console.Reset()
	report(7)
	letters, err = w.deadLetters.Letters(ctx, key)
	if err != nil || len(letters) != 1 || letters[0].Attempts != 7 {
		t.Errorf("letters after the second give-up = %+v, %v; want its own, of 7 attempts, listed", letters, err)
	}
	if !strings.Contains(console.String(), "its letter is recorded for the admin API") {
		t.Errorf("the second give-up's log says %s; want its letter recorded", console.String())
	}
}
