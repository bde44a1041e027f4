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
// API_TOKENS serves orders only when OPEN_ACCESS says it runs open, on
// every host, and refuses them with 500 misconfigured otherwise, on
// wrangler dev's loopback host too: the host is never taken for a choice.
// It never runs open with tokens.
func TestWithoutTokensOrdersAreServedOnlyWhereSomeoneChoseIt(t *testing.T) {
	const token = "desk-a-0123456789abcdef"
	tests := []struct {
		name       string
		vars       map[string]string
		host       string
		wantStatus int
		wantLog    string
	}{
		{"no tokens, OPEN_ACCESS=false, wrangler dev", map[string]string{"OPEN_ACCESS": "false"}, localHost, 500, "takes orders from no one"},
		{"no tokens, OPEN_ACCESS=false, deployed", map[string]string{"OPEN_ACCESS": "false"}, "orders.example.com", 500, "takes orders from no one"},
		{"no tokens, OPEN_ACCESS empty, wrangler dev", map[string]string{"OPEN_ACCESS": ""}, localHost, 500, "takes orders from no one"},
		{"no tokens, OPEN_ACCESS=true, deployed", map[string]string{"OPEN_ACCESS": "true"}, "orders.example.com", 201, "accepts orders from anyone"},
		{"no tokens, OPEN_ACCESS=true, wrangler dev", map[string]string{"OPEN_ACCESS": "true"}, localHost, 201, "accepts orders from anyone"},
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

// TestAMalformedSettingIsOneLineAtStart: a setting the Worker cannot run
// with (OPEN_ACCESS=1, a token list that is not one) is logged once as the
// Worker starts, in one line that names it and quotes no secret, before
// any request.
func TestAMalformedSettingIsOneLineAtStart(t *testing.T) {
	tests := []struct {
		name, setting, value, secret string
	}{
		{"OPEN_ACCESS=1", "OPEN_ACCESS", "1", ""},
		{"a bad token list", "API_TOKENS", "desk-a=0123456789abcdef", "0123456789abcdef"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, map[string]string{tc.setting: tc.value})
			app.New(w.env)
			lines := strings.Split(strings.TrimSpace(w.console.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], `"misconfigured"`) || !strings.Contains(lines[0], tc.setting) {
				t.Fatalf("start log = %q, want one misconfigured line naming %s", lines, tc.setting)
			}
			if tc.secret != "" && strings.Contains(lines[0], tc.secret) {
				t.Errorf("the line %s quotes the secret", lines[0])
			}
		})
	}
}
