package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
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
	h := httpapi.New(newServiceWith(kv.NewMemory(), opts), httpapi.Options{Log: logTo(&lines)})

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
	h := httpapi.New(newService(kv.NewMemory()), httpapi.Options{Log: logTo(&lines)})
	resp := h.ServePanic("bridge exploded")
	if resp.Status != 500 || !strings.Contains(string(resp.Body), `"error":"internal_error"`) {
		t.Fatalf("ServePanic = %d %s, want the 500 internal_error problem", resp.Status, resp.Body)
	}
	if len(lines) != 1 || !strings.Contains(lines[0].Error, "bridge exploded") || lines[0].Status != 500 {
		t.Fatalf("log lines %+v, want one naming the panic", lines)
	}
}
