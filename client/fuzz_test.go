package client

import (
	"net/http"
	"testing"
	"time"
)

// FuzzRead feeds arbitrary responses to the code that reads them: it must
// never panic, never pass off a body without an order id as a receipt, and
// never ask for a negative wait.
func FuzzRead(f *testing.F) {
	f.Add(201, "", `{"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e","status":"accepted","symbol":"MSFT","side":"buy","quantity":100,"acceptedAt":"2026-01-02T03:04:05.678Z"}`)
	f.Add(409, "60", `{"type":"tag:edge-orders,2026:in_progress","title":"t","status":409,"detail":"d","error":"in_progress","retryAfter":60}`)
	f.Add(503, "Fri, 02 Jan 2026 03:04:05 GMT", `<h1>busy</h1>`)
	f.Add(200, "-1", `{"orderId":"x","acceptedAt":"not a time"}`)
	f.Add(429, "99999999999999999999", `{"retryAfter":1e300}`)
	f.Add(503, "4", `{"type":"tag:edge-orders,2026:outcome_unknown","title":"t","status":503,"detail":"d","error":"outcome_unknown","orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e","attempts":3,"nextAttemptAt":"2026-01-02T03:04:09.678Z"}`)
	f.Add(503, "1", `{"error":"outcome_unresolved","attempts":-7,"nextAttemptAt":"+275760-09-13T00:00:00.000Z"}`)
	c, err := New("http://127.0.0.1:8787", &Options{Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, retryAfter, body string) {
		if status < 100 || status > 999 {
			t.Skip()
		}
		resp := &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {retryAfter}}}
		got := c.read(resp, []byte(body))
		if (got.result == nil) == (got.err == nil) {
			t.Fatalf("read = %+v, want a result or an error", got)
		}
		if got.result != nil && (got.result.Receipt.OrderID == "" || got.result.Receipt.AcceptedAt.IsZero()) {
			t.Errorf("receipt %+v from %s, want an order id and a time", got.result.Receipt, body)
		}
		if got.err != nil && got.err.RetryAfter < 0 {
			t.Errorf("RetryAfter = %v, want >= 0", got.err.RetryAfter)
		}
		if got.err != nil {
			_ = c.wait(3, got.err)
		}
	})
}
