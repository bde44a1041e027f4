// Package httpapi serves the order-intake HTTP contract on top of an intake.Service.
package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"edge-orders/intake"
	"edge-orders/order"
)

// Handler answers order submissions.
type Handler struct {
	svc *intake.Service
	// Log, if set, receives one line per request.
	Log func(LogLine)
}

// LogLine describes one request, for Workers Logs. It never holds secrets.
type LogLine struct {
	// Outcome names what happened: created, replayed, or the error code.
	Outcome string `json:"outcome"`
	Key     string `json:"key,omitempty"`
	Status  int    `json:"status"`
	OrderID string `json:"orderId,omitempty"`
	// Error is the internal error text behind an error outcome, such as the
	// KV failure behind a storage_error; clients never see it.
	Error string `json:"error,omitempty"`
	// Millis is the time spent; in a deployed Worker the clock only moves
	// during I/O, so this is mostly storage time.
	Millis int64 `json:"ms"`
}

// New returns a Handler for svc.
func New(svc *intake.Service) *Handler {
	return &Handler{svc: svc}
}

// ServeHTTP implements the contract in README.md: it checks the method and the
// Idempotency-Key, then submits the body and writes the receipt or the error.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	line := h.serve(w, r)
	if h.Log != nil {
		line.Millis = time.Since(start).Milliseconds()
		h.Log(line)
	}
}

// serve answers r and describes what it did.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) (line LogLine) {
	key := r.Header.Get("Idempotency-Key")
	line.Key = key
	defer func() {
		// One bad request must not take down the Go instance every request of
		// the isolate shares.
		if recover() != nil {
			line.Outcome, line.Status = writeError(w, errInternal, 0)
		}
	}()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		line.Outcome, line.Status = writeError(w, errMethodNotAllowed, 0)
		return line
	}
	if key == "" {
		line.Outcome, line.Status = writeError(w, errMissingKey, 0)
		return line
	}
	out, err := h.svc.Submit(r.Context(), key, r.Body)
	if err != nil {
		line.Error = err.Error()
		line.Outcome, line.Status = writeError(w, err, h.svc.RetryAfter().Seconds())
		return line
	}
	line.OrderID = out.OrderID
	w.Header().Set("Content-Type", "application/json")
	if out.Replayed {
		w.Header().Set("Idempotent-Replay", "true")
		line.Outcome, line.Status = "replayed", http.StatusOK
	} else {
		line.Outcome, line.Status = "created", http.StatusCreated
	}
	w.WriteHeader(line.Status)
	w.Write(out.Receipt)
	return line
}

var (
	errMethodNotAllowed = errors.New("httpapi: method not allowed")
	errMissingKey       = errors.New("httpapi: missing Idempotency-Key")
	errInternal         = errors.New("httpapi: internal error")
	errMisconfigured    = errors.New("httpapi: misconfigured")
)

// Misconfigured returns a handler that answers every request with a 500
// misconfigured error, for a Worker whose environment cannot work. detail says
// what is wrong; it is logged, not shown to clients.
func Misconfigured(detail string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errMisconfigured, 0)
	})
}

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
	{errMethodNotAllowed, problem{http.StatusMethodNotAllowed, "method_not_allowed", ""}},
	{errMissingKey, problem{http.StatusBadRequest, "missing_idempotency_key", ""}},
	{intake.ErrInvalidKey, problem{http.StatusBadRequest, "invalid_idempotency_key", ""}},
	{intake.ErrUnreadableBody, problem{http.StatusBadRequest, "unreadable_body", ""}},
	{intake.ErrBodyTooLarge, problem{http.StatusRequestEntityTooLarge, "body_too_large", ""}},
	{intake.ErrInProgress, problem{http.StatusConflict, "in_progress", ""}},
	{order.ErrInvalid, problem{http.StatusUnprocessableEntity, "invalid_order", ""}},
	{intake.ErrUnavailable, problem{http.StatusServiceUnavailable, "storage_unavailable", "storage_error"}},
	{errMisconfigured, problem{http.StatusInternalServerError, "misconfigured", ""}},
}

// problemFor finds err's row; anything unexpected is a 500.
func problemFor(err error) problem {
	for _, p := range problems {
		if errors.Is(err, p.err) {
			return p.problem
		}
	}
	return problem{http.StatusInternalServerError, "internal_error", ""}
}

// errorBody is the JSON error body; its member order is the reference's.
type errorBody struct {
	Error      string `json:"error"`
	RetryAfter int    `json:"retryAfter,omitempty"`
}

// writeError writes err's row of the table and returns the outcome and status
// for the log. retryAfter, in seconds, is announced with in_progress.
func writeError(w http.ResponseWriter, err error, retryAfter float64) (outcome string, status int) {
	p := problemFor(err)
	outcome = p.outcome
	if outcome == "" {
		outcome = p.code
	}
	body := errorBody{Error: p.code}
	switch p.status {
	case http.StatusConflict:
		body.RetryAfter = int(retryAfter)
		w.Header().Set("Retry-After", strconv.Itoa(body.RetryAfter))
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(p.status)
	w.Write(b)
	return outcome, p.status
}
