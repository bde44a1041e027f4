package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/ledger"
)

// ledgerGiveUp runs a ledger-mode Worker (with SETTLE_DLQ bound, as
// newWorld binds it) until its alarm's Settler gives up on one key, and
// reports whether the alarm panicked.
func ledgerGiveUp(t *testing.T, w *world) (panicked any) {
	t.Helper()
	ctx := context.Background()
	store := ledger.NewMemoryStore()
	store.Now = w.clock
	w.env.Ledger = func(int) intake.Store { return store }
	worker := app.New(w.env)
	w.lose = true
	if resp := w.post(worker.Handler, "k"); resp.Status != 503 {
		t.Fatalf("answer = %d %s; want 503", resp.Status, resp.Body)
	}
	defer func() { panicked = recover() }()
	for range 40 {
		w.advance(2 * time.Minute)
		settler := worker.Settler(store)
		for _, key := range store.DueKeys(100) {
			settler.Settle(ctx, key)
		}
		store.AlarmDone(intake.FirstSettleDelay)
		if len(w.lines("order_unresolved")) > 0 {
			break
		}
	}
	return nil
}

// TestALedgerGiveUpWithoutAPagerDoesNotPanic: ledger mode, SETTLE_DLQ
// bound, no ALERT_WEBHOOK_URL: the alarm's Settler reports a give-up
// (its letter) without a pager to page.
func TestALedgerGiveUpWithoutAPagerDoesNotPanic(t *testing.T) {
	w := newWorld(t, map[string]string{"STORAGE": "ledger", "SETTLE_MAX_AGE_SECONDS": "60"})
	if p := ledgerGiveUp(t, w); p != nil {
		t.Fatalf("the alarm's Settler panicked at the give-up: %v", p)
	}
	if got := w.lines("order_unresolved"); len(got) != 1 {
		t.Errorf("order_unresolved lines %d, want 1", len(got))
	}
}

// TestALedgerGiveUpSendsItsLetterWhenSETTLE_DLQIsBound: ledger mode with
// SETTLE_DLQ bound and a pager: the alarm's Settler, whose report shares
// the alarm's page budget, sends the give-up's letter beside its page.
func TestALedgerGiveUpSendsItsLetterWhenSETTLE_DLQIsBound(t *testing.T) {
	w, p := pagedWorld(t, map[string]string{"STORAGE": "ledger"})
	if pn := ledgerGiveUp(t, w); pn != nil {
		t.Fatalf("panicked: %v", pn)
	}
	if taken, _ := p.seen(); len(taken) != 1 {
		t.Fatalf("pages %v, want 1", taken)
	}
	if got := w.lines("order_unresolved"); len(got) != 1 {
		t.Fatalf("order_unresolved lines %d, want 1", len(got))
	}
	if got := len(w.dead.sent()); got != 1 {
		t.Errorf("letters sent to %s: %d, want 1 (the give-up was stored, its letter went nowhere)", app.DeadLetterBinding, got)
	}
}
