package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/metrics"
)

// The clock of the data point tests moves only with I/O, as a Worker's
// does: each store call takes storeStep, each gateway call gatewayStep.
const (
	storeStep   = 5 * time.Millisecond
	gatewayStep = 30 * time.Millisecond
)

// stepClock is a clock that moves only when told.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// talliedStore counts each call in the Tally of its context, as the
// Worker's store does, and takes storeStep. Keys named "broken" fail and
// keys named "panic" panic.
type talliedStore struct {
	intake.Store
	clock *stepClock
}

func (s talliedStore) call(ctx context.Context, key intake.Key) error {
	metrics.TallyFrom(ctx).AddStorageCall()
	s.clock.Advance(storeStep)
	switch key.ID {
	case "broken":
		return errors.New("kv: " + secret)
	case "panic":
		panic("kv: binding exploded")
	}
	return nil
}

func (s talliedStore) Begin(ctx context.Context, key intake.Key, c intake.Claim) (intake.Record, error) {
	if err := s.call(ctx, key); err != nil {
		return intake.Record{}, err
	}
	return s.Store.Begin(ctx, key, c)
}

func (s talliedStore) Commit(ctx context.Context, key intake.Key, c intake.Claim, r intake.Result) error {
	if err := s.call(ctx, key); err != nil {
		return err
	}
	return s.Store.Commit(ctx, key, c, r)
}

func (s talliedStore) Release(ctx context.Context, key intake.Key, c intake.Claim) error {
	if err := s.call(ctx, key); err != nil {
		return err
	}
	return s.Store.Release(ctx, key, c)
}

func (s talliedStore) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	if err := s.call(ctx, key); err != nil {
		return intake.Record{}, err
	}
	return s.Store.Lookup(ctx, key)
}

// talliedGateway answers as scriptedGateway does, counting each call's
// gatewayStep in the Tally of its context, as the Worker's gateway does.
type talliedGateway struct {
	scriptedGateway
	clock *stepClock
}

func (g *talliedGateway) Place(ctx context.Context, p intake.Placement) error {
	metrics.TallyFrom(ctx).AddGateway(gatewayStep)
	g.clock.Advance(gatewayStep)
	return g.scriptedGateway.Place(ctx, p)
}

// TestDataPointPerOutcome serves one request of every outcome and checks
// the exact data point each one writes: its client, outcome, status and
// event, its time (the clock moves only in storage and gateway calls
// here), the storage calls and gateway time the request's Tally counted,
// the attempts of an unknown or unresolved answer, and a replay's time
// since its order was accepted.
func TestDataPointPerOutcome(t *testing.T) {
	ctx := context.Background()
	const settleMaxAge = time.Hour
	clock := &stepClock{now: acceptedAt}
	mem := kv.NewMemoryNamespace()
	mem.Now = clock.Now
	store := talliedStore{Store: kv.NewStore(mem, clock.Now), clock: clock}
	gateway := &talliedGateway{clock: clock}
	opts := serviceOptions()
	opts.Now, opts.Gateway, opts.SettleMaxAge = clock.Now, gateway, settleMaxAge
	opts.Limit = func(_ context.Context, who string) (bool, error) { return who != "bob", nil }
	newService := func() *intake.Service { return intake.New(store, opts) }
	svc := newService()
	clients, err := auth.Parse("alice:" + aliceToken + ",bob:" + bobToken)
	if err != nil {
		t.Fatal(err)
	}
	var points []metrics.Point
	record := func(p metrics.Point) { points = append(points, p) }
	handlerOptions := httpapi.Options{Clients: clients, Now: clock.Now, Metrics: record, AllowedOrigins: []string{"https://desk.example.com"}}
	h := httpapi.New(svc, handlerOptions)
	// another is a second instance over the same store: no receipts in
	// memory.
	another := httpapi.New(newService(), handlerOptions)

	// send builds a request, with token as a bearer token unless "", and
	// header as name, value pairs.
	send := func(method, key, body, token string, header ...string) *http.Request {
		var r *http.Request
		if key == "" {
			r = request(method, nil, strings.NewReader(body))
		} else {
			r = request(method, ptr(key), strings.NewReader(body))
		}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return r
	}
	alice := func(method, key, body string, header ...string) *http.Request {
		return send(method, key, body, aliceToken, header...)
	}
	post := func(key, body string) *http.Request { return alice("POST", key, body) }
	get := func(key string) *http.Request { return alice("GET", key, "") }
	// An accepted order's time: its claim, its gateway call, its receipt.
	const placed = storeStep + gatewayStep + storeStep

	steps := []struct {
		name string
		// before runs first, outside the request.
		before func(t *testing.T)
		h      *httpapi.Handler
		r      *http.Request
		want   metrics.Point
	}{
		{name: "a new order", r: post("k", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.New, Status: 201, Event: metrics.Submit, Took: placed, Gateway: gatewayStep, GatewayCalls: 1, StorageCalls: 2}},
		{name: "its replay, 30 s later, from memory", before: func(*testing.T) { clock.Advance(30 * time.Second) }, r: post("k", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.Replay, Status: 200, Event: metrics.Submit, SinceAccepted: placed + 30*time.Second}},
		{name: "its replay on another instance, from storage", h: another, r: post("k", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.Replay, Status: 200, Event: metrics.Submit, Took: storeStep, StorageCalls: 1,
				SinceAccepted: placed + 30*time.Second + storeStep}},
		{name: "its lookup", r: get("k"),
			want: metrics.Point{Client: "alice", Outcome: metrics.Replay, Status: 200, Event: metrics.Lookup, SinceAccepted: placed + 30*time.Second + storeStep}},
		{name: "another order under its key", r: post("k", `{"symbol":"MSFT","side":"buy","quantity":10}`),
			want: metrics.Point{Client: "alice", Outcome: metrics.KeyReused, Status: 422, Event: metrics.Submit}},
		{name: "an invalid order", r: post("bad", `{}`),
			want: metrics.Point{Client: "alice", Outcome: metrics.Invalid, Status: 422, Event: metrics.Submit}},
		{name: "no key", r: alice("POST", "", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.Invalid, Status: 400, Event: metrics.Submit}},
		{name: "an invalid key", r: post("a,b", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.Invalid, Status: 400, Event: metrics.Submit}},
		{name: "a body too large", r: post("big", hugeBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.Invalid, Status: 413, Event: metrics.Submit}},
		{name: "another method", r: alice("PUT", "k", ""),
			want: metrics.Point{Client: "alice", Outcome: metrics.Invalid, Status: 405, Event: metrics.Other}},
		{name: "a key in progress", before: func(t *testing.T) { putClaim(t, mem, "alice:busy") }, r: post("busy", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.InProgress, Status: 409, Event: metrics.Submit, Took: storeStep, StorageCalls: 1}},
		{name: "an order whose answer was lost", before: func(*testing.T) { gateway.answers = []error{errors.New("oms: no answer")} }, r: post("lost", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.Unknown, Status: 503, Event: metrics.Submit, Took: placed, Gateway: gatewayStep, GatewayCalls: 1, StorageCalls: 2, Attempts: 1}},
		{name: "an order the OMS refuses", before: func(*testing.T) { gateway.answers = []error{&intake.Rejection{Reason: "halted"}} }, r: post("refused", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.Rejected, Status: 422, Event: metrics.Submit, Took: placed, Gateway: gatewayStep, GatewayCalls: 1, StorageCalls: 2}},
		{name: "its replay, 20 s later", before: func(*testing.T) { clock.Advance(20 * time.Second) }, r: post("refused", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.Replay, Status: 422, Event: metrics.Submit, SinceAccepted: placed + 20*time.Second}},
		{name: "a new order over the client's budget", r: send("POST", "limited", validBody, bobToken),
			want: metrics.Point{Client: "bob", Outcome: metrics.RateLimited, Status: 429, Event: metrics.Submit, Took: storeStep, StorageCalls: 1}},
		{name: "no token", r: send("POST", "k", validBody, ""),
			want: metrics.Point{Outcome: metrics.Unauthorized, Status: 401, Event: metrics.Submit}},
		{name: "a token of no client", r: send("GET", "k", "", malloryToken),
			want: metrics.Point{Outcome: metrics.Unauthorized, Status: 401, Event: metrics.Lookup}},
		{name: "a lookup of a free key", r: get("free"),
			want: metrics.Point{Client: "alice", Outcome: metrics.NotFound, Status: 404, Event: metrics.Lookup, Took: storeStep, StorageCalls: 1}},
		{name: "a lookup of a key the settler gave up on", before: func(t *testing.T) {
			// The lost order's settler: its last call, past SettleMaxAge,
			// is lost too.
			clock.Advance(settleMaxAge)
			gateway.answers = []error{errors.New("oms: no answer")}
			if st, err := svc.Settle(ctx, intake.Key{Client: "alice", ID: "lost"}); err != nil || !st.Unresolved {
				t.Fatalf("Settle = %+v, %v; want the key unresolved", st, err)
			}
		}, r: get("lost"),
			want: metrics.Point{Client: "alice", Outcome: metrics.Unresolved, Status: 503, Event: metrics.Lookup, Took: storeStep, StorageCalls: 1, Attempts: 2}},
		{name: "a storage failure", r: post("broken", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.StorageUnavailable, Status: 503, Event: metrics.Submit, Took: storeStep, StorageCalls: 1}},
		{name: "a panic", r: post("panic", validBody),
			want: metrics.Point{Client: "alice", Outcome: metrics.InternalError, Status: 500, Event: metrics.Submit, Took: storeStep, StorageCalls: 1}},
		{name: "the policy page", r: func() *http.Request { r := send("GET", "", "", ""); r.URL.Path = httpapi.PolicyPath; return r }(),
			want: metrics.Point{Outcome: metrics.Policy, Status: 200, Event: metrics.Lookup}},
		{name: "a preflight", r: send("OPTIONS", "", "", "", "Origin", "https://desk.example.com", "Access-Control-Request-Method", "POST"),
			want: metrics.Point{Outcome: metrics.Preflight, Status: 204, Event: metrics.Other}},
		{name: "a preflight from another origin", r: send("OPTIONS", "", "", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST"),
			want: metrics.Point{Outcome: metrics.OriginNotAllowed, Status: 403, Event: metrics.Other}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.before != nil {
				step.before(t)
			}
			handler := step.h
			if handler == nil {
				handler = h
			}
			before := len(points)
			w := serve(handler, step.r)
			if len(points) != before+1 {
				t.Fatalf("%d data points for one request (%d %s), want 1", len(points)-before, w.Code, w.Body)
			}
			if got := points[before]; got != step.want {
				t.Errorf("data point (answer %d %s)\n got %+v\nwant %+v", w.Code, w.Body, got, step.want)
			}
			if got := points[before].Status; got != w.Code {
				t.Errorf("the point's status %d, the answer's %d", got, w.Code)
			}
		})
	}

	t.Run("a misconfigured Worker", func(t *testing.T) {
		var got []metrics.Point
		m := httpapi.Misconfigured("the ORDERS KV namespace binding is missing", httpapi.Options{Now: clock.Now, Metrics: func(p metrics.Point) { got = append(got, p) }})
		serve(m, request("POST", ptr("k"), strings.NewReader(validBody)))
		want := metrics.Point{Outcome: metrics.Misconfigured, Status: 500, Event: metrics.Submit}
		if len(got) != 1 || got[0] != want {
			t.Errorf("data points %+v, want %+v", got, want)
		}
	})
}

// TestNoMetricsNoTally: without Options.Metrics a request's context
// carries no Tally, so nothing is counted for it.
func TestNoMetricsNoTally(t *testing.T) {
	clock := &stepClock{now: acceptedAt}
	var tallies []*metrics.Tally
	gateway := gatewayFunc(func(ctx context.Context, _ intake.Placement) error {
		tallies = append(tallies, metrics.TallyFrom(ctx))
		return nil
	})
	opts := serviceOptions()
	opts.Now, opts.Gateway = clock.Now, gateway
	h := httpapi.New(intake.New(kv.NewStore(kv.NewMemoryNamespace(), clock.Now), opts), httpapi.Options{Now: clock.Now})
	if w := serve(h, request("POST", ptr("k"), strings.NewReader(validBody))); w.Code != 201 {
		t.Fatalf("%d %s, want 201", w.Code, w.Body)
	}
	if len(tallies) != 1 || tallies[0] != nil {
		t.Errorf("the gateway's context held tallies %v, want none", tallies)
	}
}

// gatewayFunc is a Gateway of one function.
type gatewayFunc func(ctx context.Context, p intake.Placement) error

func (f gatewayFunc) Place(ctx context.Context, p intake.Placement) error { return f(ctx, p) }

// TestAHeadLookupCountsAsALookup: a HEAD is answered as a GET, a lookup
// (docs/http.md), so its data point's event is lookup, not other (a
// preflight, a refusal: docs/metrics.md).
func TestAHeadLookupCountsAsALookup(t *testing.T) {
	var points []metrics.Point
	h := httpapi.New(newService(kv.NewMemoryNamespace()), httpapi.Options{Metrics: func(p metrics.Point) { points = append(points, p) }})
	if w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody))); w.Code != 201 {
		t.Fatalf("order = %d %s", w.Code, w.Body)
	}
	if w := serve(h, request(http.MethodHead, ptr("k"), nil)); w.Code != 200 {
		t.Fatalf("HEAD = %d", w.Code)
	}
	if got := points[len(points)-1]; got.Event != metrics.Lookup || got.Outcome != metrics.Replay {
		t.Errorf("HEAD's data point: event %s outcome %s, want lookup replay", got.Event, got.Outcome)
	}
}
