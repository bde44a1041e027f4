package oms_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/oms"
	"github.com/edge-orders/edge-orders/order"
	"github.com/edge-orders/edge-orders/workers"
)

const orderID = "0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e"

var placement = intake.Placement{
	OrderID:    orderID,
	Order:      order.Order{Symbol: "MSFT", Side: order.Buy, Quantity: 100},
	AcceptedAt: time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC),
}

func TestBody(t *testing.T) {
	tests := []struct {
		name   string
		client string
		want   string
	}{
		{"open worker: no client id", "", `{"orderId":"` + orderID + `","symbol":"MSFT","side":"buy","quantity":100,"acceptedAt":"2026-01-02T03:04:05.678Z"}`},
		{"with API tokens: the client id", "desk-a", `{"orderId":"` + orderID + `","clientId":"desk-a","symbol":"MSFT","side":"buy","quantity":100,"acceptedAt":"2026-01-02T03:04:05.678Z"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := placement
			p.Client = tc.client
			if got := string(oms.Body(p)); got != tc.want {
				t.Errorf("Body = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	named := `{"orderId":"` + orderID + `"}`
	tests := []struct {
		name       string
		status     int
		body       string
		wantErr    error // nil: accepted
		wantReason string
	}{
		{"201 naming the order accepts", 201, named, nil, ""},
		{"200 naming the order accepts", 200, `{"orderId":"` + orderID + `","status":"accepted"}`, nil, ""},
		{"2xx without a body is malformed", 200, ``, oms.ErrMalformed, ""},
		{"2xx naming another order is malformed", 201, `{"orderId":"another"}`, oms.ErrMalformed, ""},
		{"2xx with HTML is malformed", 200, `<html>ok</html>`, oms.ErrMalformed, ""},
		{"422 naming the order rejects with its reason", 422, `{"orderId":"` + orderID + `","reason":"halted"}`, intake.ErrRejected, "halted"},
		{"400 naming the order without a reason rejects", 400, named, intake.ErrRejected, "refused with HTTP 400"},
		{"a proxy's 404 is unknown, not a rejection", 404, `Not Found`, oms.ErrMalformed, ""},
		{"401 for a wrong token is unknown", 401, `{"error":"unauthorized"}`, oms.ErrMalformed, ""},
		{"408 is unknown", 408, named, oms.ErrGatewayUnavailable, ""},
		{"429 is unknown", 429, named, oms.ErrGatewayUnavailable, ""},
		{"500 is unknown", 500, named, oms.ErrGatewayUnavailable, ""},
		{"503 is unknown", 503, ``, oms.ErrGatewayUnavailable, ""},
		{"a redirect is unknown", 302, ``, oms.ErrGatewayUnavailable, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := oms.ReadAnswer(orderID, tc.status, []byte(tc.body))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Outcome = %v, want %v", err, tc.wantErr)
			}
			var rejection *intake.Rejection
			if errors.As(err, &rejection) != (tc.wantReason != "") || (rejection != nil && rejection.Reason != tc.wantReason) {
				t.Errorf("rejection = %+v, want reason %q", rejection, tc.wantReason)
			}
		})
	}
}

// send is an oms.Send over net/http, as the Worker's fetch is over the
// runtime's: the test drives Place against a real HTTP server.
func send(ctx context.Context, r *workers.OutgoingRequest) (*workers.OutgoingResponse, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, strings.NewReader(string(r.Body)))
	if err != nil {
		return nil, err
	}
	for _, f := range r.Header {
		req.Header.Set(f.Name, f.Value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &workers.OutgoingResponse{Status: resp.StatusCode, Body: body}, nil
}

// TestPlace checks the whole call against a server: method, headers, body,
// and each kind of answer, no answer included.
func TestPlace(t *testing.T) {
	type seen struct {
		method, contentType, key, auth string
		body                           map[string]any
	}
	calls := make(chan seen, 10)
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var s seen
		s.method, s.contentType, s.key, s.auth = r.Method, r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&s.body)
		calls <- s
		switch r.URL.Path {
		case "/accept":
			w.WriteHeader(201)
			io.WriteString(w, `{"orderId":"`+orderID+`"}`)
		case "/reject":
			w.WriteHeader(422)
			io.WriteString(w, `{"orderId":"`+orderID+`","reason":"symbol halted"}`)
		case "/hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	place := func(path string, timeout time.Duration) error {
		g := oms.New(oms.Options{URL: srv.URL + path, Token: "s3cret", Timeout: timeout, Send: send})
		return g.Place(context.Background(), placement)
	}

	if err := place("/accept", time.Second); err != nil {
		t.Fatalf("accepted: %v", err)
	}
	s := <-calls
	if s.method != "POST" || s.contentType != "application/json" || s.key != orderID || s.auth != "Bearer s3cret" {
		t.Errorf("call = %s, Content-Type %q, Idempotency-Key %q, Authorization %q; want POST, application/json, the order id, Bearer s3cret",
			s.method, s.contentType, s.key, s.auth)
	}
	if s.body["orderId"] != orderID || s.body["symbol"] != "MSFT" || s.body["quantity"] != 100.0 {
		t.Errorf("body = %v, want the placement", s.body)
	}

	var rejection *intake.Rejection
	if err := place("/reject", time.Second); !errors.As(err, &rejection) || rejection.Reason != "symbol halted" {
		t.Errorf("rejected: %v, want a Rejection with the reason", err)
	}
	<-calls

	began := time.Now()
	err := place("/hang", 200*time.Millisecond)
	<-calls
	if err == nil || errors.Is(err, intake.ErrRejected) {
		t.Errorf("no answer: %v, want an unknown outcome", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("no answer took %v, want about the 200 ms timeout", took)
	}
}
