//go:build js && wasm

package workers_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/workers"
)

// The typed bindings against the real ones, in workerd: test/conformance's
// entry publishes its bindings as globals (ORDERS, LEDGER, LIMIT, QUEUE,
// METRICS) and its own origin (ORIGIN); elsewhere each test skips.

// global returns binding name from the globals, or skips.
func global[B any](t *testing.T, get func(string) (B, bool), name string) B {
	t.Helper()
	b, ok := get(name)
	if !ok {
		t.Skip("no " + name + " binding: run through test/conformance in wrangler dev")
	}
	return b
}

// run names this run's keys apart from earlier runs' on the same state.
var run = strconv.FormatInt(time.Now().UnixNano(), 36)

func TestBindingKV(t *testing.T) {
	ctx := context.Background()
	kv := global(t, workers.Globals().KV, "ORDERS")
	prefix := "bindings:" + run + ":"
	if err := kv.Put(ctx, prefix+"a", "ü 😀", []byte(`{"m":1}`), time.Minute); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := kv.Put(ctx, prefix+"b", "2", nil, 0); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := kv.Get(ctx, prefix+"a", prefix+"missing", prefix+"b")
	switch {
	case err != nil:
		t.Fatalf("Get: %v", err)
	case !got[0].Found || got[0].Value != "ü 😀" || string(got[0].Metadata) != `{"m":1}`:
		t.Errorf("Get a = %+v, want its value and metadata", got[0])
	case got[1].Found:
		t.Errorf("Get missing = %+v, want not found", got[1])
	case !got[2].Found || got[2].Value != "2" || got[2].Metadata != nil:
		t.Errorf("Get b = %+v, want its value and no metadata", got[2])
	}
	keys, next, err := kv.List(ctx, prefix, "", 1)
	if err != nil || len(keys) != 1 || keys[0].Name != prefix+"a" || string(keys[0].Metadata) != `{"m":1}` || next == "" {
		t.Fatalf("List's first page = %+v, %q, %v; want a with its metadata, and a cursor", keys, next, err)
	}
	if keys, _, err := kv.List(ctx, prefix, next, 1); err != nil || len(keys) != 1 || keys[0].Name != prefix+"b" {
		t.Errorf("List's second page = %+v, %v; want b", keys, err)
	}
	if err := kv.Delete(ctx, prefix+"a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got, err := kv.Get(ctx, prefix+"a"); err != nil || got[0].Found {
		t.Errorf("Get after Delete = %+v, %v; want not found", got, err)
	}
	if err := kv.Put(ctx, prefix+"short", "v", nil, 59*time.Second); err == nil {
		t.Errorf("Put with a 59 s TTL = nil error, want KV's refusal")
	}
}

func TestBindingRateLimiter(t *testing.T) {
	ctx := context.Background()
	limiter := global(t, workers.Globals().RateLimiter, "LIMIT")
	// One a minute: of three calls, a window's turn lets two through at
	// most, so one at least is refused.
	allowed := 0
	for range 3 {
		ok, err := limiter.Limit(ctx, "bindings:"+run)
		if err != nil {
			t.Fatalf("Limit: %v", err)
		}
		if ok {
			allowed++
		}
	}
	if allowed < 1 || allowed > 2 {
		t.Errorf("%d of 3 calls allowed at one a minute, want 1 or 2", allowed)
	}
}

func TestBindingDurableObjectNamespace(t *testing.T) {
	ctx := context.Background()
	ns := global(t, workers.Globals().DurableObjectNamespace, "LEDGER")
	stats, err := ns.Call(ctx, "bindings-"+run, "stats", nil)
	if err != nil || len(stats) == 0 || stats[0] != '{' {
		t.Fatalf("Call stats = %s, %v; want the object's JSON stats", stats, err)
	}
	_, err = ns.Call(ctx, "bindings-"+run, "no-such-method", nil)
	var jsErr *workers.Error
	if !errors.As(err, &jsErr) {
		t.Errorf("Call of a method the object lacks = %v, want a *workers.Error", err)
	}
}

func TestBindingQueue(t *testing.T) {
	ctx := context.Background()
	q := global(t, workers.Globals().Queue, "QUEUE")
	if err := q.Send(ctx, []byte(`{"client":"","id":"k"}`), 0); err != nil {
		t.Errorf("Send = %v", err)
	}
	if err := q.Send(ctx, []byte(`{"client":"","id":"k"}`), 1500*time.Millisecond); err != nil {
		t.Errorf("Send with a delay = %v", err)
	}
}

func TestBindingFetcher(t *testing.T) {
	ctx := context.Background()
	origin, ok := workers.Globals().Var("ORIGIN")
	if !ok {
		t.Skip("no ORIGIN: run through test/conformance in wrangler dev")
	}
	fetch := workers.GlobalFetcher()
	get := func(path string, max int64) (*workers.OutgoingResponse, error) {
		return fetch.Fetch(ctx, &workers.OutgoingRequest{Method: "GET", URL: origin + path, Timeout: 5 * time.Second, MaxAnswerBytes: max})
	}
	if resp, err := get("/echo", 100); err != nil || resp.Status != 201 || string(resp.Body) != "echo" {
		t.Errorf("fetch /echo = %+v, %v; want 201 echo", resp, err)
	}
	if resp, err := get("/redirect", 100); err != nil || resp.Status != 302 || resp.Location != "/echo" {
		t.Errorf("fetch /redirect = %+v, %v; want the 302 itself, with its Location, not followed", resp, err)
	}
	if _, err := get("/big", 1000); !errors.Is(err, workers.ErrTooLarge) {
		t.Errorf("fetch of 100,000 bytes with a 1,000-byte cap = %v, want ErrTooLarge", err)
	}
}

// TestBindingAnalyticsEngineDataset writes points through the real
// binding. wrangler dev drops every data point without a word, so what
// can be checked here is that writeDataPoint did not throw, that it got
// exactly the point Go wrote (the entry's METRICS hands each point on to
// the real binding and keeps it as JSON in METRICS_WRITTEN), that a throw
// comes back as an error (METRICS_THROWS throws), and that the bridge
// keeps nothing per point.
func TestBindingAnalyticsEngineDataset(t *testing.T) {
	metrics := global(t, workers.Globals().AnalyticsEngineDataset, "METRICS")
	for _, c := range []struct {
		name    string
		indexes []string
		blobs   []string
		doubles []float64
		want    string
	}{
		{"a point of every kind of field", []string{"desk-a"}, []string{"replay", "kv", "200", "ü 😀"}, []float64{12, 0, 2.5, 1e21, -3, math.MaxFloat64},
			`{"indexes":["desk-a"],"blobs":["replay","kv","200","ü 😀"],"doubles":[12,0,2.5,1e+21,-3,1.7976931348623157e+308]}`},
		{"empty fields", []string{""}, []string{"", ""}, []float64{0},
			`{"indexes":[""],"blobs":["",""],"doubles":[0]}`},
		{"no fields", nil, nil, nil,
			`{"indexes":[],"blobs":[],"doubles":[]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := metrics.WriteDataPoint(c.indexes, c.blobs, c.doubles); err != nil {
				t.Fatalf("WriteDataPoint = %v, want nil", err)
			}
			if got, _ := workers.Globals().Var("METRICS_WRITTEN"); got != c.want {
				t.Errorf("writeDataPoint got %s, want %s", got, c.want)
			}
		})
	}
	held := workers.HeldObjects()
	for i := range 10 {
		metrics.WriteDataPoint([]string{"desk-a"}, []string{"new"}, []float64{float64(i)})
	}
	if got := workers.HeldObjects(); got != held {
		t.Errorf("the bridge holds %d objects after 10 points, %d before: a point must leave nothing behind", got, held)
	}
	throws := global(t, workers.Globals().AnalyticsEngineDataset, "METRICS_THROWS")
	err := throws.WriteDataPoint([]string{"desk-a"}, nil, nil)
	var jsErr *workers.Error
	if !errors.As(err, &jsErr) || jsErr.Message != "writeDataPoint(): too many data points" {
		t.Errorf("WriteDataPoint to a dataset that throws = %v, want a *workers.Error with its message", err)
	}
}
