package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/workers"
)

const (
	pagerURL   = "https://pager.example/v2/enqueue?token=url-s3cr3t"
	routingKey = "R0UT1NGKEY0123456789abcdef012345"
)

// pager stands in for PagerDuty's Events API: it answers each event with
// the next of its statuses (202 once they run out) and keeps the events.
type pager struct {
	mu       sync.Mutex
	statuses []int
	events   []pagerEvent
}

type pagerEvent struct {
	status   int
	DedupKey string `json:"dedup_key"`
	Payload  struct {
		Class   string `json:"class"`
		Details struct {
			Key     string `json:"idempotency_key"`
			OrderID string `json:"order_id"`
		} `json:"custom_details"`
	} `json:"payload"`
}

func (p *pager) fail(statuses ...int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.statuses = append(p.statuses, statuses...)
}

func (p *pager) serve(r *workers.OutgoingRequest) *workers.OutgoingResponse {
	p.mu.Lock()
	defer p.mu.Unlock()
	status := 202
	if len(p.statuses) > 0 {
		status, p.statuses = p.statuses[0], p.statuses[1:]
	}
	var e pagerEvent
	json.Unmarshal(r.Body, &e)
	e.status = status
	p.events = append(p.events, e)
	return &workers.OutgoingResponse{Status: status, Body: []byte(`{"status":"success"}`)}
}

// taken lists "class key" for each event the pager took, and failed for
// each it refused.
func (p *pager) seen() (taken, failed []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.events {
		s := e.Payload.Class + " " + e.Payload.Details.Key
		if e.status == 202 {
			taken = append(taken, s)
		} else {
			failed = append(failed, s)
		}
	}
	return taken, failed
}

// pagedWorld is a world whose fetch reaches the pager at pagerURL and the
// OMS elsewhere.
func pagedWorld(t *testing.T, vars map[string]string) (*world, *pager) {
	all := map[string]string{"ALERT_WEBHOOK_URL": pagerURL, "ALERT_ROUTING_KEY": routingKey, "SETTLE_MAX_AGE_SECONDS": "60"}
	for k, v := range vars {
		all[k] = v
	}
	w, p := newWorld(t, all), &pager{}
	w.env.Fetch = func(ctx context.Context, r *workers.OutgoingRequest) (*workers.OutgoingResponse, error) {
		if r.URL == pagerURL {
			return p.serve(r), nil
		}
		return w.oms(ctx, r)
	}
	return w, p
}

// settleUntil runs the KV settle messages sent from the next one on, the
// clock moved to each one's time, until the dead-letter queue gets one or
// none is left; it returns how many it ran.
func settleUntil(t *testing.T, w *world, worker *app.Worker, from int) int {
	t.Helper()
	n := from
	for ; n < len(w.settle.sent()) && len(w.dead.sent()) == 0; n++ {
		w.advance(max(w.settle.delays[n], time.Minute*time.Duration(min(n, 1))))
		if err := worker.SettleMessage(context.Background(), w.settle.sent()[n]); err != nil {
			t.Fatalf("SettleMessage %d = %v", n, err)
		}
	}
	return n
}

// TestAnUnresolvedOrderPagesOnceAfterThePagerFailed, KV mode: the pager
// refuses the first page, the give-up is not stored, the key's next
// settle message pages again, and once the pager takes it the key is
// unresolved and dead-lettered; its letter pages no more.
func TestAnUnresolvedOrderPagesOnceAfterThePagerFailed(t *testing.T) {
	w, p := pagedWorld(t, nil)
	worker := app.New(w.env)
	p.fail(503)
	w.lose = true
	if resp := w.post(worker.Handler, "k"); resp.Status != 503 {
		t.Fatalf("answer = %d %s; want 503", resp.Status, resp.Body)
	}
	settleUntil(t, w, worker, 0)
	taken, failed := p.seen()
	if len(failed) != 1 || len(taken) != 1 || taken[0] != "order_unresolved k" {
		t.Fatalf("pages taken %q, refused %q; want one refused, then order_unresolved k taken", taken, failed)
	}
	if got := w.lines("alert_failed"); len(got) != 1 || got[0]["level"] != "error" || got[0]["key"] != "k" {
		t.Errorf("alert_failed lines %v, want one, at error level", got)
	}
	if got := w.lines("order_unresolved"); len(got) != 1 {
		t.Errorf("order_unresolved lines %v, want one, after the page taken", got)
	}
	if delays := w.settle.delays; delays[len(delays)-1] != intake.ReportRetryDelay {
		t.Errorf("settle message delays %v, want the last, after the refused page, %v", delays, intake.ReportRetryDelay)
	}
	dead := w.dead.sent()
	if len(dead) != 1 {
		t.Fatalf("dead letters %q, want one", dead)
	}
	if err := worker.DeadLetterMessage(context.Background(), "m1", dead[0]); err != nil {
		t.Fatalf("DeadLetterMessage = %v", err)
	}
	if taken, _ := p.seen(); len(taken) != 1 {
		t.Errorf("pages taken after the unresolved key's letter %q, want still one: its key was paged", taken)
	}
	if log := w.console.String(); strings.Contains(log, "s3cr3t") || strings.Contains(log, routingKey) {
		t.Errorf("the log shows a secret of the pager:\n%s", log)
	}
}

// TestADeadLetterPagesUntilThePagerTakesIt: a letter for a key whose
// outcome is still unknown (its settle message kept failing) pages; a
// refused page makes the letter's delivery fail, so the queue delivers it
// again, and it pages again.
func TestADeadLetterPagesUntilThePagerTakesIt(t *testing.T) {
	w, p := pagedWorld(t, nil)
	worker := app.New(w.env)
	w.lose = true
	if resp := w.post(worker.Handler, "k"); resp.Status != 503 {
		t.Fatalf("answer = %d %s; want 503", resp.Status, resp.Body)
	}
	letter := w.settle.sent()[0] // a settle message, given up by its queue
	p.fail(500)
	if err := worker.DeadLetterMessage(context.Background(), "m1", letter); err == nil {
		t.Fatal("DeadLetterMessage with the pager refusing = nil, want an error: the queue must deliver the letter again")
	}
	if err := worker.DeadLetterMessage(context.Background(), "m1", letter); err != nil {
		t.Fatalf("DeadLetterMessage delivered again = %v, want nil", err)
	}
	taken, failed := p.seen()
	if len(failed) != 1 || len(taken) != 1 || taken[0] != "dead_letter k" {
		t.Errorf("pages taken %q, refused %q; want one refused, then dead_letter k taken", taken, failed)
	}
}

// TestPagesAreBoundedPerRunAndOwedPastIt, ledger mode: one alarm pages
// for PagesPerRun keys; the others stay due, owing their page, and the
// next alarm pages for them. Each key is paged once, under a dedup_key of
// its own.
func TestPagesAreBoundedPerRunAndOwedPastIt(t *testing.T) {
	ctx := context.Background()
	w, p := pagedWorld(t, map[string]string{"STORAGE": "ledger"})
	store := ledger.NewMemoryStore()
	store.Now = w.clock
	w.env.Ledger = func(int) intake.Store { return store }
	worker := app.New(w.env)
	w.lose = true
	keys := app.PagesPerRun + 3
	for i := range keys {
		if resp := w.post(worker.Handler, fmt.Sprint("k", i)); resp.Status != 503 {
			t.Fatalf("answer = %d %s; want 503", resp.Status, resp.Body)
		}
	}
	// alarm settles the due keys as the ledger's alarm does, with one
	// Settler per run.
	alarm := func() {
		settler := worker.Settler(store)
		for _, key := range store.DueKeys(100) {
			settler.Settle(ctx, key)
		}
		store.AlarmDone(intake.FirstSettleDelay)
	}
	w.advance(2 * time.Minute) // past SETTLE_MAX_AGE_SECONDS
	alarm()
	if taken, _ := p.seen(); len(taken) != app.PagesPerRun {
		t.Fatalf("pages of the first alarm: %d, want %d", len(taken), app.PagesPerRun)
	}
	if due := store.DueKeys(100); len(due) != 0 {
		t.Fatalf("keys due at once after the alarm: %v, want those past the budget due in %v", due, intake.ReportRetryDelay)
	}
	w.advance(intake.ReportRetryDelay)
	if due := store.DueKeys(100); len(due) != keys-app.PagesPerRun {
		t.Fatalf("keys due after %v: %v, want the %d past the budget", intake.ReportRetryDelay, due, keys-app.PagesPerRun)
	}
	alarm()
	taken, failed := p.seen()
	dedup := map[string]bool{}
	for _, e := range p.events {
		dedup[e.DedupKey] = true
	}
	if len(taken) != keys || len(failed) != 0 || len(dedup) != keys {
		t.Errorf("%d pages taken, %d refused, %d dedup keys; want %d, none, one per key", len(taken), len(failed), len(dedup), keys)
	}
	if got := w.lines("order_unresolved"); len(got) != keys {
		t.Errorf("%d order_unresolved lines, want %d", len(got), keys)
	}
	if got := w.lines("alert_failed"); len(got) != keys-app.PagesPerRun {
		t.Errorf("%d alert_failed lines, want one per key past the budget, %d", len(got), keys-app.PagesPerRun)
	}
}

// leveledConsole is a console with an error level, as the Workers one is.
type leveledConsole struct {
	mu          sync.Mutex
	log, errors bytes.Buffer
}

func (c *leveledConsole) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.Write(p)
}

func (c *leveledConsole) WriteError(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errors.Write(p)
}

// TestErrorLinesGoOutAtErrorLevel: an alert and a 5xx answer go to the
// console's error level, where Workers Logs filters them; an order placed
// goes to its log level.
func TestErrorLinesGoOutAtErrorLevel(t *testing.T) {
	w := newWorld(t, nil)
	console := &leveledConsole{}
	w.env.Console = console
	worker := app.New(w.env)
	if resp := w.post(worker.Handler, "placed"); resp.Status != 201 {
		t.Fatalf("answer = %d %s; want 201", resp.Status, resp.Body)
	}
	w.lose = true
	if resp := w.post(worker.Handler, "lost"); resp.Status != 503 {
		t.Fatalf("answer = %d %s; want 503", resp.Status, resp.Body)
	}
	letter := w.settle.sent()[0]
	if err := worker.DeadLetterMessage(context.Background(), "m1", letter); err != nil {
		t.Fatal(err)
	}
	logged, errs := console.log.String(), console.errors.String()
	for _, want := range []string{`"outcome":"outcome_unknown","key":"lost"`, `"outcome":"dead_letter"`} {
		if !strings.Contains(errs, want) || strings.Contains(logged, want) {
			t.Errorf("%s: at error level %v, at log level %v; want error level only", want, strings.Contains(errs, want), strings.Contains(logged, want))
		}
	}
	if want := `"outcome":"created","key":"placed"`; !strings.Contains(logged, want) || strings.Contains(errs, want) {
		t.Errorf("the order placed is not at log level only:\nlog: %s\nerror: %s", logged, errs)
	}
}
