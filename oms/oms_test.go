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

func TestReadAnswer(t *testing.T) {
	accepted := `{"orderId":"` + orderID + `","status":"accepted"}`
	rejected := `{"orderId":"` + orderID + `","status":"rejected"}`
	echo := string(oms.Body(placement))
	tests := []struct {
		name       string
		answer     workers.OutgoingResponse
		wantErr    error // nil: accepted
		wantReason string
		wantText   string // in the error's text
	}{
		{"201 naming the order as accepted accepts", answer(201, accepted), nil, "", ""},
		{"200 naming the order as accepted accepts", answer(200, `{"status":"accepted","orderId":"`+orderID+`","extra":[1]}`), nil, "", ""},
		{"2xx without a body is malformed", answer(200, ``), oms.ErrMalformed, "", "HTTP 200 without a JSON object body"},
		{"2xx naming another order is malformed", answer(201, `{"orderId":"another","status":"accepted"}`), oms.ErrMalformed, "", `orderId "another"`},
		{"2xx with HTML is malformed", answer(200, `<html>ok</html>`), oms.ErrMalformed, "", ""},
		{"2xx naming the order without a status is malformed", answer(201, `{"orderId":"`+orderID+`"}`), oms.ErrMalformed, "", `HTTP 201 without the status accepted: status ""`},
		{"2xx naming the order as rejected is malformed", answer(200, rejected), oms.ErrMalformed, "", `status "rejected"`},
		{"2xx with a status that is not a string is malformed", answer(200, `{"orderId":"`+orderID+`","status":true}`), oms.ErrMalformed, "", ""},
		{"a 200 echo of the request is malformed", answer(200, echo), oms.ErrMalformed, "", "HTTP 200 without the status accepted"},
		{"422 naming the order as rejected rejects with its reason", answer(422, `{"orderId":"`+orderID+`","status":"rejected","reason":"halted"}`), intake.ErrRejected, "halted", ""},
		{"400 naming the order as rejected without a reason rejects", answer(400, rejected), intake.ErrRejected, "refused with HTTP 400", ""},
		{"4xx naming the order without a status is malformed", answer(422, `{"orderId":"`+orderID+`","reason":"halted"}`), oms.ErrMalformed, "", "HTTP 422 without the status rejected"},
		{"4xx naming the order as accepted is malformed", answer(409, accepted), oms.ErrMalformed, "", `status "accepted"`},
		{"a 400 echo of the request is malformed", answer(400, echo), oms.ErrMalformed, "", "HTTP 400 without the status rejected"},
		{"a proxy's 404 is unknown, not a rejection", answer(404, `Not Found`), oms.ErrMalformed, "", ""},
		{"401 for a wrong token is unknown", answer(401, `{"error":"unauthorized"}`), oms.ErrMalformed, "", ""},
		{"408 is unknown", answer(408, rejected), oms.ErrGatewayUnavailable, "", "HTTP 408"},
		{"429 is unknown", answer(429, rejected), oms.ErrGatewayUnavailable, "", ""},
		{"500 is unknown", answer(500, accepted), oms.ErrGatewayUnavailable, "", ""},
		{"503 is unknown", answer(503, ``), oms.ErrGatewayUnavailable, "", ""},
		{"a 302 is unknown and names its Location", workers.OutgoingResponse{Status: 302, Location: "https://elsewhere.example/orders", Body: []byte(accepted)},
			oms.ErrRedirected, "", "HTTP 302 to https://elsewhere.example/orders, not followed"},
		{"a 307 is unknown", workers.OutgoingResponse{Status: 307, Location: "/again"}, oms.ErrRedirected, "", "HTTP 307 to /again"},
		{"a 304 without a Location is unknown", answer(304, ``), oms.ErrRedirected, "", "HTTP 304 without a Location"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := oms.ReadAnswer(orderID, &tc.answer)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("ReadAnswer = %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("ReadAnswer = %q, want it to say %q", err, tc.wantText)
			}
			var rejection *intake.Rejection
			if errors.As(err, &rejection) != (tc.wantReason != "") || (rejection != nil && rejection.Reason != tc.wantReason) {
				t.Errorf("rejection = %+v, want reason %q", rejection, tc.wantReason)
			}
		})
	}
}

// answer is an answer with status and body.
func answer(status int, body string) workers.OutgoingResponse {
	return workers.OutgoingResponse{Status: status, Body: []byte(body)}
}

// TestBodyNeverCarriesAStatus checks that the request can never pass for
// an answer: it has no "status" member, with or without a client id.
func TestBodyNeverCarriesAStatus(t *testing.T) {
	for _, tc := range []struct{ name, client string }{{"open worker", ""}, {"with API tokens", "desk-a"}} {
		t.Run(tc.name, func(t *testing.T) {
			p := placement
			p.Client = tc.client
			var body map[string]any
			if err := json.Unmarshal(oms.Body(p), &body); err != nil {
				t.Fatal(err)
			}
			if got, ok := body["status"]; ok {
				t.Errorf("the request's status = %v, want none", got)
			}
		})
	}
}

// send is an oms.Send over net/http, as the Worker's fetch is over the
// runtime's (workers.Fetcher, bridge.mjs): it follows no redirect and
// reads at most MaxAnswerBytes of the answer. The test drives Place
// against a real HTTP server.
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
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.MaxAnswerBytes+1))
	switch {
	case err != nil:
		return nil, err
	case int64(len(body)) > r.MaxAnswerBytes:
		return nil, workers.ErrTooLarge
	}
	return &workers.OutgoingResponse{Status: resp.StatusCode, Location: resp.Header.Get("Location"), Body: body}, nil
}

// TestPlace checks the whole call against a server: method, headers, body,
// and each kind of answer, no answer included.
func TestPlace(t *testing.T) {
	type seen struct {
		method, path, contentType, key, auth, encoding string
		body                                           map[string]any
	}
	calls := make(chan seen, 10)
	release := make(chan struct{})
	defer close(release)
	accepted := `{"orderId":"` + orderID + `","status":"accepted"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), key: r.Header.Get("Idempotency-Key"),
			auth: r.Header.Get("Authorization"), encoding: r.Header.Get("Accept-Encoding")}
		json.NewDecoder(r.Body).Decode(&s.body)
		calls <- s
		switch r.URL.Path {
		case "/accept", "/elsewhere":
			w.WriteHeader(201)
			io.WriteString(w, accepted)
		case "/reject":
			w.WriteHeader(422)
			io.WriteString(w, `{"orderId":"`+orderID+`","status":"rejected","reason":"symbol halted"}`)
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/at-the-cap", "/over-the-cap":
			pad := oms.MaxAnswerBytes - len(accepted)
			if r.URL.Path == "/over-the-cap" {
				pad++
			}
			w.WriteHeader(201)
			io.WriteString(w, accepted+strings.Repeat(" ", pad))
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
	if s.method != "POST" || s.contentType != "application/json" || s.key != `"`+orderID+`"` || s.auth != "Bearer s3cret" || s.encoding != "identity" {
		t.Errorf("call = %s, Content-Type %q, Idempotency-Key %q, Authorization %q, Accept-Encoding %q; want POST, application/json, the order id quoted, Bearer s3cret, identity",
			s.method, s.contentType, s.key, s.auth, s.encoding)
	}
	if s.body["orderId"] != orderID || s.body["symbol"] != "MSFT" || s.body["quantity"] != 100.0 {
		t.Errorf("body = %v, want the placement", s.body)
	}

	var rejection *intake.Rejection
	if err := place("/reject", time.Second); !errors.As(err, &rejection) || rejection.Reason != "symbol halted" {
		t.Errorf("rejected: %v, want a Rejection with the reason", err)
	}
	<-calls

	if err := place("/redirect", time.Second); !errors.Is(err, oms.ErrRedirected) || !strings.Contains(err.Error(), "/elsewhere") {
		t.Errorf("redirected: %v, want ErrRedirected naming /elsewhere", err)
	}
	if got := <-calls; got.path != "/redirect" {
		t.Errorf("call to %s, want /redirect", got.path)
	}
	select {
	case got := <-calls:
		t.Errorf("the redirect was followed to %s", got.path)
	default:
	}

	if err := place("/at-the-cap", time.Second); err != nil {
		t.Errorf("an answer of MaxAnswerBytes: %v, want accepted", err)
	}
	<-calls
	if err := place("/over-the-cap", time.Second); !errors.Is(err, workers.ErrTooLarge) || errors.Is(err, intake.ErrRejected) {
		t.Errorf("an answer of MaxAnswerBytes+1: %v, want an unknown outcome wrapping workers.ErrTooLarge", err)
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
