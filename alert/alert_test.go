package alert_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/alert"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/workers"
)

const (
	url        = "https://pager.example/v2/enqueue?token=url-secret"
	routingKey = "R0UT1NGKEY0123456789abcdef012345"
	orderID    = "0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e"
)

// recorder answers every request with status (or err) and keeps them.
type recorder struct {
	status int
	err    error
	sent   []*workers.OutgoingRequest
}

func (r *recorder) send(_ context.Context, req *workers.OutgoingRequest) (*workers.OutgoingResponse, error) {
	r.sent = append(r.sent, req)
	if r.err != nil {
		return nil, r.err
	}
	return &workers.OutgoingResponse{Status: r.status, Body: []byte(`{"status":"success","message":"Event processed"}`)}, nil
}

func newPager(r *recorder) *alert.Pager {
	return alert.New(alert.Options{URL: url, RoutingKey: routingKey, Source: "edge-orders", Send: r.send})
}

var unresolved = alert.Event{Kind: alert.KindUnresolved, Key: intake.Key{Client: "desk-a", ID: `k "quoted" \ key`}, OrderID: orderID, Attempts: 7}

// event is the Events API v2 body as PagerDuty reads it.
type event struct {
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	DedupKey    string `json:"dedup_key"`
	Payload     struct {
		Summary       string         `json:"summary"`
		Source        string         `json:"source"`
		Severity      string         `json:"severity"`
		Class         string         `json:"class"`
		CustomDetails map[string]any `json:"custom_details"`
	} `json:"payload"`
}

func TestPageSendsOneEventsAPIv2Trigger(t *testing.T) {
	r := &recorder{status: 202}
	if err := newPager(r).Page(t.Context(), unresolved); err != nil {
		t.Fatalf("Page: %v", err)
	}
	if len(r.sent) != 1 {
		t.Fatalf("%d requests, want 1", len(r.sent))
	}
	req := r.sent[0]
	if req.Method != "POST" || req.URL != url || req.Timeout != alert.DefaultTimeout {
		t.Errorf("request %s %s timeout %v, want POST to the URL within %v", req.Method, req.URL, req.Timeout, alert.DefaultTimeout)
	}
	var e event
	if err := json.Unmarshal(req.Body, &e); err != nil {
		t.Fatalf("body %s is not JSON: %v", req.Body, err)
	}
	if e.RoutingKey != routingKey || e.EventAction != "trigger" || e.DedupKey != "edge-orders/order/"+orderID {
		t.Errorf("routing_key %q event_action %q dedup_key %q, want the key, trigger, edge-orders/order/%s", e.RoutingKey, e.EventAction, e.DedupKey, orderID)
	}
	p := e.Payload
	if p.Source != "edge-orders" || p.Severity != "critical" || p.Class != alert.KindUnresolved || !strings.Contains(p.Summary, orderID) {
		t.Errorf("payload %+v, want source edge-orders, critical, class %s, a summary naming the order", p, alert.KindUnresolved)
	}
	if strings.Contains(p.Summary, unresolved.Key.ID) {
		t.Errorf("summary %q shows the client's key; it belongs in custom_details only", p.Summary)
	}
	want := map[string]any{"client": "desk-a", "idempotency_key": unresolved.Key.ID, "order_id": orderID, "attempts": float64(7)}
	for k, v := range want {
		if p.CustomDetails[k] != v {
			t.Errorf("custom_details[%s] = %v, want %v", k, p.CustomDetails[k], v)
		}
	}
}

func TestDedupKeyIsOnePerOrder(t *testing.T) {
	dead := unresolved
	dead.Kind, dead.Attempts = alert.KindDeadLetter, 3
	if unresolved.DedupKey() != dead.DedupKey() {
		t.Errorf("dedup keys %q and %q for one order, want one: PagerDuty keeps one incident per order", unresolved.DedupKey(), dead.DedupKey())
	}
	other := unresolved
	other.OrderID = "1b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e"
	if other.DedupKey() == unresolved.DedupKey() {
		t.Error("two orders share a dedup key")
	}
	noOrder := alert.Event{Kind: alert.KindDeadLetter, Key: intake.Key{Client: "desk-a", ID: strings.Repeat("k", 255)}}
	if k := noOrder.DedupKey(); len(k) > 255 || strings.Contains(k, "kkk") || k != noOrder.DedupKey() {
		t.Errorf("dedup key without an order %q: want a stable digest of the key, within PagerDuty's 255 characters", k)
	}
}

func TestPageFailuresAreErrorsWithoutSecrets(t *testing.T) {
	tests := []struct {
		name string
		r    *recorder
		want error
	}{
		{"the pager refuses", &recorder{status: 400}, alert.ErrRefused},
		{"the pager is down", &recorder{status: 503}, alert.ErrRefused},
		{"a redirect is not taken", &recorder{status: 302}, alert.ErrRefused},
		{"no answer", &recorder{err: errors.New("fetch to " + url + " failed with " + routingKey)}, nil},
		// The runtime may write the URL back normalised, not as given.
		{"no answer, its host in capitals", &recorder{err: errors.New("fetch to https://PAGER.example/v2/enqueue?token=url-secret failed")}, nil},
		{"no answer, its query alone", &recorder{err: errors.New("bad query token=url-secret")}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := newPager(tc.r).Page(t.Context(), unresolved)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Page = %v, want an error wrapping %v", err, tc.want)
			}
			if strings.Contains(err.Error(), "url-secret") || strings.Contains(err.Error(), routingKey) {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

func TestBudgetBoundsThePagesOfARun(t *testing.T) {
	r := &recorder{status: 202}
	p := newPager(r)
	ctx := alert.WithBudget(t.Context(), alert.NewBudget(2))
	var errs []error
	for range 4 {
		errs = append(errs, p.Page(ctx, unresolved))
	}
	if len(r.sent) != 2 || errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], alert.ErrBudgetSpent) || !errors.Is(errs[3], alert.ErrBudgetSpent) {
		t.Errorf("4 pages on a budget of 2: %d sent, errors %v; want 2 sent, then ErrBudgetSpent", len(r.sent), errs)
	}
	if err := p.Page(t.Context(), unresolved); err != nil || len(r.sent) != 3 {
		t.Errorf("a page outside the run = %v (%d sent), want it sent", err, len(r.sent))
	}
}

// TestATransportErrorShowsNoPartOfTheURLThatMayCarryAToken: a runtime may
// quote the URL in any form, or a part of it alone; each part that may
// carry a token is taken out, and the host stays, to say where the page
// went.
func TestATransportErrorShowsNoPartOfTheURLThatMayCarryAToken(t *testing.T) {
	const hook = "https://ops:pa55word-1@hooks.example/services/T0KEN-PATH?sig=s1gnature-2&v=1#frag-secret-3"
	for _, quoted := range []string{
		hook,
		"https://ops:pa55word-1@HOOKS.example/services/T0KEN-PATH?sig=s1gnature-2&v=1#frag-secret-3",
		"https://hooks.example/services/T0KEN-PATH/",
		"user ops:pa55word-1 refused",
		"signature s1gnature-2 expired",
		"fragment frag-secret-3",
	} {
		r := &recorder{err: errors.New("fetch failed: " + quoted)}
		p := alert.New(alert.Options{URL: hook, RoutingKey: routingKey, Source: "edge-orders", Send: r.send})
		err := p.Page(t.Context(), unresolved)
		if err == nil {
			t.Fatal("Page = nil, want the transport's error")
		}
		for _, secret := range []string{"pa55word-1", "T0KEN-PATH", "s1gnature-2", "frag-secret-3"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("an error quoting %q shows %q: %v", quoted, secret, err)
			}
		}
		if strings.HasPrefix(quoted, "https://hooks") && !strings.Contains(err.Error(), "hooks.example") {
			t.Errorf("an error quoting %q no longer says the host: %v", quoted, err)
		}
	}
}

// TestANormalisedUserInfoIsScrubbed: a URL parser (WHATWG's, as fetch's)
// percent-encodes "=" and other characters in user info, so the URL as
// quoted no longer holds the user info as configured; the password's
// token must not show all the same (a review found it did).
func TestANormalisedUserInfoIsScrubbed(t *testing.T) {
	const hook = "https://ops:c2VjcmV0LXRva2Vu=@hooks.example/v2/enqueue"
	const quoted = "https://ops:c2VjcmV0LXRva2Vu%3D@hooks.example/v2/enqueue" // new URL(hook).href
	r := &recorder{err: errors.New("fetch failed: " + quoted)}
	p := alert.New(alert.Options{URL: hook, RoutingKey: routingKey, Source: "edge-orders", Send: r.send})
	if err := p.Page(t.Context(), unresolved); err == nil || strings.Contains(err.Error(), "c2VjcmV0LXRva2Vu") || !strings.Contains(err.Error(), "hooks.example") {
		t.Errorf("Page = %v: want the password's token gone, and the host", err)
	}
}

// TestAPartlyEncodedUserInfoIsScrubbed: a base64 password, whose "=" a URL
// parser writes as %3D while it keeps each "+": no run between them is
// long enough to be scrubbed alone, and the password must not show all the
// same (a review found it did). So must a password configured with its
// escapes, which the runtime may quote decoded.
func TestAPartlyEncodedUserInfoIsScrubbed(t *testing.T) {
	for _, tc := range []struct{ hook, quoted, secret string }{
		{"https://ops:q8+Zr1x+Y3w+Ta==@hooks.example/v2/enqueue", "https://ops:q8+Zr1x+Y3w+Ta%3D%3D@hooks.example/v2/enqueue", "q8+Zr1x+Y3w+Ta"},
		{"https://ops:q8+Zr1x+Y3w+Ta%3D%3D@hooks.example/v2/enqueue", "https://ops:q8+Zr1x+Y3w+Ta==@hooks.example/v2/enqueue", "q8+Zr1x+Y3w+Ta"},
	} {
		r := &recorder{err: errors.New("fetch failed: " + tc.quoted + " (100%)")}
		p := alert.New(alert.Options{URL: tc.hook, RoutingKey: routingKey, Source: "edge-orders", Send: r.send})
		if err := p.Page(t.Context(), unresolved); err == nil || strings.Contains(err.Error(), tc.secret) || !strings.Contains(err.Error(), "hooks.example") {
			t.Errorf("%s quoted as %s: Page = %v; want the password gone, and the host", tc.hook, tc.quoted, err)
		}
	}
}
