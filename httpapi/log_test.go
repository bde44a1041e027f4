package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/kv"
)

// TestLogLine checks the one line each request logs.
func TestLogLine(t *testing.T) {
	mem := kv.NewMemoryNamespace()
	var panics atomic.Bool
	var lines []eventlog.Line
	log := logTo(&lines)
	h := httpapi.New(newService(panicky(mem, &panics)), httpapi.Options{Log: log})
	putClaim(t, mem, "busy")
	failingHandler := httpapi.New(newService(failing(mem)), httpapi.Options{Log: log})

	w := serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
	id := orderID(t, w)
	tests := []struct {
		name  string
		serve func() *httptest.ResponseRecorder
		want  eventlog.Line
	}{
		{"created logs the order", func() *httptest.ResponseRecorder { return w },
			eventlog.Line{Outcome: "created", Key: "k", Status: 201, OrderID: id}},
		{"replayed logs the same order", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(validBody)))
		}, eventlog.Line{Outcome: "replayed", Key: "k", Status: 200, OrderID: id}},
		{"replay under the quoted key logs the bare key", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr(`"k"`), strings.NewReader(validBody)))
		}, eventlog.Line{Outcome: "replayed", Key: "k", Status: 200, OrderID: id}},
		{"lookup logs the order replayed", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodGet, ptr("k"), nil))
		}, eventlog.Line{Outcome: "replayed", Key: "k", Status: 200, OrderID: id}},
		{"lookup of a free key logs not_found", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodGet, ptr("free"), nil))
		}, eventlog.Line{Outcome: "not_found", Key: "free", Status: 404, Error: "intake: no receipt for this key"}},
		{"reused key logs key_reused without the order", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr("k"), strings.NewReader(`{"symbol":"MSFT","side":"buy","quantity":10}`)))
		}, eventlog.Line{Outcome: "key_reused", Key: "k", Status: 422, Error: "intake: idempotency key reused for a different order"}},
		{"in progress logs the code", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr("busy"), strings.NewReader(validBody)))
		}, eventlog.Line{Outcome: "in_progress", Key: "busy", Status: 409, Error: "intake: request with this key in progress"}},
		{"method not allowed logs the code", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPut, ptr("k"), nil))
		}, eventlog.Line{Outcome: "method_not_allowed", Status: 405, Error: "httpapi: method not allowed"}},
		{"missing key logs no key", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, nil, strings.NewReader(validBody)))
		}, eventlog.Line{Outcome: "missing_idempotency_key", Status: 400, Error: "httpapi: missing Idempotency-Key"}},
		{"invalid order logs the code", func() *httptest.ResponseRecorder {
			return serve(h, request(http.MethodPost, ptr("bad"), strings.NewReader(`{}`)))
		}, eventlog.Line{Outcome: "invalid_order", Key: "bad", Status: 422, Error: "order: invalid order: symbol must be a non-empty string"}},
		{"storage failure logs storage_error", func() *httptest.ResponseRecorder {
			return serve(failingHandler, request(http.MethodPost, ptr("k2"), strings.NewReader(validBody)))
		}, // The operator needs the cause; only the client must not see it.
			eventlog.Line{Outcome: "storage_error", Key: "k2", Status: 503, Error: `intake: storage unavailable: Get "result:k2": kv: ` + secret}},
		{"panic logs internal_error with the panic", func() *httptest.ResponseRecorder {
			panics.Store(true)
			defer panics.Store(false)
			return serve(h, request(http.MethodPost, ptr("k3"), strings.NewReader(validBody)))
		}, // The panic's value is for the operator; the body hides it.
			eventlog.Line{Outcome: "internal_error", Key: "k3", Status: 500, Error: "panic: kv: binding exploded"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.serve()
			if len(lines) != i+1 {
				t.Fatalf("log lines = %d, want %d (one per request)", len(lines), i+1)
			}
			got := lines[i]
			if got.Status != w.Code {
				t.Errorf("logged status %d, but the response was %d", got.Status, w.Code)
			}
			if got.Millis < 0 {
				t.Errorf("Millis = %d, want >= 0", got.Millis)
			}
			got.Millis = 0
			if got != tc.want {
				t.Errorf("log line = %+v, want %+v", got, tc.want)
			}
		})
	}
}
