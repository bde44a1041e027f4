package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/workers"
)

// TestWithoutTokensOrdersAreServedOnlyWhereSomeoneChoseIt: a Worker without
// API_TOKENS serves orders on wrangler dev's loopback host, answers a
// deployed Worker's public host with 500 misconfigured until OPEN_ACCESS
// says it runs open, and never runs open with tokens.
func TestWithoutTokensOrdersAreServedOnlyWhereSomeoneChoseIt(t *testing.T) {
	const token = "desk-a-0123456789abcdef"
	tests := []struct {
		name       string
		vars       map[string]string
		host       string
		wantStatus int
		wantLog    string
	}{
		{"no tokens, wrangler dev", nil, localHost, 201, "loopback address only"},
		{"no tokens, deployed", nil, "edge-orders.example.workers.dev", 500, "loopback address only"},
		{"no tokens, OPEN_ACCESS=false, deployed", map[string]string{"OPEN_ACCESS": "false"}, "orders.example.com", 500, "loopback address only"},
		{"no tokens, OPEN_ACCESS=true, deployed", map[string]string{"OPEN_ACCESS": "true"}, "orders.example.com", 201, "accepts orders from anyone"},
		{"tokens, deployed", map[string]string{"API_TOKENS": "desk-a:" + token}, "orders.example.com", 201, ""},
		{"tokens and OPEN_ACCESS=true is misconfigured", map[string]string{"API_TOKENS": "desk-a:" + token, "OPEN_ACCESS": "true"}, localHost, 500, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.vars)
			h := app.New(w.env).Handler
			header := http.Header{"Idempotency-Key": {"k1"}, "Authorization": {"Bearer " + token}}
			resp := h.ServeWorker(context.Background(), &workers.Request{Method: "POST", Host: tc.host, Header: header,
				Body: workers.ReaderBody(strings.NewReader(body))})
			if resp.Status != tc.wantStatus {
				t.Fatalf("POST to %s = %d %s, want %d", tc.host, resp.Status, resp.Body, tc.wantStatus)
			}
			if tc.wantStatus == 500 && !strings.Contains(string(resp.Body), `"error":"misconfigured"`) {
				t.Errorf("body = %s, want misconfigured", resp.Body)
			}
			if !strings.Contains(w.console.String(), tc.wantLog) {
				t.Errorf("log = %s, want a line with %q", w.console.String(), tc.wantLog)
			}
		})
	}
}
