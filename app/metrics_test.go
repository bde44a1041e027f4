package app_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/metrics"
	"github.com/edge-orders/edge-orders/workers"
)

// omsTime is how long each OMS call takes in these tests: the clock moves
// only then.
const omsTime = 30 * time.Millisecond

// dataset is a METRICS binding that keeps its points, as the Worker wrote
// them.
type dataset struct {
	mu     sync.Mutex
	points [][3]any
	err    error
}

func (d *dataset) WriteDataPoint(indexes, blobs []string, doubles []float64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.points = append(d.points, [3]any{indexes, blobs, doubles})
	return d.err
}

// taken returns the points written since the last call.
func (d *dataset) taken() [][3]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.points
	d.points = nil
	return p
}

// point is p as the dataset gets it.
func point(p metrics.Point) [3]any {
	indexes, blobs, doubles := p.Fields()
	return [3]any{indexes, blobs, doubles}
}

// manyNamespace is the world's KV as the binding reads it: several keys
// in one round trip. It records whether each call's context carries a
// metrics.Tally.
type manyNamespace struct {
	*kv.MemoryNamespace
	mu      sync.Mutex
	tallied []bool
}

func (n *manyNamespace) record(ctx context.Context) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tallied = append(n.tallied, metrics.TallyFrom(ctx) != nil)
}

func (n *manyNamespace) Get(ctx context.Context, key string) (kv.Entry, error) {
	n.record(ctx)
	return n.MemoryNamespace.Get(ctx, key)
}

func (n *manyNamespace) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	n.record(ctx)
	return n.MemoryNamespace.Put(ctx, key, e, opts)
}

func (n *manyNamespace) GetMany(ctx context.Context, keys ...string) ([]*kv.Entry, error) {
	n.record(ctx)
	out := make([]*kv.Entry, len(keys))
	for i, key := range keys {
		e, err := n.MemoryNamespace.Get(ctx, key)
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			out[i] = &e
		}
	}
	return out, nil
}

// meteredWorld is a world whose METRICS is bound, whose KV reads several
// keys at once and whose OMS calls take omsTime, with the work a request
// hands to Defer run after its answer, as workers.WaitUntil does. Ledger
// mode's Durable Object is a ledger.MemoryStore.
type meteredWorld struct {
	*world
	metrics *dataset
	kv      *manyNamespace
	ledger  *ledger.MemoryStore

	mu    sync.Mutex
	later []func()
}

func newMeteredWorld(t *testing.T, vars map[string]string) *meteredWorld {
	w := &meteredWorld{world: newWorld(t, vars), metrics: &dataset{}}
	w.omsTakes = omsTime
	w.kv = &manyNamespace{MemoryNamespace: w.env.KV.(*kv.MemoryNamespace)}
	w.ledger = ledger.NewMemoryStore()
	w.ledger.Now = w.clock
	w.env.KV, w.env.Metrics = w.kv, w.metrics
	w.env.Ledger = func(int) intake.Store { return w.ledger }
	w.env.Defer = func(ctx context.Context, task func(context.Context)) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.later = append(w.later, func() { task(context.WithoutCancel(ctx)) })
	}
	return w
}

// serve serves one request, with header as name, value pairs, then the
// work it handed to Defer.
func (w *meteredWorld) serve(h workers.Handler, method, key string, header ...string) *workers.Response {
	head := http.Header{}
	head.Set("Idempotency-Key", key)
	for i := 0; i+1 < len(header); i += 2 {
		head.Set(header[i], header[i+1])
	}
	resp := h.ServeWorker(context.Background(), &workers.Request{Host: localHost, Method: method, Header: head, Body: workers.ReaderBody(strings.NewReader(body))})
	w.mu.Lock()
	later := w.later
	w.later = nil
	w.mu.Unlock()
	for _, task := range later {
		task()
	}
	return resp
}

// leaveUnknown serves an order under key whose OMS answer is lost, forgets
// its data point, and moves the clock a second on: the key is due for the
// settler.
func (w *meteredWorld) leaveUnknown(worker *app.Worker, key string) {
	w.lose = true
	w.serve(worker.Handler, "POST", key)
	w.metrics.taken()
	w.lose = false
	w.advance(time.Second)
}

// wantPoints fails t unless the points written since the last call are
// want, in order.
func (w *meteredWorld) wantPoints(t *testing.T, what string, want ...metrics.Point) {
	t.Helper()
	got := w.metrics.taken()
	if len(got) != len(want) {
		t.Fatalf("%s: %d data points %v, want %d", what, len(got), got, len(want))
	}
	for i := range want {
		if g, w := got[i], point(want[i]); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: data point %d\n got %v\nwant %v (%+v)", what, i+1, g, w, want[i])
		}
	}
}

// TestDataPointsOfAKeyFromItsOrderToItsSettling follows one key in each
// mode, with METRICS bound: its order, whose OMS answer is lost; the
// settler's attempt that settles it (the settle queue's message in KV
// mode, the Durable Object's alarm in ledger mode); the client's retry,
// a replay; and a lookup. Each writes its exact data point: the storage
// round trips are the binding's (KV reads a key's receipt and claim in
// one), the times are the OMS's here, and the settled key's point says how
// long it took from the order's acceptance.
func TestDataPointsOfAKeyFromItsOrderToItsSettling(t *testing.T) {
	for _, c := range []struct {
		mode string
		vars map[string]string
		// the storage round trips of: a new order whose answer is lost
		// (KV: the receipt and claim read at once, the claim, the key
		// left open; ledger: the claim, its release), the settle attempt
		// (KV: the read, the settler's claim, the receipt; ledger: the
		// claim, the commit), the retry (none for KV, whose instance
		// settled the key and keeps its receipt; one for the ledger, whose
		// alarm settles in another instance), a lookup (none: it is in
		// memory).
		unknown, settle, retry int
		// settleOnce runs the settler's attempt.
		settleOnce func(t *testing.T, w *meteredWorld, worker *app.Worker)
	}{
		{"kv", nil, 3, 3, 0, func(t *testing.T, w *meteredWorld, worker *app.Worker) {
			if err := worker.SettleMessage(context.Background(), w.settle.sent()[0]); err != nil {
				t.Fatalf("SettleMessage = %v", err)
			}
		}},
		{"ledger", map[string]string{"STORAGE": "ledger"}, 2, 2, 1, func(t *testing.T, w *meteredWorld, worker *app.Worker) {
			keys := w.ledger.DueKeys(10)
			if len(keys) != 1 {
				t.Fatalf("keys due = %v, want one", keys)
			}
			if st, err := worker.Settler(w.ledger).Settle(context.Background(), keys[0]); err != nil || !st.Final {
				t.Fatalf("the alarm's Settle = %+v, %v; want the key settled", st, err)
			}
		}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			vars := map[string]string{"API_TOKENS": "desk-a:0123456789abcdef"}
			for k, v := range c.vars {
				vars[k] = v
			}
			w := newMeteredWorld(t, vars)
			worker := app.New(w.env)
			send := func(method, key string) *workers.Response {
				return w.serve(worker.Handler, method, key, "Authorization", "Bearer 0123456789abcdef")
			}
			w.lose = true
			if resp := send("POST", "k"); resp.Status != 503 {
				t.Fatalf("the order = %d %s, want 503", resp.Status, resp.Body)
			}
			w.wantPoints(t, "the order whose answer is lost", metrics.Point{Client: "desk-a", Outcome: metrics.Unknown, Mode: c.mode, Status: 503, Event: metrics.Submit,
				Took: omsTime, Gateway: omsTime, GatewayCalls: 1, StorageCalls: c.unknown, Attempts: 1})

			w.lose = false
			w.advance(time.Second)
			c.settleOnce(t, w, worker)
			w.wantPoints(t, "the settler's attempt", metrics.Point{Client: "desk-a", Outcome: metrics.Settled, Mode: c.mode, Event: metrics.Settle,
				Took: omsTime, Gateway: omsTime, GatewayCalls: 1, StorageCalls: c.settle, Attempts: 1, SettledAfter: omsTime + time.Second + omsTime})

			w.advance(10 * time.Second)
			if resp := send("POST", "k"); resp.Status != 200 {
				t.Fatalf("the retry = %d %s, want 200", resp.Status, resp.Body)
			}
			since := omsTime + time.Second + omsTime + 10*time.Second
			w.wantPoints(t, "the client's retry", metrics.Point{Client: "desk-a", Outcome: metrics.Replay, Mode: c.mode, Status: 200, Event: metrics.Submit,
				StorageCalls: c.retry, SinceAccepted: since})
			if resp := send("GET", "k"); resp.Status != 200 {
				t.Fatalf("the lookup = %d %s, want 200", resp.Status, resp.Body)
			}
			w.wantPoints(t, "the lookup", metrics.Point{Client: "desk-a", Outcome: metrics.Replay, Mode: c.mode, Status: 200, Event: metrics.Lookup,
				SinceAccepted: since})
		})
	}
}

// TestDataPointsOfEverySettleAttempt: each settle attempt writes a point,
// through each of the settler's ways in: KV mode's queue message and its
// Cron sweep, ledger mode's alarm. An attempt whose answer is lost again
// is unknown, with its attempts; one past SETTLE_MAX_AGE_SECONDS that is
// lost too, unresolved; one for a key with nothing to settle says so; a
// storage failure says so; a rejection is the key's final outcome.
func TestDataPointsOfEverySettleAttempt(t *testing.T) {
	ctx := context.Background()
	t.Run("kv: queue message and sweep", func(t *testing.T) {
		w := newMeteredWorld(t, map[string]string{"SETTLE_MAX_AGE_SECONDS": "60"})
		worker := app.New(w.env)
		w.lose = true
		w.serve(worker.Handler, "POST", "k")
		w.metrics.taken()
		w.advance(time.Second)
		if err := worker.SettleMessage(ctx, w.settle.sent()[0]); err != nil {
			t.Fatalf("SettleMessage = %v", err)
		}
		w.wantPoints(t, "an attempt whose answer is lost again", metrics.Point{Outcome: metrics.Unknown, Mode: "kv", Event: metrics.Settle,
			Took: omsTime, Gateway: omsTime, GatewayCalls: 1, StorageCalls: 3, Attempts: 2})
		w.advance(2 * time.Minute) // past the backoff and the sweep's grace
		if err := worker.Sweep(ctx); err != nil {
			t.Fatalf("Sweep = %v", err)
		}
		// The sweep's listing is no attempt's: not counted. Its last call
		// is lost, and the give-up waits for its check (KV's reads lag).
		w.wantPoints(t, "the sweep's attempt past SETTLE_MAX_AGE_SECONDS", metrics.Point{Outcome: metrics.Unknown, Mode: "kv", Event: metrics.Settle,
			Took: omsTime, Gateway: omsTime, GatewayCalls: 1, StorageCalls: 3, Attempts: 3})
		w.advance(4 * time.Minute) // past the check's due time and the sweep's grace
		if err := worker.Sweep(ctx); err != nil {
			t.Fatalf("Sweep = %v", err)
		}
		w.wantPoints(t, "the give-up's check, lost too", metrics.Point{Outcome: metrics.Unresolved, Mode: "kv", Event: metrics.Settle,
			Took: omsTime, Gateway: omsTime, GatewayCalls: 1, StorageCalls: 3, Attempts: 4})
		if err := worker.SettleMessage(ctx, w.settle.sent()[0]); err != nil {
			t.Fatalf("SettleMessage = %v", err)
		}
		w.wantPoints(t, "an attempt on the unresolved key", metrics.Point{Outcome: metrics.NothingToSettle, Mode: "kv", Event: metrics.Settle,
			StorageCalls: 1, Attempts: 4})
	})
	t.Run("ledger: the alarm", func(t *testing.T) {
		w := newMeteredWorld(t, map[string]string{"STORAGE": "ledger"})
		worker := app.New(w.env)
		w.leaveUnknown(worker, "k")
		w.ledger.RoundTrip = func(context.Context, string, func()) error { return errors.New("object overloaded") }
		key := intake.Key{ID: "k"}
		if _, err := worker.Settler(w.ledger).Settle(ctx, key); !errors.Is(err, intake.ErrStorageUnavailable) {
			t.Fatalf("Settle = %v, want a storage failure", err)
		}
		w.wantPoints(t, "a storage failure", metrics.Point{Outcome: metrics.StorageUnavailable, Mode: "ledger", Event: metrics.Settle, StorageCalls: 1})
		w.ledger.RoundTrip = nil
		w.omsReject = true
		if _, err := worker.Settler(w.ledger).Settle(ctx, key); err != nil {
			t.Fatalf("Settle = %v", err)
		}
		w.wantPoints(t, "a rejection", metrics.Point{Outcome: metrics.Rejected, Mode: "ledger", Event: metrics.Settle,
			Took: omsTime, Gateway: omsTime, GatewayCalls: 1, StorageCalls: 2, Attempts: 1, SettledAfter: omsTime + time.Second + omsTime})
	})
}

// TestUnboundMetricsChangeNothing: without METRICS nothing is written and
// nothing counted (no storage call's context carries a Tally), and every
// answer is the one a Worker with METRICS gives.
func TestUnboundMetricsChangeNothing(t *testing.T) {
	bound := newMeteredWorld(t, nil)
	unbound := newMeteredWorld(t, nil)
	unbound.env.Metrics = nil
	workers := []*app.Worker{app.New(bound.env), app.New(unbound.env)}
	for i, w := range []*meteredWorld{bound, unbound} {
		w.lose = true
		w.serve(workers[i].Handler, "POST", "lost")
		w.lose = false
		w.serve(workers[i].Handler, "POST", "k")
	}
	var answers [2][]string
	for i, w := range []*meteredWorld{bound, unbound} {
		for _, r := range []struct{ method, key string }{{"POST", "k"}, {"GET", "k"}, {"GET", "lost"}, {"POST", "lost"}, {"GET", "free"}} {
			resp := w.serve(workers[i].Handler, r.method, r.key)
			answers[i] = append(answers[i], string(resp.Body))
		}
	}
	if strings.Join(answers[0], "\n") != strings.Join(answers[1], "\n") {
		t.Errorf("answers with METRICS\n%s\nwithout\n%s", strings.Join(answers[0], "\n"), strings.Join(answers[1], "\n"))
	}
	if n := len(bound.metrics.taken()); n != 7 {
		t.Errorf("with METRICS, %d data points for 7 requests", n)
	}
	for _, tallied := range unbound.kv.tallied {
		if tallied {
			t.Fatal("without METRICS a KV call's context carries a Tally")
		}
	}
	for _, tallied := range bound.kv.tallied {
		if !tallied {
			t.Fatal("with METRICS a request's KV call's context carries no Tally")
		}
	}
}

// TestARefusedPointIsLoggedOnce: a point the dataset refuses is dropped,
// the answer is unchanged, and the first refusal is logged, once.
func TestARefusedPointIsLoggedOnce(t *testing.T) {
	w := newMeteredWorld(t, nil)
	w.metrics.err = errors.New("writeDataPoint(): too many data points")
	worker := app.New(w.env)
	for range 3 {
		if resp := w.serve(worker.Handler, "POST", "k"); resp.Status != 201 && resp.Status != 200 {
			t.Fatalf("answer = %d %s, want the receipt", resp.Status, resp.Body)
		}
	}
	if lines := w.lines("metrics_write_failed"); len(lines) != 1 || !strings.Contains(lines[0]["error"].(string), "too many data points") {
		t.Errorf("metrics_write_failed lines = %v, want one with the refusal", lines)
	}
}

// TestASettleAttemptThatPanickedIsCountedAsAFailure: a settle attempt
// that panics (standard Go: the alarm's settleAll, or the queue's task,
// recovers it and the key stays due) is counted internal_error, not
// nothing_to_settle, which hid a failing key (found by a review).
func TestASettleAttemptThatPanickedIsCountedAsAFailure(t *testing.T) {
	w := newMeteredWorld(t, map[string]string{"STORAGE": "ledger"})
	worker := app.New(w.env)
	w.leaveUnknown(worker, "k")
	w.env.Fetch = func(context.Context, *workers.OutgoingRequest) (*workers.OutgoingResponse, error) {
		panic("a bug in the gateway")
	}
	panicked := func() (p any) {
		defer func() { p = recover() }()
		app.New(w.env).Settler(w.ledger).Settle(context.Background(), intake.Key{ID: "k"})
		return nil
	}()
	if panicked == nil {
		t.Fatal("the settle attempt did not panic: the test's gateway was not called")
	}
	got := w.metrics.taken()
	if len(got) != 1 {
		t.Fatalf("%d points, want the attempt's one: %v", len(got), got)
	}
	if blobs := got[0][1].([]string); blobs[0] != string(metrics.InternalError) {
		t.Errorf("a settle attempt that panicked wrote blobs %q; want outcome %s", blobs, metrics.InternalError)
	}
}

// TestAnOMSCallUnderAMillisecondIsACall: the Worker's clock moves only at
// I/O, in whole milliseconds, so an OMS call may take 0 ms; its point
// says it called the OMS (gateway_calls), which the latency queries
// select by, where gateway_ms > 0 dropped it (found by a review).
func TestAnOMSCallUnderAMillisecondIsACall(t *testing.T) {
	w := newMeteredWorld(t, nil)
	w.omsTakes = 0
	worker := app.New(w.env)
	if resp := w.serve(worker.Handler, "POST", "fast"); resp.Status != 201 {
		t.Fatalf("POST = %d %s", resp.Status, resp.Body)
	}
	w.serve(worker.Handler, "POST", "fast") // a replay: no call
	got := w.metrics.taken()
	if len(got) != 2 {
		t.Fatalf("%d points, want 2", len(got))
	}
	calls := metrics.DoubleIndex("gateway_calls")
	if first, replay := got[0][2].([]float64), got[1][2].([]float64); first[calls] != 1 || replay[calls] != 0 {
		t.Errorf("gateway_calls = %v for the new order, %v for its replay; want 1 and 0", first[calls], replay[calls])
	}
}
