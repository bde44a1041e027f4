package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/api/apitest"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/workers"
)

// scriptedGateway answers each call with the next of its answers, then
// accepts.
type scriptedGateway struct{ answers []error }

func (g *scriptedGateway) Place(context.Context, intake.Placement) error {
	if len(g.answers) == 0 {
		return nil
	}
	err := g.answers[0]
	g.answers = g.answers[1:]
	return err
}

// TestGatewayAnswers checks what the client gets for each gateway outcome:
// a rejection is a 422 naming the order and the reason, replayed byte for
// byte with Idempotent-Replay; an unknown outcome is a retriable 503 whose
// retry succeeds; the gateway's error text never reaches the client.
func TestGatewayAnswers(t *testing.T) {
	opts := serviceOptions()
	opts.Gateway = &scriptedGateway{answers: []error{
		&intake.Rejection{Reason: "symbol halted"},
		errors.New("oms: no answer: " + secret),
	}}
	var lines []eventlog.Line
	h := httpapi.New(newServiceWith(kv.NewMemoryNamespace(), opts), httpapi.Options{Log: logTo(&lines)})

	rejected := serve(h, request("POST", ptr("r"), strings.NewReader(validBody)))
	var id string
	if len(lines) == 1 {
		id = lines[0].OrderID
	}
	want := `{"type":"tag:edge-orders,2026:order_rejected","title":"Order rejected","status":422,"detail":"symbol halted","error":"order_rejected","orderId":"` + id + `"}`
	check(t, rejected, response{status: 422, body: want, header: map[string]string{"Idempotent-Replay": ""}})
	if !uuidV4.MatchString(id) || lines[0].Outcome != "rejected" {
		t.Fatalf("log line %+v, want outcome rejected with the order id", lines[0])
	}
	for _, method := range []string{"POST", "GET"} {
		check(t, serve(h, request(method, ptr("r"), strings.NewReader(validBody))),
			response{status: 422, body: want, header: map[string]string{"Idempotent-Replay": "true"}})
	}

	unknown := serve(h, request("POST", ptr("u"), strings.NewReader(validBody)))
	if unknown.Code != 503 || !strings.Contains(unknown.Body.String(), `"error":"outcome_unknown"`) ||
		unknown.Header().Get("Retry-After") == "" || strings.Contains(unknown.Body.String(), secret) {
		t.Fatalf("unknown outcome = %d %s (Retry-After %q), want a 503 outcome_unknown with Retry-After and no detail of the failure",
			unknown.Code, unknown.Body, unknown.Header().Get("Retry-After"))
	}
	if lookup := serve(h, request("GET", ptr("u"), nil)); lookup.Code != 503 || !strings.Contains(lookup.Body.String(), `"error":"outcome_unknown"`) {
		t.Fatalf("lookup after the unknown outcome = %d %s, want 503 outcome_unknown", lookup.Code, lookup.Body)
	}
	if retry := serve(h, request("POST", ptr("u"), strings.NewReader(validBody))); retry.Code != 201 {
		t.Fatalf("retry = %d %s, want 201", retry.Code, retry.Body)
	}
}

// TestServePanicIsAProblem: a panic that escapes the handler, in the
// bridge around it, is answered with the 500 problem and logged.
func TestServePanicIsAProblem(t *testing.T) {
	var lines []eventlog.Line
	h := httpapi.New(newService(kv.NewMemoryNamespace()), httpapi.Options{Log: logTo(&lines)})
	resp := h.ServePanic("bridge exploded")
	if resp.Status != 500 || !strings.Contains(string(resp.Body), `"error":"internal_error"`) {
		t.Fatalf("ServePanic = %d %s, want the 500 internal_error problem", resp.Status, resp.Body)
	}
	if len(lines) != 1 || !strings.Contains(lines[0].Error, "bridge exploded") || lines[0].Status != 500 {
		t.Fatalf("log lines %+v, want one naming the panic", lines)
	}
}

// lostAnswers is a gateway whose answer is lost (an unknown outcome) while
// lose is set, and which accepts otherwise. It records each call's order id.
type lostAnswers struct {
	lose     bool
	orderIDs []string
}

func (g *lostAnswers) Place(_ context.Context, p intake.Placement) error {
	g.orderIDs = append(g.orderIDs, p.OrderID)
	if g.lose {
		return errors.New("oms: no answer: " + secret)
	}
	return nil
}

// noNextAttempt is a Store that does not say when the settler is due.
type noNextAttempt struct{ intake.Store }

func (s noNextAttempt) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	rec, err := s.Store.Lookup(ctx, key)
	rec.NextAttempt = time.Time{}
	return rec, err
}

// TestUnsettledOutcomes checks what a submission and a lookup answer for
// an order whose outcome is unknown: 503 outcome_unknown naming the order,
// the attempts and when the settler asks next, with a Retry-After until
// then; 503 outcome_unresolved once the settler gave up, whose retry still
// asks the OMS with the same order id. The gateway's error never reaches
// the client, only the log.
func TestUnsettledOutcomes(t *testing.T) {
	const settleMaxAge = time.Hour
	// The order's detail, written out here rather than read from the
	// handler's table.
	const (
		unknownDetail = "The order-management system did not confirm this order, so it may or may not exist. " +
			"The Worker is settling it with the order-management system by itself, and a retry under the same " +
			"Idempotency-Key is safe: it asks again with the same order id, and never places a second order."
		unresolvedDetail = "The order-management system never confirmed this order, so it may or may not exist, " +
			"and the Worker stopped asking it. The Idempotency-Key keeps its order id: a retry under the same " +
			"Idempotency-Key still asks the order-management system with the same order id, and never places a second order."
	)
	// extra is the members after "error"; next "" leaves nextAttemptAt out.
	extra := func(id string, attempts int, next string) string {
		s := `,"orderId":"` + id + `","attempts":` + strconv.Itoa(attempts)
		if next != "" {
			s += `,"nextAttemptAt":"` + next + `"`
		}
		return s
	}
	unknown := func(id string, attempts int, next string) string {
		return problemJSON("outcome_unknown", 503, "Order outcome unknown", unknownDetail, extra(id, attempts, next))
	}
	unresolved := func(id string, attempts int) string {
		return problemJSON("outcome_unresolved", 503, "Order outcome unresolved", unresolvedDetail, extra(id, attempts, ""))
	}
	// world is one Worker over KV with a clock the test moves.
	type world struct {
		t       *testing.T
		h       workers.Handler
		svc     *intake.Service
		gateway *lostAnswers
		now     time.Time
		last    *http.Request
	}
	post := func(w *world) *httptest.ResponseRecorder {
		w.last = request(http.MethodPost, ptr("k"), strings.NewReader(validBody))
		return serve(w.h, w.last)
	}
	lookup := func(w *world) *httptest.ResponseRecorder {
		w.last = request(http.MethodGet, ptr("k"), nil)
		return serve(w.h, w.last)
	}
	settle := func(w *world) {
		w.t.Helper()
		if s, err := w.svc.Settle(context.Background(), intake.Key{ID: "k"}); err != nil || !s.Unresolved {
			w.t.Fatalf("Settle = %+v, %v, want the key left unresolved", s, err)
		}
	}
	tests := []struct {
		name string
		// store wraps the KV store; nil leaves it as it is.
		store func(intake.Store) intake.Store
		// run sends the requests; the last one's response is checked.
		run         func(w *world) *httptest.ResponseRecorder
		wantStatus  int
		wantBody    func(id string) string
		retryAfter  string
		wantOutcome string
		wantCalls   int // gateway calls, all with the one order id
	}{
		{
			name:        "submit whose answer is lost is outcome_unknown due in a second",
			run:         post,
			wantStatus:  503,
			wantBody:    func(id string) string { return unknown(id, 1, "2026-03-14T15:09:27.535Z") },
			retryAfter:  "1",
			wantOutcome: "outcome_unknown",
			wantCalls:   1,
		},
		{
			name:        "lookup of a key left unknown names the order, the attempts and the next attempt",
			run:         func(w *world) *httptest.ResponseRecorder { post(w); return lookup(w) },
			wantStatus:  503,
			wantBody:    func(id string) string { return unknown(id, 1, "2026-03-14T15:09:27.535Z") },
			retryAfter:  "1",
			wantOutcome: "outcome_unknown",
			wantCalls:   1,
		},
		{
			name: "retries whose answers are lost back off, and Retry-After counts to the next attempt rounded up",
			run: func(w *world) *httptest.ResponseRecorder {
				post(w)
				post(w)
				post(w)
				w.now = w.now.Add(1500 * time.Millisecond)
				return lookup(w)
			},
			wantStatus:  503,
			wantBody:    func(id string) string { return unknown(id, 3, "2026-03-14T15:09:30.535Z") },
			retryAfter:  "3",
			wantOutcome: "outcome_unknown",
			wantCalls:   3,
		},
		{
			name: "submit after two lost answers is due in two seconds",
			run: func(w *world) *httptest.ResponseRecorder {
				post(w)
				return post(w)
			},
			wantStatus:  503,
			wantBody:    func(id string) string { return unknown(id, 2, "2026-03-14T15:09:28.535Z") },
			retryAfter:  "2",
			wantOutcome: "outcome_unknown",
			wantCalls:   2,
		},
		{
			name: "lookup past the next attempt is due in a second",
			run: func(w *world) *httptest.ResponseRecorder {
				post(w)
				w.now = w.now.Add(time.Minute)
				return lookup(w)
			},
			wantStatus:  503,
			wantBody:    func(id string) string { return unknown(id, 1, "2026-03-14T15:09:27.535Z") },
			retryAfter:  "1",
			wantOutcome: "outcome_unknown",
			wantCalls:   1,
		},
		{
			name:        "lookup from a store that does not say when is due in a second, without nextAttemptAt",
			store:       func(s intake.Store) intake.Store { return noNextAttempt{s} },
			run:         func(w *world) *httptest.ResponseRecorder { post(w); return lookup(w) },
			wantStatus:  503,
			wantBody:    func(id string) string { return unknown(id, 1, "") },
			retryAfter:  "1",
			wantOutcome: "outcome_unknown",
			wantCalls:   1,
		},
		{
			name: "lookup of a key the settler gave up on is outcome_unresolved",
			run: func(w *world) *httptest.ResponseRecorder {
				post(w)
				w.now = w.now.Add(settleMaxAge)
				settle(w)
				return lookup(w)
			},
			wantStatus:  503,
			wantBody:    func(id string) string { return unresolved(id, 2) },
			retryAfter:  "1",
			wantOutcome: "outcome_unresolved",
			wantCalls:   2, // the client's, and the settler's last

		},
		{
			name: "retry of an unresolved key asks the OMS with the same order id, and stays unresolved if the answer is lost",
			run: func(w *world) *httptest.ResponseRecorder {
				post(w)
				w.now = w.now.Add(settleMaxAge)
				settle(w)
				return post(w)
			},
			wantStatus:  503,
			wantBody:    func(id string) string { return unresolved(id, 3) },
			retryAfter:  "1",
			wantOutcome: "outcome_unresolved",
			wantCalls:   3,
		},
		{
			name: "retry of an unresolved key that the OMS accepts is its receipt",
			run: func(w *world) *httptest.ResponseRecorder {
				post(w)
				w.now = w.now.Add(settleMaxAge)
				settle(w)
				w.gateway.lose = false
				return post(w)
			},
			wantStatus: 201,
			wantBody: func(id string) string {
				return `{"orderId":"` + id + `","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2026-03-14T15:09:26.535Z"}`
			},
			wantOutcome: "created",
			wantCalls:   3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{t: t, gateway: &lostAnswers{lose: true}, now: acceptedAt}
			clock := func() time.Time { return w.now }
			mem := kv.NewMemoryNamespace()
			mem.Now = clock
			var store intake.Store = kv.NewStore(mem, clock)
			if tc.store != nil {
				store = tc.store(store)
			}
			opts := serviceOptions()
			opts.Now, opts.Gateway, opts.SettleMaxAge = clock, w.gateway, settleMaxAge
			opts.Schedule = noSchedule // a settle queue: the settler runs
			w.svc = intake.New(store, opts)
			var lines []eventlog.Line
			w.h = httpapi.New(w.svc, httpapi.Options{Log: logTo(&lines), Now: clock})

			got := tc.run(w)
			if len(w.gateway.orderIDs) != tc.wantCalls {
				t.Fatalf("gateway calls = %d, want %d", len(w.gateway.orderIDs), tc.wantCalls)
			}
			id := w.gateway.orderIDs[0]
			for _, other := range w.gateway.orderIDs {
				if other != id {
					t.Errorf("gateway order ids = %v, want one for the key", w.gateway.orderIDs)
					break
				}
			}
			header := map[string]string{"Retry-After": tc.retryAfter, "Idempotent-Replay": ""}
			check(t, got, response{tc.wantStatus, tc.wantBody(id), header})
			apitest.CheckResponse(t, w.last, got.Code, got.Header(), got.Body.Bytes())
			if strings.Contains(got.Body.String(), secret) {
				t.Errorf("body %s leaks the gateway's error", got.Body)
			}
			last := lines[len(lines)-1]
			if last.Outcome != tc.wantOutcome || last.Status != tc.wantStatus || last.OrderID != id {
				t.Errorf("log line %+v, want outcome %s, status %d, order id %s", last, tc.wantOutcome, tc.wantStatus, id)
			}
			// A lookup has no cause to log: it made no gateway call.
			if wantCause := tc.wantStatus == 503 && w.last.Method == http.MethodPost; strings.Contains(last.Error, secret) != wantCause {
				t.Errorf("log line error %q: has the gateway's error %v, want %v", last.Error, !wantCause, wantCause)
			}
		})
	}
}

// TestStandInReceiptNotStored fails the stand-in's receipt write, which
// comes before its answer: the client is told to retry. There is no OMS to
// ask and no settler, so a lookup says the receipt was not stored and that
// a retry stores it (not that the Worker is settling anything), and the
// retry does.
func TestStandInReceiptNotStored(t *testing.T) {
	mem := kv.NewMemoryNamespace()
	faulty := &kvtest.Faulty{Namespace: mem, Err: errSecret}
	faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "result:", Nth: 1})
	h := httpapi.New(newServiceWith(faulty, serviceOptions()), httpapi.Options{})

	check(t, serve(h, request("POST", ptr("s"), strings.NewReader(validBody))), response{status: 503, body: problemUnavailable})
	lookup := serve(h, request("GET", ptr("s"), nil))
	if lookup.Code != 503 || !strings.Contains(lookup.Body.String(), `"detail":"This order was accepted, but its receipt could not be stored; a retry under the same Idempotency-Key stores it with the same order id, and never places a second order."`) ||
		strings.Contains(lookup.Body.String(), "nextAttemptAt") || lookup.Header().Get("Retry-After") != "1" {
		t.Fatalf("lookup = %d %s (Retry-After %q), want the stand-in's outcome_unknown, due for no settler", lookup.Code, lookup.Body, lookup.Header().Get("Retry-After"))
	}
	created := serve(h, request("POST", ptr("s"), strings.NewReader(validBody)))
	if created.Code != 201 {
		t.Fatalf("retry = %d %s, want 201", created.Code, created.Body)
	}
	if id := orderID(t, created); !strings.Contains(lookup.Body.String(), `"orderId":"`+id+`"`) {
		t.Errorf("the retry's order %s is not the one the lookup named: %s", id, lookup.Body)
	}
	check(t, serve(h, request("GET", ptr("s"), nil)),
		response{status: 200, body: created.Body.String(), header: map[string]string{"Idempotent-Replay": "true"}})
}
