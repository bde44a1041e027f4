package client

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Errors that errors.Is finds in what the client returns. A *Error from
// the Worker matches the one its problem's code names (see codes); the
// others come from the client itself.
var (
	// ErrInvalidOrder: the Worker refused the order (invalid_order). Final;
	// the key stays free, so a corrected order may reuse it.
	ErrInvalidOrder = errors.New("client: invalid order")
	// ErrKeyReused: the key already names a different order
	// (idempotency_key_reused). Final; a new order needs a new key.
	ErrKeyReused = errors.New("client: idempotency key used for a different order")
	// ErrInProgress: another request held the key at the last attempt
	// (in_progress). Retryable under the same key.
	ErrInProgress = errors.New("client: a request with this key is in progress")
	// ErrNotFound: Lookup found no receipt under the key (not_found).
	ErrNotFound = errors.New("client: no receipt under this key")
	// ErrUnauthorized: the token is missing or belongs to no client
	// (unauthorized).
	ErrUnauthorized = errors.New("client: unauthorized")
	// ErrRateLimited: the Worker refused the request for its rate
	// (rate_limited). The client does not retry it; Error.RetryAfter says
	// when the Worker will take requests again.
	ErrRateLimited = errors.New("client: rate limited")
	// ErrStorageUnavailable: the Worker's storage failed
	// (storage_unavailable). Retryable under the same key.
	ErrStorageUnavailable = errors.New("client: storage unavailable")
	// ErrOutcomeUnknown: the order-management system did not confirm the
	// order (outcome_unknown), so it may or may not exist, and the Worker
	// is settling it with the order-management system by itself.
	// Problem.OrderID is the order, Problem.Attempts the calls so far and
	// Problem.NextAttemptAt when the Worker calls next. Retryable under the
	// same key, which never places a second order: a submission takes the
	// key over and asks the order-management system itself, which settles
	// it in every mode; a lookup finds the outcome only once a settler
	// stored it (none runs in KV mode without a settle queue).
	// An unresolved outcome matches it too.
	ErrOutcomeUnknown = errors.New("client: order outcome unknown")
	// ErrOutcomeUnresolved: the order-management system never confirmed the
	// order and the Worker stopped asking it (outcome_unresolved), so it
	// still may or may not exist. It matches ErrOutcomeUnknown too. The key
	// keeps its order id (Problem.OrderID): keep the key, never send the
	// order under a new one. The client does not retry it, since no answer
	// is seconds away; sending the order again under the same key later
	// still asks the order-management system, with the same order id.
	ErrOutcomeUnresolved = errors.New("client: order outcome unresolved")
	// ErrRejected: the order-management system refused the order for good
	// (order_rejected). Final for the key; Problem.Detail is the reason and
	// Problem.OrderID the refused order.
	ErrRejected = errors.New("client: order rejected")
	// ErrInvalidKey: the key is not 1 to MaxKeyBytes printable ASCII
	// characters, found by the client before sending or by the Worker
	// (missing_idempotency_key, invalid_idempotency_key).
	ErrInvalidKey = errors.New("client: invalid idempotency key")
	// ErrInvalidToken: New refused Options.Token, which holds a character
	// that is not printable ASCII or is a space, such as a newline left by
	// the file it was read from. The error never shows the token.
	ErrInvalidToken = errors.New("client: invalid token")
	// ErrInvalidURL: New refused its baseURL, which is not an absolute
	// http or https URL with a host.
	ErrInvalidURL = errors.New("client: invalid Worker URL")
	// ErrQuantityTooLarge: the quantity is above MaxQuantity; nothing was sent.
	ErrQuantityTooLarge = errors.New("client: quantity too large for the Worker to hold exactly")
	// ErrMalformedReceipt: a 200 or 201 whose body is not a receipt.
	ErrMalformedReceipt = errors.New("client: malformed receipt")
	// ErrUnexpectedResponse: a status the contract does not have (a
	// redirect, say) or a body too large to be the Worker's.
	ErrUnexpectedResponse = errors.New("client: unexpected response")
)

// codes maps the Worker's problem codes to the errors callers act on. The
// other codes (method_not_allowed, unreadable_body, body_too_large,
// misconfigured, internal_error) are in Problem.Code alone.
var codes = map[string]error{
	"invalid_order":           ErrInvalidOrder,
	"idempotency_key_reused":  ErrKeyReused,
	"in_progress":             ErrInProgress,
	"not_found":               ErrNotFound,
	"unauthorized":            ErrUnauthorized,
	"rate_limited":            ErrRateLimited,
	"storage_unavailable":     ErrStorageUnavailable,
	"outcome_unknown":         ErrOutcomeUnknown,
	"outcome_unresolved":      ErrOutcomeUnresolved,
	"order_rejected":          ErrRejected,
	"missing_idempotency_key": ErrInvalidKey,
	"invalid_idempotency_key": ErrInvalidKey,
}

// Problem is an RFC 9457 problem as the Worker writes it.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// Code is the "error" member, such as "in_progress": the stable name
	// to switch on.
	Code string `json:"error"`
	// RetryAfter is the "retryAfter" member, in seconds, sent with 409
	// in_progress; 0 when absent.
	RetryAfter int `json:"retryAfter"`
	// OrderID is the "orderId" member, sent with order_rejected (the order
	// the order-management system refused), and with outcome_unknown and
	// outcome_unresolved (the order id the key keeps).
	OrderID string `json:"orderId"`
	// Attempts is the "attempts" member, sent with outcome_unknown and
	// outcome_unresolved: how many of the Worker's calls to the
	// order-management system for the order ended without an answer stored.
	Attempts int `json:"attempts"`
	// NextAttemptAt is the "nextAttemptAt" member, sent with
	// outcome_unknown when the Worker knows it: when it calls the
	// order-management system for the order next. Zero when absent.
	NextAttemptAt time.Time `json:"nextAttemptAt"`
}

// decodeProblem reads a problem body into p. A member of the wrong type
// loses only that member; the error is for a body that is not a JSON
// object at all.
func decodeProblem(raw []byte, p *Problem) error {
	// nextAttemptAt is read as a string: a time.Time that fails to parse
	// would end the whole decoding, not just its member.
	wire := struct {
		*Problem
		NextAttemptAt string `json:"nextAttemptAt"`
	}{Problem: p}
	err := json.Unmarshal(raw, &wire)
	var typeErr *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &typeErr) {
		return err
	}
	if t, err := time.Parse(time.RFC3339Nano, wire.NextAttemptAt); err == nil {
		p.NextAttemptAt = t
	}
	return nil
}

// Error is a request that failed: the Worker's problem, a response the
// client could not use, or, with StatusCode 0, no response at all.
type Error struct {
	// Method is the request's method, POST or GET.
	Method string
	// Key is the Idempotency-Key sent, to retry the same order under later.
	Key string
	// Attempts is how many requests were sent, the first included.
	Attempts int
	// StatusCode is the last response's status, or 0 when the last attempt
	// got no response (Err then holds the transport error).
	StatusCode int
	// Problem is the decoded body; zero when the body was not a problem,
	// such as a proxy's error page.
	Problem Problem
	// RetryAfter is how long the Worker asked the client to wait: the
	// Retry-After header, or else the problem's retryAfter, at most
	// MaxRetryWait; 0 when it said neither.
	RetryAfter time.Duration
	// ExpiresAt is when the Worker stops serving a stored rejection
	// (ErrRejected) and the key is free again, from a Lookup's
	// Idempotency-Expires header, where the Worker tells it; zero
	// otherwise.
	ExpiresAt time.Time
	// Header and Body are the last response's, for what the fields above do
	// not hold (WWW-Authenticate, say).
	Header http.Header
	Body   []byte
	// Err is the transport error when StatusCode is 0, or why a response
	// could not be used (wrapping ErrMalformedReceipt or
	// ErrUnexpectedResponse); nil for a problem.
	Err error
}

func (e *Error) Error() string {
	what := fmt.Sprintf("client: %s with Idempotency-Key %q failed after %d attempt(s)", e.Method, e.Key, e.Attempts)
	switch {
	case e.StatusCode == 0:
		return fmt.Sprintf("%s: %v", what, e.Err)
	case e.Err != nil:
		return fmt.Sprintf("%s: status %d: %v", what, e.StatusCode, e.Err)
	case e.Problem.Code != "":
		return fmt.Sprintf("%s: status %d %s: %s", what, e.StatusCode, e.Problem.Code, e.Problem.Title)
	default:
		return fmt.Sprintf("%s: status %d", what, e.StatusCode)
	}
}

// Unwrap returns the transport or decoding error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel error for e's problem code.
// An unresolved outcome also matches ErrOutcomeUnknown: either way the
// order may or may not exist.
func (e *Error) Is(target error) bool {
	sentinel, ok := codes[e.Problem.Code]
	if ok && sentinel == target {
		return true
	}
	return sentinel == ErrOutcomeUnresolved && target == ErrOutcomeUnknown
}

// Retryable reports whether sending the same order under the same key
// again soon may still succeed: the outcome is unknown (no response), the
// Worker answered 409 (a request holds the key), or a 500, 502, 503 or
// 504 came back (a Worker that crashed, a proxy's error page, storage
// that failed, an order-management system's answer that was lost). Every
// request carries its key, so a retry never places a second order. Every
// other status is final, and so are two 5xx whose cause no retry mends:
// 500 misconfigured (a setting an operator must fix) and 503
// outcome_unresolved (the Worker stopped asking the order-management
// system, so no answer is seconds away; see ErrOutcomeUnresolved). So is a
// TLS trust failure (see untrusted): the request never left the client,
// and no retry makes the certificate trusted. (A retry that meets one
// returns what an earlier attempt said instead: the order may exist.)
func (e *Error) Retryable() bool {
	switch e.StatusCode {
	case 0:
		return e.Err != nil && !untrusted(e.Err)
	case http.StatusConflict, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	case http.StatusBadRequest:
		return e.Problem.Code == "unreadable_body" // the body ended early; nothing was claimed
	case http.StatusInternalServerError:
		return e.Problem.Code != "misconfigured"
	case http.StatusServiceUnavailable:
		return !errors.Is(e, ErrOutcomeUnresolved)
	}
	return false
}

// IsRetryable reports whether err is a *Error for which Retryable is true:
// the caller may send the same order under Error.Key later, and the client
// itself retried it while its attempts and the context lasted.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable()
}

// untrusted reports whether err is a TLS trust failure: the Worker's
// certificate did not verify (an unknown authority, another host's name,
// an expired certificate). The handshake failed before the request was
// sent, so the order was not placed, and the same certificate fails the
// same way on every retry. errors.As finds the cause in the *Error.
func untrusted(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &hostname) || errors.As(err, &invalid)
}
