package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
)

// TestAGiveUpsLetterDoesNotWaitForAFailingPager, KV mode: the pager
// refuses every page (a revoked routing key), so the give-up is never
// stored and the key is due again every 15 s. Its letter is recorded for
// the admin API at the first refused page, and stays one letter however
// often the settler tries again; once the pager takes the page, the
// give-up is stored and its letter goes to the dead-letter queue too.
// Before, the letter waited for the page, and nothing showed the give-up
// but its alert_failed lines for as long as the pager failed.
func TestAGiveUpsLetterDoesNotWaitForAFailingPager(t *testing.T) {
	const refusals = 6
	w, p := pagedWorld(t, nil)
	worker := app.New(w.env)
	refused := make([]int, refusals)
	for i := range refused {
		refused[i] = 400
	}
	p.fail(refused...)
	w.lose = true
	if resp := w.post(worker.Handler, "k"); resp.Status != 503 {
		t.Fatalf("answer = %d %s; want 503", resp.Status, resp.Body)
	}
	letters := kv.NewDeadLetterStore(w.env.KV.(*kv.MemoryNamespace))
	ctx := context.Background()
	listed := func() []intake.DeadLetter {
		t.Helper()
		got, err := letters.Letters(ctx, intake.Key{ID: "k"})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Settle until the pager has refused every page, checking after each
	// message: no letter before the first refusal, one from then on.
	for n := 0; ; n++ {
		if n >= len(w.settle.sent()) || n > 200 {
			t.Fatalf("settle messages ran out after %d", n)
		}
		_, failed := p.seen()
		if len(failed) == refusals {
			break
		}
		w.advance(max(w.settle.delays[n], intake.ReportRetryDelay))
		if err := worker.SettleMessage(ctx, w.settle.sent()[n]); err != nil {
			t.Fatalf("SettleMessage %d = %v", n, err)
		}
		_, failed = p.seen()
		switch got := listed(); {
		case len(failed) == 0 && len(got) != 0:
			t.Fatalf("letters before any page was refused: %+v", got)
		case len(failed) > 0 && (len(got) != 1 || !strings.HasPrefix(got[0].ID, "unpaged-") || got[0].OrderID == ""):
			t.Fatalf("letters after %d refused pages: %+v; want one, of the give-up whose page failed", len(failed), got)
		}
	}
	if sent := w.dead.sent(); len(sent) != 0 {
		t.Fatalf("dead-letter queue messages while the pager refused: %d, want none: the give-up is not stored", len(sent))
	}
	settleUntil(t, w, worker, len(w.settle.sent())-1)
	if taken, _ := p.seen(); len(taken) != 1 || taken[0] != "order_unresolved k" {
		t.Fatalf("pages taken %q, want order_unresolved k once the pager takes it", taken)
	}
	if sent := w.dead.sent(); len(sent) != 1 {
		t.Errorf("dead-letter queue messages once the page went through: %d, want one", len(sent))
	}
	if got := listed(); len(got) != 1 {
		t.Errorf("letters recorded = %+v, want still the one recorded while the pager failed", got)
	}
}
