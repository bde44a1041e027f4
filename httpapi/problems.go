package httpapi

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/metrics"
	"github.com/edge-orders/edge-orders/order"
	"github.com/edge-orders/edge-orders/workers"
)

// Errors of the transport itself; the lifecycle's are intake's and order's.
var (
	errMethodNotAllowed = errors.New("httpapi: method not allowed")
	errMissingKey       = errors.New("httpapi: missing Idempotency-Key")
	errInvalidKey       = errors.New("httpapi: invalid Idempotency-Key")
	errBodyTooLarge     = errors.New("httpapi: body too large")
	errUnreadableBody   = errors.New("httpapi: body could not be read")
	errInternal         = errors.New("httpapi: internal error")
	errMisconfigured    = errors.New("httpapi: misconfigured")
	// errOriginNotAllowed refuses a CORS preflight from an origin that is
	// not in Options.AllowedOrigins.
	errOriginNotAllowed = errors.New("httpapi: origin not allowed")
)

// HTTP statuses, named as in net/http, which the Worker does without.
const (
	statusOK                  = 200
	statusCreated             = 201
	statusNoContent           = 204
	statusBadRequest          = 400
	statusUnauthorized        = 401
	statusForbidden           = 403
	statusNotFound            = 404
	statusMethodNotAllowed    = 405
	statusConflict            = 409
	statusRequestTooLarge     = 413
	statusUnprocessableEntity = 422
	statusTooManyRequests     = 429
	statusInternalServerError = 500
	statusServiceUnavailable  = 503
)

var (
	jsonContent    = workers.Field{Name: "Content-Type", Value: "application/json"}
	problemContent = workers.Field{Name: "Content-Type", Value: "application/problem+json"}
	// noStore keeps every cache between client and Worker from keeping an order.
	noStore = workers.Field{Name: "Cache-Control", Value: "no-store"}
	// noSniff stops browsers from reading a response as anything but its type.
	noSniff = workers.Field{Name: "X-Content-Type-Options", Value: "nosniff"}
	// replayed marks an answer stored by an earlier request.
	replayed = workers.Field{Name: "Idempotent-Replay", Value: "true"}
)

// rateLimitRetryAfter is the Retry-After of a 429, in seconds: the longest
// period a Rate Limiting binding counts over, so a retry then always finds
// a fresh budget.
const rateLimitRetryAfter = 60

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
	// metric is the problem's outcome in the request's data point.
	metric metrics.Outcome
	// describedBy, if set, is the page that describes the problem, sent
	// as Link: <describedBy>; rel="describedby" (RFC 8288): the published
	// policy, for every problem about the key, as the IETF draft asks.
	describedBy string
}

// The details of an order whose outcome is unknown, being settled or
// unresolved. Both promise the same of a retry, in the same words.
const (
	retryUnderKey = "a retry under the same Idempotency-Key"
	sameOrderID   = "with the same order id, and never places a second order."
	// detailOutcomeUnknown goes with orderId, attempts and nextAttemptAt.
	detailOutcomeUnknown = "The order-management system did not confirm this order, so it may or may not exist. " +
		"The Worker is settling it with the order-management system by itself, and " + retryUnderKey +
		" is safe: it asks again " + sameOrderID
	// detailOutcomeUnknownNoSettler is detailOutcomeUnknown where no
	// settler runs (KV mode without SETTLE_QUEUE): only a retry asks.
	detailOutcomeUnknownNoSettler = "The order-management system did not confirm this order, so it may or may not exist. " +
		"This Worker does not ask again by itself: " + retryUnderKey + " asks again " + sameOrderID
	// detailReceiptUnstored is the stand-in's unknown outcome: no OMS to
	// ask, no settler; the receipt's write failed after the response.
	detailReceiptUnstored = "This order was accepted, but its receipt could not be stored; " + retryUnderKey +
		" stores it " + sameOrderID
	// detailOutcomeUnresolved: the settler gave up (SETTLE_MAX_AGE_SECONDS).
	detailOutcomeUnresolved = "The order-management system never confirmed this order, so it may or may not exist, " +
		"and the Worker stopped asking it. The Idempotency-Key keeps its order id: " + retryUnderKey +
		" still asks the order-management system " + sameOrderID
)

// problems maps every error the handler can meet to what the client sees.
// Error text never reaches the client: it may hold storage details.
var problems = []struct {
	err error
	problem
}{
	{auth.ErrMissingToken, problem{statusUnauthorized, "unauthorized", "Missing API token",
		"Send a client token as Authorization: Bearer <token>.", "unauthorized", metrics.Unauthorized, ""}},
	{auth.ErrInvalidToken, problem{statusUnauthorized, "unauthorized", "Invalid API token",
		"The bearer token belongs to no client.", "unauthorized", metrics.Unauthorized, ""}},
	{errOriginNotAllowed, problem{statusForbidden, "origin_not_allowed", "Origin not allowed",
		"Browsers on this page's origin may not call this Worker: the origin is not one the Worker allows.", "", metrics.OriginNotAllowed, ""}},
	{errMethodNotAllowed, problem{statusMethodNotAllowed, "method_not_allowed", "Method not allowed",
		"Orders are submitted with POST; GET with an Idempotency-Key looks one up.", "", metrics.Invalid, ""}},
	{errMissingKey, problem{statusBadRequest, "missing_idempotency_key", "Idempotency-Key is missing",
		"Every order needs an Idempotency-Key header, repeated unchanged on every retry.", "", metrics.Invalid, PolicyPath}},
	{errInvalidKey, problem{statusBadRequest, "invalid_idempotency_key", "Idempotency-Key is invalid",
		strings.ToUpper(keyFormat[:1]) + keyFormat[1:] + ", such as a UUID, on one header line; it may be sent as a quoted string, and must be if it holds a comma.", "", metrics.Invalid, PolicyPath}},
	{errUnreadableBody, problem{statusBadRequest, "unreadable_body", "Request body could not be read",
		"The request body ended early or could not be read; retry under the same key.", "", metrics.Invalid, ""}},
	{errBodyTooLarge, problem{statusRequestTooLarge, "body_too_large", "Request body is too large",
		"An order body is at most " + strconv.Itoa(MaxBodyBytes>>10) + " KiB.", "", metrics.Invalid, ""}},
	{intake.ErrInProgress, problem{statusConflict, "in_progress", "A request is outstanding for this Idempotency-Key",
		"Another request with this Idempotency-Key is being processed; retry after retryAfter seconds at the latest.", "", metrics.InProgress, PolicyPath}},
	{intake.ErrKeyReused, problem{statusUnprocessableEntity, "idempotency_key_reused", "Idempotency-Key is already used",
		"This Idempotency-Key was used for a different order; use a new key for a new order.", "key_reused", metrics.KeyReused, PolicyPath}},
	{intake.ErrRateLimited, problem{statusTooManyRequests, "rate_limited", "Too many new orders",
		"This client placed more new orders than its budget allows; retry after " + strconv.Itoa(rateLimitRetryAfter) + " seconds at the latest. Replays and lookups are not limited.", "", metrics.RateLimited, ""}},
	{intake.ErrNotFound, problem{statusNotFound, "not_found", "No order for this Idempotency-Key",
		"No receipt is stored under this Idempotency-Key, and no request holds it.", "", metrics.NotFound, ""}},
	{order.ErrInvalid, problem{statusUnprocessableEntity, "invalid_order", "Invalid order",
		`The body must be a JSON object with symbol (a non-empty string), side ("buy" or "sell") and quantity (a positive integer).`, "", metrics.Invalid, ""}},
	{intake.ErrRejected, problem{statusUnprocessableEntity, "order_rejected", "Order rejected",
		"The order-management system refused this order for good; every retry under this key gets this answer.", "rejected", metrics.Rejected, ""}},
	// An unresolved outcome matches ErrOutcomeUnknown too: its row comes first.
	{intake.ErrUnresolved, problem{statusServiceUnavailable, "outcome_unresolved", "Order outcome unresolved",
		detailOutcomeUnresolved, "", metrics.Unresolved, ""}},
	{intake.ErrOutcomeUnknown, problem{statusServiceUnavailable, "outcome_unknown", "Order outcome unknown",
		detailOutcomeUnknown, "", metrics.Unknown, ""}},
	{intake.ErrStorageUnavailable, problem{statusServiceUnavailable, "storage_unavailable", "Storage unavailable",
		"The order store failed before this order's outcome was stored. Retry under the same Idempotency-Key: the retry places the order at most once.", "storage_error", metrics.StorageUnavailable, ""}},
	// The admin API's (admin.go).
	{errNoAdminToken, problem{statusUnauthorized, "unauthorized", "Missing admin token",
		"Send an admin token (ADMIN_TOKENS) as Authorization: Bearer <token>.", "unauthorized", metrics.Unauthorized, ""}},
	{errNotAdminToken, problem{statusUnauthorized, "unauthorized", "Invalid admin token",
		"The bearer token belongs to no admin.", "unauthorized", metrics.Unauthorized, ""}},
	{errClientOnAdmin, problem{statusForbidden, "forbidden", "Client token on the admin API",
		"The admin API takes an admin token (ADMIN_TOKENS), not a client's.", "", metrics.Unauthorized, ""}},
	{errAdminNoRoute, problem{statusNotFound, "no_such_path", "No such admin path",
		"The admin API serves " + ordersPath + ", " + ordersPath + "/{client}/{key} (and /resolve), " + OrderPath + "?client=…&key=… (and " + OrderPath + "/resolve), " +
			DeadLettersPath + ", " + DeadLettersPath + "/{client}/{key} and " + DeadLetterPath + "?client=…&key=….", "", metrics.Invalid, ""}},
	{errAdminMethod, problem{statusMethodNotAllowed, "method_not_allowed", "Method not allowed",
		"This admin path does not take this method; see the Allow header.", "", metrics.Invalid, ""}},
	{errUnknownClient, problem{statusNotFound, "unknown_client", "Unknown client",
		"No client has this id; the open Worker's keys are under the client -.", "", metrics.Invalid, ""}},
	{errInvalidQuery, problem{statusBadRequest, "invalid_query", "Invalid query",
		"This admin path does not take this query; docs/operating.md lists each path's parameters.", "", metrics.Invalid, ""}},
	{intake.ErrBadCursor, problem{statusBadRequest, "invalid_cursor", "Invalid cursor",
		"The cursor is not one a listing handed out; start again without one.", "", metrics.Invalid, ""}},
	{intake.ErrOtherLetter, problem{statusConflict, "dead_letter_changed", "Another dead letter",
		"This key holds another dead letter than the one named, or more than one: nothing was acknowledged. Read the key's letters and name one by its letterId.", "", metrics.Invalid, ""}},
	{errInvalidRequest, problem{statusBadRequest, "invalid_resolution", "Invalid resolution",
		`The body must be a JSON object with status ("accepted" or "rejected"), reason (a string, required for rejected) and note (a string), and no other member.`, "", metrics.Invalid, ""}},
	{intake.ErrOutcomeFinal, problem{statusConflict, "outcome_final", "Outcome already final",
		"This key's outcome is stored already: it can no longer be resolved.", "", metrics.Invalid, ""}},
	{intake.ErrOutcomeOpen, problem{statusConflict, "outcome_not_final", "Outcome not final",
		"This key's outcome is unknown or unresolved: purging it would let a retry place the order again. Resolve it first.", "", metrics.Invalid, ""}},
	{intake.ErrAnswered, problem{statusConflict, "outcome_answered", "Order answered as accepted",
		"The Worker runs without an OMS: its stand-in accepted this order, and its client may have been answered 201. Only accepted can be recorded.", "", metrics.Invalid, ""}},
	{intake.ErrPrecondition, problem{statusConflict, "order_mismatch", "The key holds another order",
		"The key holds another order id than the orderId given: it changed since you looked. Nothing was done; look the key up again.", "", metrics.Invalid, ""}},
	{intake.ErrNoOrder, problem{statusConflict, "no_order", "No order kept for this key",
		"This key was stored without its order, so no receipt can be built for it; only the client's retry, which brings the order, settles it.", "", metrics.Invalid, ""}},
	{errMisconfigured, problem{statusInternalServerError, "misconfigured", "Worker misconfigured", "", "", metrics.Misconfigured, ""}},
}

// describedByLink is the Link header's value naming page as what
// describes the response.
func describedByLink(page string) string { return "<" + page + `>; rel="describedby"` }

// internalError is the row for anything the table does not know.
var internalError = problem{statusInternalServerError, "internal_error", "Internal error",
	"The Worker failed unexpectedly; retry under the same key.", "", metrics.InternalError, ""}

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
// row's; retryAfter, in seconds, is announced with in_progress and with an
// outcome being settled (see retryAfterUntil). A rejection's detail is the OMS's
// reason, and its body names the order: it is built from the stored receipt
// alone, so every replay is the same, byte for byte. An unsettled outcome's
// body names the order, the attempts so far and, while the settler is on
// it, when it asks next; its cause is for the log alone.
func errorResponse(err error, detail string, retryAfter int) (resp *workers.Response, outcome string, status int) {
	p := problemFor(err)
	outcome = p.outcome
	if outcome == "" {
		outcome = p.code
	}
	var rejection *intake.Rejection
	if errors.As(err, &rejection) {
		detail = p.detail
		if rejection.Reason != "" {
			detail = rejection.Reason
		}
	}
	var open *intake.Unsettled
	errors.As(err, &open)
	if detail == "" {
		detail = p.detail
	}
	resp = &workers.Response{Status: p.status, Header: []workers.Field{problemContent, noSniff}}
	if p.describedBy != "" {
		resp.Header = append(resp.Header, workers.Field{Name: "Link", Value: describedByLink(p.describedBy)})
	}
	b := append([]byte(`{"type":`), jsjson.AppendString(nil, ProblemTypePrefix+p.code)...)
	b = jsjson.AppendString(append(b, `,"title":`...), p.title)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(p.status), 10)
	b = jsjson.AppendString(append(b, `,"detail":`...), detail)
	// "error" keeps the reference's codes for clients that read it.
	b = jsjson.AppendString(append(b, `,"error":`...), p.code)
	if rejection != nil {
		b = jsjson.AppendString(append(b, `,"orderId":`...), rejection.OrderID)
		if rejection.Replayed {
			resp.Header = append(resp.Header, replayed)
		}
	}
	if open != nil {
		b = jsjson.AppendString(append(b, `,"orderId":`...), open.OrderID)
		b = strconv.AppendInt(append(b, `,"attempts":`...), int64(open.Attempts), 10)
		if !open.Unresolved() && !open.NextAttempt.IsZero() {
			b = append(jsjson.AppendISOTime(append(b, `,"nextAttemptAt":"`...), open.NextAttempt), '"')
		}
	}
	switch {
	case errors.Is(err, intake.ErrInProgress):
		// Only a claim's end changes this answer: the admin API's other
		// 409s (outcome_final, outcome_not_final, no_order) stay as they
		// are, and say no time to wait.
		b = strconv.AppendInt(append(b, `,"retryAfter":`...), int64(retryAfter), 10)
		resp.Header = append(resp.Header, workers.Field{Name: "Retry-After", Value: strconv.Itoa(retryAfter)})
	case p.status == statusTooManyRequests:
		resp.Header = append(resp.Header, workers.Field{Name: "Retry-After", Value: strconv.Itoa(rateLimitRetryAfter)})
	case p.status == statusServiceUnavailable:
		seconds := 1
		if open != nil && !open.Unresolved() {
			seconds = max(retryAfter, 1)
		}
		resp.Header = append(resp.Header, workers.Field{Name: "Retry-After", Value: strconv.Itoa(seconds)})
	}
	resp.Body = append(b, '}')
	return resp, outcome, p.status
}

// retryAfterUntil is the Retry-After, in whole seconds, of an unsettled
// outcome whose settler asks the OMS next at next: rounded up, so that a
// client's lookup then comes after the attempt; at least 1; and 1 when next
// is zero (not known).
func retryAfterUntil(next, now time.Time) int {
	d := next.Sub(now)
	if next.IsZero() || d <= time.Second {
		return 1
	}
	seconds := d / time.Second
	if d%time.Second != 0 {
		seconds++
	}
	return int(seconds)
}
