//go:build !js

package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// settleWithin bounds the wait for the settler to store a final outcome
// after a gateway call without an answer: its first attempt comes a second
// later, through the local queue (whose batches wait up to a second) or
// the ledger's alarm.
const settleWithin = 20 * time.Second

// waitSettled polls a lookup of key, which never calls the gateway, until
// it is final (200 or 422), and returns it; it fails t after within.
func waitSettled(t *testing.T, w *target, key string, within time.Duration) response {
	t.Helper()
	got, err := settled(t, w, key, within)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// settled is waitSettled for any goroutine: it returns an error instead.
func settled(t *testing.T, w *target, key string, within time.Duration) (response, error) {
	deadline := time.Now().Add(within)
	for {
		got := w.lookup(t, key)
		if got.status == 200 || got.status == 422 {
			return got, nil
		}
		if time.Now().After(deadline) {
			return got, fmt.Errorf("no final outcome %v after the unknown one: lookup = %d %s", within, got.status, got.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantUnknown fails t unless got is the 503 outcome_unknown that tells the
// client the settler has the order: its order id, and the attempts so far.
func wantUnknown(t *testing.T, got response) {
	t.Helper()
	wantProblem(t, got, 503, "outcome_unknown")
	if !strings.Contains(got.body, `"orderId":"`) || !strings.Contains(got.body, `"attempts":`) {
		t.Fatalf("outcome_unknown without the order id and attempts: %s", got.body)
	}
}

// TestSettlerPlacesAnOrderWhoseAnswerWasLost accepts the order and drops
// the connection on the first call, and the client never comes back:
// within seconds the key holds the receipt, and the OMS saw one order id.
func TestSettlerPlacesAnOrderWhoseAnswerWasLost(t *testing.T) {
	shareWorkers(t)
	forEachGatewayMode(t, func(t *testing.T, g *gatewayWorkers, w *target) {
		symbol, key := newSymbol(t), newKey(t)
		g.oms.script(symbol, drop)
		wantUnknown(t, w.post(t, key, gatewayOrder(symbol)))
		stored := waitSettled(t, w, key, settleWithin)
		if stored.status != 200 {
			t.Fatalf("settled lookup = %d %s, want the 200 receipt", stored.status, stored.body)
		}
		r := decodeReceipt(t, stored.body)
		wantOneOrderID(t, g.oms, symbol, r)
		if !g.oms.accepted(r.OrderID) {
			t.Fatalf("the receipt names %s, which the OMS never accepted", r.OrderID)
		}
		if n := len(g.oms.orderIDs(symbol)); n != 2 {
			t.Fatalf("gateway calls = %d, want 2: the client's and the settler's", n)
		}
	})
}

// TestSettlerBacksOff answers 503 to the first three calls: the settler
// keeps calling, each call at least the backoff after the one before
// (1 s, then 2 s), and settles on the fourth.
func TestSettlerBacksOff(t *testing.T) {
	shareWorkers(t)
	forEachGatewayMode(t, func(t *testing.T, g *gatewayWorkers, w *target) {
		symbol, key := newSymbol(t), newKey(t)
		g.oms.script(symbol, failBefore, failBefore, failBefore)
		wantUnknown(t, w.post(t, key, gatewayOrder(symbol)))
		stored := waitSettled(t, w, key, settleWithin+10*time.Second)
		if stored.status != 200 {
			t.Fatalf("settled lookup = %d %s, want the 200 receipt", stored.status, stored.body)
		}
		wantOneOrderID(t, g.oms, symbol, decodeReceipt(t, stored.body))
		at := g.oms.callTimes(symbol)
		if len(at) != 4 {
			t.Fatalf("gateway calls = %d, want 4: three refused, then the one that settled", len(at))
		}
		// A little slack for the clocks of two processes.
		const slack = 50 * time.Millisecond
		for i := 1; i < len(at); i++ {
			if gap, backoff := at[i].Sub(at[i-1]), intake.SettleBackoff(i); gap < backoff-slack {
				t.Errorf("call %d came %v after call %d, want at least the backoff %v", i+1, gap, i, backoff)
			}
		}
	})
}

// TestSettlerStoresARejection loses the first call's answer and rejects
// the settler's call: the rejection is the key's outcome, replayed to the
// client that comes back, and never sent again.
func TestSettlerStoresARejection(t *testing.T) {
	shareWorkers(t)
	forEachGatewayMode(t, func(t *testing.T, g *gatewayWorkers, w *target) {
		symbol, key := newSymbol(t), newKey(t)
		g.oms.script(symbol, failBefore, reject)
		wantUnknown(t, w.post(t, key, gatewayOrder(symbol)))
		stored := waitSettled(t, w, key, settleWithin)
		p := wantProblem(t, stored, 422, "order_rejected")
		if p.Detail != rejectReason {
			t.Errorf("detail = %q, want the OMS's reason %q", p.Detail, rejectReason)
		}
		again := w.post(t, key, gatewayOrder(symbol))
		if again.status != 422 || again.body != stored.body || again.header.Get("Idempotent-Replay") != "true" {
			t.Fatalf("the client's retry = %d %s, want the stored rejection %s, replayed", again.status, again.body, stored.body)
		}
		if n := len(g.oms.orderIDs(symbol)); n != 2 {
			t.Fatalf("gateway calls = %d, want 2: the refused call and the rejected one, never a third", n)
		}
	})
}

// TestClientRetryRacesTheSettler holds the settler's call at the OMS while
// the client retries: the retry never reaches the OMS at the same time, and
// the key ends with one order id. The retry waits for the settler's claim
// (IN_PROGRESS_WAIT_MS), which ends when its call times out
// (OMS_TIMEOUT_MS, shorter): then the retry may settle the key itself.
func TestClientRetryRacesTheSettler(t *testing.T) {
	shareWorkers(t)
	forEachGatewayMode(t, func(t *testing.T, g *gatewayWorkers, w *target) {
		symbol, key := newSymbol(t), newKey(t)
		g.oms.script(symbol, failBefore, gated)
		wantUnknown(t, w.post(t, key, gatewayOrder(symbol)))
		g.oms.waitArrival(t, symbol) // the settler's call, held
		retry := w.post(t, key, gatewayOrder(symbol))
		if retry.status != 409 && retry.status != 201 {
			t.Errorf("the retry while the settler holds the key = %d %s, want 409 in_progress, or 201 once the settler's call timed out", retry.status, retry.body)
		}
		g.oms.open(symbol)
		stored := waitSettled(t, w, key, settleWithin)
		if stored.status != 200 {
			t.Fatalf("settled lookup = %d %s, want the 200 receipt", stored.status, stored.body)
		}
		wantOneOrderID(t, g.oms, symbol, decodeReceipt(t, stored.body))
		if n := g.oms.mostAtOnce(symbol); n != 1 {
			t.Fatalf("the OMS had %d calls for the key at once, want 1", n)
		}
	})
}

// TestKVSettleLostMessageIsSwept loses the settle queue's message, as a
// failed send or an isolate that died before it would: the Cron Trigger's
// sweep of overdue keys settles the key instead.
func TestKVSettleLostMessageIsSwept(t *testing.T) {
	shareWorkers(t)
	g := startGateway(t)
	w := g.kv
	symbol, key := newSymbol(t), newKey(t)
	g.oms.script(symbol, drop)
	w.setting(t, `{"dropSettleSends": true}`)
	before := w.wrappedStats(t)
	wantUnknown(t, w.post(t, key, gatewayOrder(symbol)))
	answered := time.Now()
	w.setting(t, `{"dropSettleSends": false}`)
	if after := w.wrappedStats(t); after.SettleSends != before.SettleSends+1 {
		t.Fatalf("settle sends %d → %d, want the one that was lost", before.SettleSends, after.SettleSends)
	}
	// The key is due a second after the unknown outcome, which came before
	// the answer, and the sweep's grace is a second here
	// (SETTLE_SWEEP_GRACE_SECONDS): 2.5 s after the answer it is overdue
	// past the grace. Until then nothing settles it, as its message was
	// lost: what passes here is the time the test is about.
	for overdue := answered.Add(2500 * time.Millisecond); time.Now().Before(overdue); time.Sleep(250 * time.Millisecond) {
		if got := w.lookup(t, key); got.status != 503 {
			t.Fatalf("before the sweep: lookup = %d %s, want still unknown (the message was lost)", got.status, got.body)
		}
	}
	w.runCron(t)
	stored := waitSettled(t, w, key, settleWithin)
	if stored.status != 200 {
		t.Fatalf("settled lookup = %d %s, want the 200 receipt", stored.status, stored.body)
	}
	wantOneOrderID(t, g.oms, symbol, decodeReceipt(t, stored.body))
}

// TestLedgerSettlesAfterARestart stops the Worker's process while a key's
// outcome is unknown and starts it again on the same state: the ledger's
// alarm settles the key with no client involved.
func TestLedgerSettlesAfterARestart(t *testing.T) {
	requireWorker(t)
	t.Parallel() // Workers of its own, and the fake OMS by its own symbol
	g := startGateway(t)
	state, err := os.MkdirTemp("", "edge-orders-e2e-restart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	opts := wrappedOptions(wranglerdev.Options{Vars: g.vars, StateDir: state})
	first := startWorker(t, "ledger", opts)
	symbol, key := newSymbol(t), newKey(t)
	// The settler's first call, a second later, is refused too, so the key
	// is still unknown when the process stops.
	g.oms.script(symbol, drop, failBefore, gated)
	wantUnknown(t, first.post(t, key, gatewayOrder(symbol)))
	first.srv.Stop()
	g.oms.open(symbol)
	second := startWorker(t, "ledger", opts)
	// Nothing calls the Worker but lookups, which never reach the gateway.
	stored := waitSettled(t, second, key, settleWithin+15*time.Second)
	if stored.status != 200 {
		t.Fatalf("settled lookup = %d %s, want the 200 receipt", stored.status, stored.body)
	}
	wantOneOrderID(t, g.oms, symbol, decodeReceipt(t, stored.body))
}

// setting posts settings to the wrapped entry (test/wrapped/entry.mjs).
func (w *target) setting(t *testing.T, settings string) {
	t.Helper()
	resp, err := httpClient.Post(w.URL()+"/__wrapped/settings", "application/json", strings.NewReader(settings))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("settings %s: %s", settings, resp.Status)
	}
}

// runCron runs the Worker's Cron Trigger once (wrangler dev
// --test-scheduled).
func (w *target) runCron(t *testing.T) {
	t.Helper()
	resp, err := httpClient.Get(w.URL() + "/__scheduled?cron=" + strings.ReplaceAll("*/5 * * * *", " ", "+"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/__scheduled: %s", resp.Status)
	}
}
