// Package httpapi serves the order-intake HTTP contract on top of an intake.Service.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/order"
	"github.com/edge-orders/edge-orders/workers"
)

// Handler answers order submissions.
type Handler struct {
	svc     *intake.Service
	clients *auth.Clients
	// Log, if set, receives one line per request.
	Log func(LogLine)
}

// New returns a Handler for svc. With clients, every request must carry a
// client's bearer token and keys are scoped to the client; with nil, the
// Worker runs open, as the TypeScript reference does.
func New(svc *intake.Service, clients *auth.Clients) *Handler {
	return &Handler{svc: svc, clients: clients}
}

// LogLine describes one request, for Workers Logs. It never holds secrets.
type LogLine struct {
	// Outcome names what happened: created, replayed, or the error code.
	Outcome string
	// Client is the authenticated client id; empty when the Worker runs open.
	Client  string
	Key     string
	Status  int
	OrderID string
	// Error is the internal error text behind an error outcome, such as the
	// KV failure behind a storage_error; clients never see it.
	Error string
	// Millis is the time spent; in a deployed Worker the clock only moves
	// during I/O, so this is mostly storage time.
	Millis int64
}

// JSON returns l as one line of JSON, empty fields and a zero status (lines
// about the Worker rather than a request) left out.
func (l LogLine) JSON() []byte {
	b := append([]byte(`{"outcome":`), jsjson.AppendString(nil, l.Outcome)...)
	for _, f := range []struct{ name, value string }{{"client", l.Client}, {"key", l.Key}, {"orderId", l.OrderID}, {"error", l.Error}} {
		if f.value != "" {
			b = append(b, `,"`+f.name+`":`...)
			b = jsjson.AppendString(b, f.value)
		}
	}
	if l.Status != 0 {
		b = strconv.AppendInt(append(b, `,"status":`...), int64(l.Status), 10)
	}
	b = strconv.AppendInt(append(b, `,"ms":`...), l.Millis, 10)
	return append(b, '}')
}

// ServeWorker implements workers.Handler with the contract in README.md: it
// checks the method and the Idempotency-Key, then submits the body and
// answers with the receipt or the error.
func (h *Handler) ServeWorker(ctx context.Context, r *workers.Request) *workers.Response {
	start := time.Now()
	resp, line := h.serve(ctx, r)
	if h.Log != nil {
		line.Millis = time.Since(start).Milliseconds()
		h.Log(line)
	}
	return resp
}

// serve answers r and describes what it did.
func (h *Handler) serve(ctx context.Context, r *workers.Request) (resp *workers.Response, line LogLine) {
	defer func() {
		// One bad request must not take down the Go instance every request of
		// the isolate shares.
		if recover() != nil {
			resp, line.Outcome, line.Status = errorResponse(errInternal, "", 0)
		}
	}()
	fail := func(err error) (*workers.Response, LogLine) {
		line.Error = err.Error()
		resp, line.Outcome, line.Status = errorResponse(err, "", int(h.svc.RetryAfter().Seconds()))
		return resp, line
	}
	if h.clients != nil {
		client, err := h.clients.Authenticate(r.Header.Get("Authorization"))
		if err != nil {
			resp, line = fail(err)
			challenge := `Bearer realm="edge-orders"`
			if errors.Is(err, auth.ErrInvalidToken) {
				challenge += `, error="invalid_token"`
			}
			resp.Header = append(resp.Header, workers.Field{Name: "WWW-Authenticate", Value: challenge})
			return resp, line
		}
		line.Client = client
	}
	if r.Method != "POST" {
		resp, line = fail(errMethodNotAllowed)
		resp.Header = append(resp.Header, workers.Field{Name: "Allow", Value: "POST"})
		return resp, line
	}
	header := r.Header.Get("Idempotency-Key")
	if header == "" {
		return fail(errMissingKey)
	}
	key, err := parseKey(header)
	line.Key = key
	if err != nil {
		return fail(err)
	}
	out, err := h.svc.Submit(ctx, line.Client, key, r.Body)
	if err != nil {
		return fail(err)
	}
	line.OrderID = out.OrderID
	resp = &workers.Response{Status: statusCreated, Header: []workers.Field{jsonContent}, Body: out.Receipt}
	line.Outcome = "created"
	if out.Replayed {
		resp.Status = statusOK
		resp.Header = append(resp.Header, workers.Field{Name: "Idempotent-Replay", Value: "true"})
		line.Outcome = "replayed"
	}
	line.Status = resp.Status
	return resp, line
}

// parseKey reads an Idempotency-Key header value: the key itself, or the
// IETF draft's Structured Field string form, "..." with \" and \\ escapes,
// which names the same key. intake.CheckKey then checks the key's format.
func parseKey(v string) (string, error) {
	if v == "" || v[0] != '"' {
		return v, nil
	}
	if len(v) < 2 || v[len(v)-1] != '"' {
		return v, fmt.Errorf("%w: a quoted key must end with a quote", intake.ErrInvalidKey)
	}
	inner := v[1 : len(v)-1]
	if !strings.ContainsAny(inner, `"\`) {
		return inner, nil
	}
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		switch {
		case c == '\\' && i+1 < len(inner) && (inner[i+1] == '"' || inner[i+1] == '\\'):
			i++
			b.WriteByte(inner[i])
		case c == '\\' || c == '"':
			return v, fmt.Errorf("%w: in a quoted key only \\\" and \\\\ are escapes", intake.ErrInvalidKey)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Misconfigured returns a handler that answers every request with a 500
// misconfigured error, for a Worker whose environment cannot work. detail says
// what is wrong, naming the setting; it is logged and shown as the problem's
// detail, so it must hold no secret.
func Misconfigured(detail string, log func(LogLine)) workers.Handler {
	return misconfigured{detail: detail, log: log}
}

type misconfigured struct {
	detail string
	log    func(LogLine)
}

func (m misconfigured) ServeWorker(ctx context.Context, r *workers.Request) *workers.Response {
	resp, outcome, status := errorResponse(errMisconfigured, m.detail, 0)
	if m.log != nil {
		m.log(LogLine{Outcome: outcome, Status: status, Error: m.detail})
	}
	return resp
}

var (
	errMethodNotAllowed = errors.New("httpapi: method not allowed")
	errMissingKey       = errors.New("httpapi: missing Idempotency-Key")
	errInternal         = errors.New("httpapi: internal error")
	errMisconfigured    = errors.New("httpapi: misconfigured")
)

// HTTP statuses, named as in net/http, which the Worker does without.
const (
	statusOK                  = 200
	statusCreated             = 201
	statusBadRequest          = 400
	statusUnauthorized        = 401
	statusMethodNotAllowed    = 405
	statusConflict            = 409
	statusRequestTooLarge     = 413
	statusUnprocessableEntity = 422
	statusInternalServerError = 500
	statusServiceUnavailable  = 503
)

var (
	jsonContent    = workers.Field{Name: "Content-Type", Value: "application/json"}
	problemContent = workers.Field{Name: "Content-Type", Value: "application/problem+json"}
)

// ProblemTypePrefix starts every problem's type URI; the error code ends it.
const ProblemTypePrefix = "tag:edge-orders,2026:"

// problem is one row of the error table: what the client sees.
type problem struct {
	status int
	// code is the body's "error" member, the reference's error codes.
	code string
	// title follows the IETF Idempotency-Key draft's wording where it has one.
	title  string
	detail string
	// outcome names the problem in the log line; "" means the code.
	outcome string
}

// problems maps every error the handler can meet to what the client sees.
// Error text never reaches the client: it may hold storage details.
var problems = []struct {
	err error
	problem
}{
	{auth.ErrMissingToken, problem{statusUnauthorized, "unauthorized", "Missing API token",
		"Send a client token as Authorization: Bearer <token>.", "unauthorized"}},
	{auth.ErrInvalidToken, problem{statusUnauthorized, "unauthorized", "Invalid API token",
		"The bearer token belongs to no client.", "unauthorized"}},
	{errMethodNotAllowed, problem{statusMethodNotAllowed, "method_not_allowed", "Method not allowed",
		"Orders are submitted with POST.", ""}},
	{errMissingKey, problem{statusBadRequest, "missing_idempotency_key", "Idempotency-Key is missing",
		"Every order needs an Idempotency-Key header, repeated unchanged on every retry.", ""}},
	{intake.ErrInvalidKey, problem{statusBadRequest, "invalid_idempotency_key", "Idempotency-Key is invalid",
		"An Idempotency-Key is 1 to 255 printable ASCII characters, such as a UUID; it may be sent as a quoted string.", ""}},
	{intake.ErrUnreadableBody, problem{statusBadRequest, "unreadable_body", "Request body could not be read",
		"The request body ended early or could not be read; retry under the same key.", ""}},
	{intake.ErrBodyTooLarge, problem{statusRequestTooLarge, "body_too_large", "Request body is too large",
		"An order body is at most 64 KiB.", ""}},
	{intake.ErrInProgress, problem{statusConflict, "in_progress", "A request is outstanding for this Idempotency-Key",
		"Another request with this Idempotency-Key is being processed; retry after retryAfter seconds at the latest.", ""}},
	{intake.ErrKeyReused, problem{statusUnprocessableEntity, "idempotency_key_reused", "Idempotency-Key is already used",
		"This Idempotency-Key was used for a different order; use a new key for a new order.", "key_reused"}},
	{order.ErrInvalid, problem{statusUnprocessableEntity, "invalid_order", "Invalid order",
		`The body must be a JSON object with symbol (a non-empty string), side ("buy" or "sell") and quantity (a positive integer).`, ""}},
	{intake.ErrUnavailable, problem{statusServiceUnavailable, "storage_unavailable", "Storage unavailable",
		"The order store failed; no order was placed under this key. Retry under the same key.", "storage_error"}},
	{errMisconfigured, problem{statusInternalServerError, "misconfigured", "Worker misconfigured", "", ""}},
}

// internalError is the row for anything the table does not know.
var internalError = problem{statusInternalServerError, "internal_error", "Internal error",
	"The Worker failed unexpectedly; retry under the same key.", ""}

// problemFor finds err's row.
func problemFor(err error) problem {
	for _, p := range problems {
		if errors.Is(err, p.err) {
			return p.problem
		}
	}
	return internalError
}

// errorResponse builds err's row of the table as an RFC 9457 problem, and
// returns the outcome and status for the log. detail, if set, replaces the
// row's; retryAfter, in seconds, is announced with in_progress.
func errorResponse(err error, detail string, retryAfter int) (resp *workers.Response, outcome string, status int) {
	p := problemFor(err)
	outcome = p.outcome
	if outcome == "" {
		outcome = p.code
	}
	if detail == "" {
		detail = p.detail
	}
	resp = &workers.Response{Status: p.status, Header: []workers.Field{problemContent}}
	b := append([]byte(`{"type":`), jsjson.AppendString(nil, ProblemTypePrefix+p.code)...)
	b = jsjson.AppendString(append(b, `,"title":`...), p.title)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(p.status), 10)
	b = jsjson.AppendString(append(b, `,"detail":`...), detail)
	// "error" keeps the reference's codes for clients that read it.
	b = jsjson.AppendString(append(b, `,"error":`...), p.code)
	switch p.status {
	case statusConflict:
		b = strconv.AppendInt(append(b, `,"retryAfter":`...), int64(retryAfter), 10)
		resp.Header = append(resp.Header, workers.Field{Name: "Retry-After", Value: strconv.Itoa(retryAfter)})
	case statusServiceUnavailable:
		resp.Header = append(resp.Header, workers.Field{Name: "Retry-After", Value: "1"})
	}
	resp.Body = append(b, '}')
	return resp, outcome, p.status
}
