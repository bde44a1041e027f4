// Package httpapi serves the order-intake HTTP contract on top of an intake.Service.
package httpapi

import (
	"context"
	"errors"
	"strconv"
	"time"

	"edge-orders/intake"
	"edge-orders/internal/jsjson"
	"edge-orders/order"
	"edge-orders/worker"
)

// Handler answers order submissions.
type Handler struct {
	svc *intake.Service
	// Log, if set, receives one line per request.
	Log func(LogLine)
}

// New returns a Handler for svc.
func New(svc *intake.Service) *Handler {
	return &Handler{svc: svc}
}

// LogLine describes one request, for Workers Logs. It never holds secrets.
type LogLine struct {
	// Outcome names what happened: created, replayed, or the error code.
	Outcome string
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

// JSON returns l as one line of JSON, empty fields left out.
func (l LogLine) JSON() []byte {
	b := append([]byte(`{"outcome":`), jsjson.AppendString(nil, l.Outcome)...)
	for _, f := range []struct{ name, value string }{{"key", l.Key}, {"orderId", l.OrderID}, {"error", l.Error}} {
		if f.value != "" {
			b = append(b, `,"`+f.name+`":`...)
			b = jsjson.AppendString(b, f.value)
		}
	}
	b = strconv.AppendInt(append(b, `,"status":`...), int64(l.Status), 10)
	b = strconv.AppendInt(append(b, `,"ms":`...), l.Millis, 10)
	return append(b, '}')
}

// ServeWorker implements worker.Handler with the contract in README.md: it
// checks the method and the Idempotency-Key, then submits the body and
// answers with the receipt or the error.
func (h *Handler) ServeWorker(ctx context.Context, r *worker.Request) *worker.Response {
	start := time.Now()
	resp, line := h.serve(ctx, r)
	if h.Log != nil {
		line.Millis = time.Since(start).Milliseconds()
		h.Log(line)
	}
	return resp
}

// serve answers r and describes what it did.
func (h *Handler) serve(ctx context.Context, r *worker.Request) (resp *worker.Response, line LogLine) {
	key := r.Header.Get("Idempotency-Key")
	line.Key = key
	defer func() {
		// One bad request must not take down the Go instance every request of
		// the isolate shares.
		if recover() != nil {
			resp, line.Outcome, line.Status = errorResponse(errInternal, 0)
		}
	}()
	if r.Method != "POST" {
		resp, line.Outcome, line.Status = errorResponse(errMethodNotAllowed, 0)
		resp.Header = append(resp.Header, worker.Field{Name: "Allow", Value: "POST"})
		return resp, line
	}
	if key == "" {
		resp, line.Outcome, line.Status = errorResponse(errMissingKey, 0)
		return resp, line
	}
	out, err := h.svc.Submit(ctx, key, r.Body)
	if err != nil {
		line.Error = err.Error()
		resp, line.Outcome, line.Status = errorResponse(err, int(h.svc.RetryAfter().Seconds()))
		return resp, line
	}
	line.OrderID = out.OrderID
	resp = &worker.Response{Status: statusCreated, Header: []worker.Field{jsonContent}, Body: out.Receipt}
	line.Outcome = "created"
	if out.Replayed {
		resp.Status = statusOK
		resp.Header = append(resp.Header, worker.Field{Name: "Idempotent-Replay", Value: "true"})
		line.Outcome = "replayed"
	}
	line.Status = resp.Status
	return resp, line
}

// Misconfigured returns a handler that answers every request with a 500
// misconfigured error, for a Worker whose environment cannot work. detail says
// what is wrong; it is logged, not shown to clients.
func Misconfigured(detail string, log func(LogLine)) worker.Handler {
	return misconfigured{detail: detail, log: log}
}

type misconfigured struct {
	detail string
	log    func(LogLine)
}

func (m misconfigured) ServeWorker(ctx context.Context, r *worker.Request) *worker.Response {
	resp, outcome, status := errorResponse(errMisconfigured, 0)
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
	statusMethodNotAllowed    = 405
	statusConflict            = 409
	statusRequestTooLarge     = 413
	statusUnprocessableEntity = 422
	statusInternalServerError = 500
	statusServiceUnavailable  = 503
)

var jsonContent = worker.Field{Name: "Content-Type", Value: "application/json"}

// problem is one row of the error table: the HTTP status and the code clients
// read from the body's "error" member.
type problem struct {
	status  int
	code    string
	outcome string // for the log line; the code unless it says more
}

// problems maps every error the handler can meet to what the client sees.
// Error text never reaches the client: it may hold storage details.
var problems = []struct {
	err error
	problem
}{
	{errMethodNotAllowed, problem{statusMethodNotAllowed, "method_not_allowed", ""}},
	{errMissingKey, problem{statusBadRequest, "missing_idempotency_key", ""}},
	{intake.ErrInvalidKey, problem{statusBadRequest, "invalid_idempotency_key", ""}},
	{intake.ErrUnreadableBody, problem{statusBadRequest, "unreadable_body", ""}},
	{intake.ErrBodyTooLarge, problem{statusRequestTooLarge, "body_too_large", ""}},
	{intake.ErrInProgress, problem{statusConflict, "in_progress", ""}},
	{order.ErrInvalid, problem{statusUnprocessableEntity, "invalid_order", ""}},
	{intake.ErrUnavailable, problem{statusServiceUnavailable, "storage_unavailable", "storage_error"}},
	{errMisconfigured, problem{statusInternalServerError, "misconfigured", ""}},
}

// problemFor finds err's row; anything unexpected is a 500.
func problemFor(err error) problem {
	for _, p := range problems {
		if errors.Is(err, p.err) {
			return p.problem
		}
	}
	return problem{statusInternalServerError, "internal_error", ""}
}

// errorResponse builds err's row of the table and returns the outcome and
// status for the log. retryAfter, in seconds, is announced with in_progress.
func errorResponse(err error, retryAfter int) (resp *worker.Response, outcome string, status int) {
	p := problemFor(err)
	outcome = p.outcome
	if outcome == "" {
		outcome = p.code
	}
	resp = &worker.Response{Status: p.status, Header: []worker.Field{jsonContent}}
	// The reference's member order: error, then retryAfter.
	body := append([]byte(`{"error":`), jsjson.AppendString(nil, p.code)...)
	switch p.status {
	case statusConflict:
		body = strconv.AppendInt(append(body, `,"retryAfter":`...), int64(retryAfter), 10)
		resp.Header = append(resp.Header, worker.Field{Name: "Retry-After", Value: strconv.Itoa(retryAfter)})
	case statusServiceUnavailable:
		resp.Header = append(resp.Header, worker.Field{Name: "Retry-After", Value: "1"})
	}
	resp.Body = append(body, '}')
	return resp, outcome, p.status
}
