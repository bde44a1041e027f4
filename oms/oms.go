// Package oms is the gateway to the order-management system (OMS): each
// order goes out as one JSON POST, to a URL or to a service binding (a
// Worker in front of the OMS), and the answer, read up to MaxAnswerBytes
// and never a redirect followed, as accepted, rejected, or unknown.
package oms

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/internal/sfstring"
	"github.com/edge-orders/edge-orders/workers"
)

// Send makes one HTTP request and returns the whole answer, a redirect
// included, never followed; a request that got no answer (a timeout, a
// lost connection) is an error, and so is an answer longer than the
// request's MaxAnswerBytes (workers.ErrTooLarge). In the Worker it is
// workers.Fetcher's fetch.
type Send func(ctx context.Context, r *workers.OutgoingRequest) (*workers.OutgoingResponse, error)

// Gateway is an intake.Gateway over HTTP.
type Gateway struct {
	opts Options
}

// Options configures a Gateway; URL and Send are required.
type Options struct {
	// URL is where orders are POSTed; with a service binding, the URL its
	// Worker sees.
	URL string
	// Token, if set, is sent as Authorization: Bearer.
	Token string
	// Timeout bounds each call, answer included; zero means no bound.
	Timeout time.Duration
	Send    Send
}

// New returns a Gateway.
func New(opts Options) *Gateway { return &Gateway{opts: opts} }

// MaxAnswerBytes bounds the gateway's answer as read, decoded: an answer
// is a small JSON object, and one longer than this is an unknown outcome,
// not read past the bound.
const MaxAnswerBytes = 64 << 10

// Answer statuses: the "status" member an answer must carry beside the
// orderId. The Worker's request has no such member, so a gateway that
// echoes its request never passes for one that answered.
const (
	StatusAccepted = "accepted"
	StatusRejected = "rejected"
)

// Errors for answers that leave the outcome unknown. None is a rejection:
// a 4xx counts as one only when the gateway says which order it refuses,
// and that it refuses it, so that a misrouted URL, a wrong token (a
// proxy's 404, a 401) or an endpoint that echoes its request never turns
// into orders refused for good.
var (
	// ErrGatewayUnavailable is an answer that says to try again: 408, 429 or 5xx.
	ErrGatewayUnavailable = errors.New("oms: gateway unavailable")
	// ErrRedirected is a 3xx: the Worker follows no redirect, since the
	// origin it names is not the one OMS_URL trusts to place orders.
	ErrRedirected = errors.New("oms: gateway redirected")
	// ErrMalformed is an answer that does not follow the gateway contract:
	// a body that is not a JSON object naming the order with the status
	// its HTTP status means.
	ErrMalformed = errors.New("oms: malformed gateway answer")
)

// Place implements intake.Gateway: it POSTs p as JSON with Idempotency-Key
// set to p.OrderID as the draft's Structured Field string ("<orderId>",
// see KeyHeader), and reads the answer with ReadAnswer. An answer over
// MaxAnswerBytes is an unknown outcome that wraps workers.ErrTooLarge, and
// so is no answer at all.
func (g *Gateway) Place(ctx context.Context, p intake.Placement) error {
	req := &workers.OutgoingRequest{
		Method: "POST",
		URL:    g.opts.URL,
		Header: []workers.Field{
			{Name: "Content-Type", Value: "application/json"},
			{Name: "Idempotency-Key", Value: sfstring.Quote(p.OrderID)},
			// An answer is a few hundred bytes: compressing it saves
			// nothing, and the cap counts it decoded anyway.
			{Name: "Accept-Encoding", Value: "identity"},
		},
		Body:           Body(p),
		Timeout:        g.opts.Timeout,
		MaxAnswerBytes: MaxAnswerBytes,
	}
	if g.opts.Token != "" {
		req.Header = append(req.Header, workers.Field{Name: "Authorization", Value: "Bearer " + g.opts.Token})
	}
	resp, err := g.opts.Send(ctx, req)
	switch {
	case errors.Is(err, workers.ErrTooLarge):
		return errs.Prefix("oms: answer not read", err)
	case err != nil:
		return errs.Prefix("oms: no answer", err)
	}
	return ReadAnswer(p.OrderID, resp)
}

// Body is the JSON the gateway receives for p: orderId, clientId (only
// with API tokens), symbol, side, quantity and acceptedAt, written as the
// Worker's receipts are.
func Body(p intake.Placement) []byte {
	b := append([]byte(`{"orderId":`), jsjson.AppendString(nil, p.OrderID)...)
	if p.Client != "" {
		b = jsjson.AppendString(append(b, `,"clientId":`...), p.Client)
	}
	b = jsjson.AppendString(append(b, `,"symbol":`...), p.Order.Symbol)
	b = jsjson.AppendString(append(b, `,"side":`...), string(p.Order.Side))
	b = jsjson.AppendNumber(append(b, `,"quantity":`...), p.Order.Quantity)
	b = jsjson.AppendISOTime(append(b, `,"acceptedAt":"`...), p.AcceptedAt)
	return append(b, `"}`...)
}

// ReadAnswer reads the gateway's answer for orderID. A 2xx whose body is a
// JSON object with orderID as its "orderId" and "status" StatusAccepted
// accepts the order: it returns nil. A 4xx other than 408 and 429 whose
// body names orderID with "status" StatusRejected refuses it: it returns
// an *intake.Rejection, whose reason is the "reason" member. Every other
// answer is an unknown outcome: an error wrapping ErrGatewayUnavailable,
// ErrRedirected (naming its Location) or ErrMalformed.
func ReadAnswer(orderID string, resp *workers.OutgoingResponse) error {
	status := resp.Status
	statusLine := "HTTP " + strconv.Itoa(status)
	if status >= 300 && status < 400 {
		if resp.Location == "" {
			return errs.Detail(ErrRedirected, statusLine+" without a Location, not followed")
		}
		return errs.Detail(ErrRedirected, statusLine+" to "+resp.Location+", not followed")
	}
	want := StatusAccepted
	switch {
	case status >= 200 && status < 300:
	case status >= 400 && status < 500 && status != 408 && status != 429:
		want = StatusRejected
	default:
		return errs.Detail(ErrGatewayUnavailable, statusLine)
	}
	doc, err := jsjson.Parse(resp.Body, "orderId", "status", "reason")
	switch {
	case err != nil || !doc.IsObject():
		return errs.Detail(ErrMalformed, statusLine+" without a JSON object body")
	case doc.Get("orderId").Kind != jsjson.String || doc.Get("orderId").Str != orderID:
		return errs.Detail(ErrMalformed, statusLine+" for another order, or none: orderId "+strconv.Quote(doc.Get("orderId").Str))
	case doc.Get("status").Kind != jsjson.String || doc.Get("status").Str != want:
		return errs.Detail(ErrMalformed, statusLine+" without the status "+want+": status "+strconv.Quote(doc.Get("status").Str))
	case want == StatusAccepted:
		return nil
	}
	reason := doc.Get("reason").Str
	if reason == "" {
		reason = "refused with " + statusLine
	}
	return &intake.Rejection{Reason: reason}
}
