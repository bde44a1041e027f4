package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/settlequeue"
	"github.com/edge-orders/edge-orders/workers"
)

const body = `{"symbol":"AAPL","side":"buy","quantity":10}`

// localHost is the host of wrangler dev's URL.
const localHost = "127.0.0.1:8787"

// world is a Worker's environment in memory: KV, the two queues, an OMS
// that answers as scripted, the console, and a clock that moves when told.
type world struct {
	t       *testing.T
	env     app.Env
	vars    map[string]string
	console bytes.Buffer
	settle  queue
	dead    queue

	mu  sync.Mutex
	now time.Time
	// lose has the OMS lose its answers: every call is an unknown outcome.
	lose  bool
	calls int
	// omsTakes is how far each OMS call moves the clock.
	omsTakes time.Duration
	// omsReject has the OMS refuse every order.
	omsReject bool
}

func newWorld(t *testing.T, vars map[string]string) *world {
	w := &world{t: t, vars: map[string]string{"OMS_URL": "https://oms.example/orders"}, now: time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)}
	for k, v := range vars {
		w.vars[k] = v
	}
	// Open unless the test gives tokens or decides, as make dev and the
	// end-to-end tests do: never inferred.
	if _, ok := w.vars["API_TOKENS"]; !ok {
		if _, ok := w.vars["OPEN_ACCESS"]; !ok {
			w.vars["OPEN_ACCESS"] = "true"
		}
	}
	mem := kv.NewMemoryNamespace()
	mem.Now = w.clock
	w.env = app.Env{
		Var:         func(name string) (string, bool) { v, ok := w.vars[name]; return v, ok },
		Console:     &w.console,
		KV:          mem,
		Fetch:       w.oms,
		SettleQueue: &w.settle,
		DeadLetter:  &w.dead,
		Now:         w.clock,
	}
	return w
}

func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

// oms answers the gateway's POST: accepted, naming the order, unless
// answers are lost.
func (w *world) oms(_ context.Context, r *workers.OutgoingRequest) (*workers.OutgoingResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	w.now = w.now.Add(w.omsTakes)
	if w.lose {
		return nil, errors.New("connection reset")
	}
	var sent struct {
		OrderID string `json:"orderId"`
	}
	if err := json.Unmarshal(r.Body, &sent); err != nil {
		return &workers.OutgoingResponse{Status: 400}, nil
	}
	if w.omsReject {
		return &workers.OutgoingResponse{Status: 422, Body: []byte(`{"orderId":"` + sent.OrderID + `","status":"rejected","reason":"halted"}`)}, nil
	}
	return &workers.OutgoingResponse{Status: 201, Body: []byte(`{"orderId":"` + sent.OrderID + `","status":"accepted"}`)}, nil
}

// post submits body under key to the Worker.
func (w *world) post(h workers.Handler, key string) *workers.Response {
	header := http.Header{}
	header.Set("Idempotency-Key", key)
	header.Set("Content-Type", "application/json")
	return h.ServeWorker(context.Background(), &workers.Request{Host: localHost, Method: "POST", Header: header, Body: workers.ReaderBody(strings.NewReader(body))})
}

// lines are the console's log lines with outcome.
func (w *world) lines(outcome string) []map[string]any {
	var got []map[string]any
	for _, raw := range strings.Split(strings.TrimSpace(w.console.String()), "\n") {
		var line map[string]any
		if json.Unmarshal([]byte(raw), &line) == nil && line["outcome"] == outcome {
			got = append(got, line)
		}
	}
	return got
}

// queue is a settle queue that keeps what is sent to it.
type queue struct {
	mu     sync.Mutex
	bodies [][]byte
	delays []time.Duration
	err    error
}

func (q *queue) Send(_ context.Context, body []byte, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	q.bodies, q.delays = append(q.bodies, body), append(q.delays, delay)
	return nil
}

func (q *queue) sent() [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([][]byte(nil), q.bodies...)
}

// TestAMisconfiguredWorkerAnswers500AndQuotesNoSecret: a setting that
// cannot work is every request's 500 misconfigured, naming the setting,
// and no secret in it reaches the answer or the log.
func TestAMisconfiguredWorkerAnswers500AndQuotesNoSecret(t *testing.T) {
	const secret = "pa55w0rd-7c1e"
	tests := []struct {
		name   string
		vars   map[string]string
		unbind func(*app.Env)
		want   string // what the detail names
	}{
		{"an OMS_URL with a password, mistyped", map[string]string{"OMS_URL": "htps://desk:" + secret + "@oms.example"}, nil, "OMS_URL"},
		{"an OMS_TOKEN that would split its header", map[string]string{"OMS_TOKEN": secret + "\nX-Injected: 1"}, nil, "OMS_TOKEN"},
		{"a client token too short", map[string]string{"API_TOKENS": "desk-a:" + secret}, nil, "API_TOKENS"},
		{"KV mode without its namespace", nil, func(e *app.Env) { e.KV = nil }, app.KVBinding},
		{"ledger mode without its Durable Object", map[string]string{"STORAGE": "ledger"}, nil, app.LedgerBinding},
		// Each kind of value that cannot work: end to end, test/modes_test.go
		// shows one a mode through wrangler's vars.
		{"a TTL under KV's 60 s", map[string]string{"RESULT_TTL_SECONDS": "30"}, nil, "RESULT_TTL_SECONDS"},
		{"a TTL that is no number", map[string]string{"PENDING_TTL_SECONDS": "soon"}, nil, "PENDING_TTL_SECONDS"},
		{"a storage that does not exist", map[string]string{"STORAGE": "redis"}, nil, "STORAGE"},
		{"no ledger shards", map[string]string{"STORAGE": "ledger", "LEDGER_SHARDS": "0"}, nil, "LEDGER_SHARDS"},
		{"a fallback date that is no date", map[string]string{"STORAGE": "ledger", "KV_FALLBACK_UNTIL": "tomorrow"}, nil, "KV_FALLBACK_UNTIL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.vars)
			if tc.unbind != nil {
				tc.unbind(&w.env)
			}
			worker := app.New(w.env)
			resp := w.post(worker.Handler, "k")
			if resp.Status != 500 || !bytes.Contains(resp.Body, []byte("misconfigured")) || !bytes.Contains(resp.Body, []byte(tc.want)) {
				t.Fatalf("answer = %d %s; want a 500 misconfigured naming %s", resp.Status, resp.Body, tc.want)
			}
			if bytes.Contains(resp.Body, []byte(secret)) || strings.Contains(w.console.String(), secret) {
				t.Errorf("the secret reached the answer %s or the log %s", resp.Body, w.console.String())
			}
			if worker.Service != nil || worker.Settler(nil) != nil || worker.Sweep(context.Background()) != nil {
				t.Errorf("a misconfigured Worker settles: it must settle nothing")
			}
			if w.calls != 0 {
				t.Errorf("the OMS was called %d times, want none", w.calls)
			}
		})
	}
}

// TestAnUnknownOutcomeIsSettledThroughTheQueue: the settle message's round
// trip. An order whose answer is lost sends one message, due after the
// first backoff; handed back, it settles the key, and the client's retry
// replays the receipt without calling the OMS.
func TestAnUnknownOutcomeIsSettledThroughTheQueue(t *testing.T) {
	w := newWorld(t, nil)
	worker := app.New(w.env)
	w.lose = true
	if resp := w.post(worker.Handler, "k"); resp.Status != 503 || !bytes.Contains(resp.Body, []byte("outcome_unknown")) {
		t.Fatalf("answer = %d %s; want 503 outcome_unknown", resp.Status, resp.Body)
	}
	sent := w.settle.sent()
	if len(sent) != 1 || w.settle.delays[0] != time.Second {
		t.Fatalf("settle messages %q (delays %v), want one, due in 1s", sent, w.settle.delays)
	}
	w.lose = false
	w.advance(time.Second)
	if err := worker.SettleMessage(context.Background(), sent[0]); err != nil {
		t.Fatalf("SettleMessage = %v", err)
	}
	calls := w.calls
	if resp := w.post(worker.Handler, "k"); resp.Status != 200 {
		t.Fatalf("the retry = %d %s; want 200, the settled receipt", resp.Status, resp.Body)
	}
	if w.calls != calls {
		t.Errorf("the retry called the OMS: %d calls, want %d", w.calls, calls)
	}
	if n := len(w.settle.sent()); n != 1 {
		t.Errorf("settle messages = %d, want 1: a settled key sends no more", n)
	}
}

// TestAnUnresolvedOrderIsLoggedAsAnAlertAndDeadLettered: once the settler
// gives up, one order_unresolved line says so, with the key, its client,
// the order id and the attempts, marked for an alert; the key goes to
// the dead-letter queue.
func TestAnUnresolvedOrderIsLoggedAsAnAlertAndDeadLettered(t *testing.T) {
	w := newWorld(t, map[string]string{"SETTLE_MAX_AGE_SECONDS": "60", "API_TOKENS": "desk-a:0123456789abcdef"})
	worker := app.New(w.env)
	w.lose = true
	header := http.Header{}
	header.Set("Idempotency-Key", "k")
	header.Set("Authorization", "Bearer 0123456789abcdef")
	resp := worker.Handler.ServeWorker(context.Background(), &workers.Request{Host: localHost, Method: "POST", Header: header, Body: workers.ReaderBody(strings.NewReader(body))})
	if resp.Status != 503 {
		t.Fatalf("answer = %d %s; want 503", resp.Status, resp.Body)
	}
	w.advance(time.Minute)
	if err := worker.SettleMessage(context.Background(), w.settle.sent()[0]); err != nil {
		t.Fatalf("SettleMessage = %v", err)
	}
	// The last call failed; over KV, whose reads lag, the give-up is
	// checked once they have caught up, and only then reported.
	if lines := w.lines("order_unresolved"); len(lines) != 0 {
		t.Fatalf("order_unresolved lines after the last call = %v, want none until the give-up's check", lines)
	}
	sent := w.settle.sent()
	if len(sent) != 2 || w.settle.delays[1] < 2*kv.ReadsLag {
		t.Fatalf("settle messages %q (delays %v), want a second, for the give-up's check, %v or more later", sent, w.settle.delays, 2*kv.ReadsLag)
	}
	w.advance(w.settle.delays[1])
	if err := worker.SettleMessage(context.Background(), sent[1]); err != nil {
		t.Fatalf("SettleMessage = %v", err)
	}
	lines := w.lines("order_unresolved")
	if len(lines) != 1 {
		t.Fatalf("order_unresolved lines = %v, want 1", lines)
	}
	l := lines[0]
	if l["client"] != "desk-a" || l["key"] != "k" || l["orderId"] == "" || l["orderId"] == nil || l["attempts"] != 3.0 || l["level"] != "error" {
		t.Errorf("order_unresolved line = %v; want client desk-a, key k, its order id, 3 attempts, level error", l)
	}
	dead := w.dead.sent()
	if key, err := settlequeue.ParseMessage(dead[0]); len(dead) != 1 || err != nil || key.Client != "desk-a" || key.ID != "k" {
		t.Errorf("dead letters %q, want one naming desk-a's k", dead)
	}
}

// TestAMessageThatIsNoSettleMessageIsDroppedAndLogged: it is acknowledged,
// never retried, and one settle_message_dropped line says so.
func TestAMessageThatIsNoSettleMessageIsDroppedAndLogged(t *testing.T) {
	w := newWorld(t, nil)
	worker := app.New(w.env)
	if err := worker.SettleMessage(context.Background(), []byte(`{"hello":"world"}`)); err != nil {
		t.Fatalf("SettleMessage = %v, want nil: acknowledged", err)
	}
	if lines := w.lines("settle_message_dropped"); len(lines) != 1 || lines[0]["error"] == nil {
		t.Errorf("settle_message_dropped lines = %v, want one with its error", lines)
	}
}

// TestTheSweepSettlesAKeyWhoseMessageWasLost: a message that was never
// sent leaves the key to the Cron Trigger's sweep, which settles it once
// it is overdue past the grace, and logs one settle_sweep line.
func TestTheSweepSettlesAKeyWhoseMessageWasLost(t *testing.T) {
	w := newWorld(t, nil)
	worker := app.New(w.env)
	w.lose, w.settle.err = true, errors.New("queue unavailable")
	if resp := w.post(worker.Handler, "k"); resp.Status != 503 {
		t.Fatalf("answer = %d %s; want 503", resp.Status, resp.Body)
	}
	w.lose, w.settle.err = false, nil
	w.advance(2 * time.Minute) // past the backoff and the grace
	if err := worker.Sweep(context.Background()); err != nil {
		t.Fatalf("Sweep = %v", err)
	}
	if lines := w.lines("settle_sweep"); len(lines) != 1 || lines[0]["attempts"] != 1.0 {
		t.Errorf("settle_sweep lines = %v, want one, for 1 key", lines)
	}
	calls := w.calls
	if resp := w.post(worker.Handler, "k"); resp.Status != 200 || w.calls != calls {
		t.Errorf("the retry = %d %s with %d more OMS calls; want 200, the swept receipt, and none", resp.Status, resp.Body, w.calls-calls)
	}
}

// TestAnOpenWorkerSaysSo: with no API_TOKENS the Worker accepts orders
// from anyone, and one auth_disabled line says so when it is built.
func TestAnOpenWorkerSaysSo(t *testing.T) {
	w := newWorld(t, nil)
	app.New(w.env)
	if lines := w.lines("auth_disabled"); len(lines) != 1 {
		t.Errorf("auth_disabled lines = %v, want 1", lines)
	}
}

// TestConfigTakesTheTTLsKVTakes: config's shortest TTL is KV's, so that no
// configuration it accepts makes every KV write fail.
func TestConfigTakesTheTTLsKVTakes(t *testing.T) {
	if config.MinTTL != kv.MinTTL {
		t.Fatalf("config.MinTTL = %v, kv.MinTTL = %v; want them equal", config.MinTTL, kv.MinTTL)
	}
}

// TestPolicyPublishesTheVars checks that the policy the Worker publishes
// states the vars it was given, through config, the Service and the
// handler.
func TestPolicyPublishesTheVars(t *testing.T) {
	for _, tc := range []struct {
		name  string
		noOMS bool
		vars  map[string]string
		want  []string
	}{
		{"with an OMS", false, map[string]string{config.ResultTTLVar: "7200", config.SettleMaxAgeVar: "3600", config.WaitVar: "500"},
			[]string{"kept 7200 seconds (2 hours, `RESULT_TTL_SECONDS`)", "plus 3600 seconds (1 hour, `SETTLE_MAX_AGE_SECONDS`)", "waits up to 500 ms"}},
		{"without one", true, map[string]string{config.ResultTTLVar: "600", config.PendingTTLVar: "90"},
			[]string{"kept 600 seconds (10 minutes, `RESULT_TTL_SECONDS`)", "`Retry-After: 90`", "no order-management system"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.vars)
			if tc.noOMS {
				delete(w.vars, "OMS_URL")
			}
			worker := app.New(w.env)
			if worker.Service == nil {
				t.Fatalf("misconfigured: %s", w.console.String())
			}
			resp := worker.Handler.ServeWorker(context.Background(), &workers.Request{Host: localHost, Method: "GET", Path: "/idempotency", Header: http.Header{}, Body: workers.ReaderBody(nil)})
			if resp.Status != 200 {
				t.Fatalf("GET /idempotency = %d %s, want 200", resp.Status, resp.Body)
			}
			for _, s := range tc.want {
				if !bytes.Contains(resp.Body, []byte(s)) {
					t.Errorf("the policy does not say %q:\n%s", s, resp.Body)
				}
			}
		})
	}
}

// migrateToLedger is the Worker deployed in ledger mode over w's KV
// namespace, its fallback for two days (KV_FALLBACK_UNTIL), with its
// ledger.
func (w *world) migrateToLedger() (*app.Worker, *ledger.MemoryStore) {
	w.vars["STORAGE"] = "ledger"
	w.vars["KV_FALLBACK_UNTIL"] = w.clock().Add(48 * time.Hour).Format(time.RFC3339)
	store := ledger.NewMemoryStore()
	store.Now = w.clock
	w.env.Ledger = func(int) intake.Store { return store }
	return app.New(w.env), store
}

// TestLedgerModeAdoptsTheKeysKVModeLeftOpen: during a migration
// (KV_FALLBACK_UNTIL), ledger mode's Cron sweep adopts a key the KV-mode
// Worker left open, whose client never came back: the ledger holds it
// open with KV's order id, due, and one line says how many were adopted.
func TestLedgerModeAdoptsTheKeysKVModeLeftOpen(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, nil)
	before := app.New(w.env)
	w.lose = true
	if resp := w.post(before.Handler, "k"); resp.Status != 503 {
		t.Fatalf("KV mode's answer = %d %s; want 503, the outcome unknown", resp.Status, resp.Body)
	}
	w.lose = false
	after, store := w.migrateToLedger()
	w.advance(10 * time.Minute) // past the settler's due time and the sweep's grace
	if err := after.Sweep(ctx); err != nil {
		t.Fatalf("Sweep = %v", err)
	}
	rec, err := store.Lookup(ctx, intake.Key{ID: "k"})
	if err != nil || rec.State != intake.Open || rec.OrderID == "" {
		t.Fatalf("the ledger's record = %+v, %v; want the key open, with KV's order id", rec, err)
	}
	if keys := store.DueKeys(10); len(keys) != 1 {
		t.Errorf("due keys = %v, want the adopted key", keys)
	}
	if lines := w.lines("kv_adopted"); len(lines) != 1 || lines[0]["key"] != "k" {
		t.Errorf("kv_adopted lines = %v, want one, naming k", lines)
	}
}

// TestTheAdoptionSweepReachesEveryKeyKVLeftOpenAcrossRuns: an OMS outage
// left more keys open in KV than one Cron run adopts (SweepLimit). Each
// run goes on past the keys the last one handled, so every key is in the
// ledger after N/SweepLimit runs plus one, and each adoption is logged
// with its key: none is stranded, none silently.
func TestTheAdoptionSweepReachesEveryKeyKVLeftOpenAcrossRuns(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, nil)
	before := app.New(w.env)
	w.lose = true
	const n = app.SweepLimit + 20
	for i := range n {
		if resp := w.post(before.Handler, fmt.Sprintf("k%03d", i)); resp.Status != 503 {
			t.Fatalf("KV mode's answer = %d %s; want 503, the outcome unknown", resp.Status, resp.Body)
		}
	}
	after, store := w.migrateToLedger()
	for range n/app.SweepLimit + 1 {
		w.advance(5 * time.Minute)
		if err := after.Sweep(ctx); err != nil {
			t.Fatalf("Sweep = %v", err)
		}
	}
	logged := make(map[string]bool)
	for _, l := range w.lines("kv_adopted") {
		logged[fmt.Sprint(l["key"])] = true
	}
	for i := range n {
		id := fmt.Sprintf("k%03d", i)
		rec, err := store.Lookup(ctx, intake.Key{ID: id})
		if err != nil || rec.State != intake.Open || !logged[id] {
			t.Errorf("%s: the ledger's record = %v, %v, logged %v; want it adopted, open, and logged", id, rec.State, err, logged[id])
		}
	}
}

// TestKVReadLagSetsTheGiveUpsCheck: KV_READ_LAG_SECONDS is what KV mode's
// settler allows for: its give-up is checked twice that long after the
// last call, here 10 s rather than Cloudflare's two minutes.
func TestKVReadLagSetsTheGiveUpsCheck(t *testing.T) {
	w := newWorld(t, map[string]string{"SETTLE_MAX_AGE_SECONDS": "60", "KV_READ_LAG_SECONDS": "5"})
	worker := app.New(w.env)
	w.lose = true
	if resp := w.post(worker.Handler, "k"); resp.Status != 503 {
		t.Fatalf("answer = %d %s; want 503", resp.Status, resp.Body)
	}
	w.advance(time.Minute)
	if err := worker.SettleMessage(context.Background(), w.settle.sent()[0]); err != nil {
		t.Fatalf("SettleMessage = %v", err)
	}
	if delays := w.settle.delays; len(delays) != 2 || delays[1] != 10*time.Second {
		t.Errorf("settle message delays %v, want the give-up's check 10 s after the last call", delays)
	}
}
