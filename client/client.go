// Package client submits orders to the edge-orders Worker, retrying each order under one Idempotency-Key so that it is placed at most once.
package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/edge-orders/edge-orders/internal/sfstring"
)

// Side is which way an order trades.
type Side string

// The two sides the Worker accepts; it compares them case-sensitively.
const (
	Buy  Side = "buy"
	Sell Side = "sell"
)

// Order is what the client asks the Worker to place. The Worker, not the
// client, validates it: an invalid order comes back as ErrInvalidOrder.
type Order struct {
	Symbol   string `json:"symbol"`
	Side     Side   `json:"side"`
	Quantity int64  `json:"quantity"`
}

// MaxQuantity is the largest quantity the Worker can hold exactly: it reads
// quantities as JavaScript numbers, which round integers above 2⁵³−1, so a
// larger order would be placed for a different quantity than asked.
const MaxQuantity = 1<<53 - 1

// MaxKeyBytes is the longest Idempotency-Key the Worker accepts.
const MaxKeyBytes = 255

// Receipt is the Worker's record of a placed order.
type Receipt struct {
	// OrderID is the order's id, a UUID (laid out as version 4) that the
	// Worker derives from the key, the client's id and the order, never
	// a random one: every replay, lookup and
	// settle of the key carries the same one, and the order-management
	// system receives it as the order's own Idempotency-Key.
	OrderID string `json:"orderId"`
	// Status is "accepted" for every receipt the Worker mints.
	Status     string    `json:"status"`
	Symbol     string    `json:"symbol"`
	Side       Side      `json:"side"`
	Quantity   int64     `json:"quantity"`
	AcceptedAt time.Time `json:"acceptedAt"`
}

// Result is a receipt and how it was obtained.
type Result struct {
	Receipt Receipt
	// Raw is the receipt exactly as the Worker sent it, which is exactly as it
	// stored it: every replay of the key returns these bytes.
	Raw []byte
	// Replay is true when the Worker answered with a receipt stored by an
	// earlier request (Idempotent-Replay: true), always so for Lookup.
	Replay bool
	// StatusCode is 201 for a newly placed order, 200 for a replay.
	StatusCode int
	// ExpiresAt is when the Worker stops serving the receipt and the key
	// is free again, from a Lookup's Idempotency-Expires header: the
	// Worker says it where its store knows it (the ledger), and never for
	// a submission. Zero when not given.
	ExpiresAt time.Time
	// Key is the Idempotency-Key the order was sent under.
	Key string
	// Attempts is how many times the client sent the request, the first
	// included. The Worker may have seen more: net/http itself resends a
	// request carrying an Idempotency-Key when a reused connection closes
	// before any response, which is safe for the same reason retries are.
	Attempts int
}

// Version is the client's version, the JavaScript client's too
// (clients/js/package.json): the twins change together.
const Version = "0.1.0"

// UserAgent is the User-Agent every request carries, so that the Worker's
// logs and an operator's proxy can tell the client and its version apart
// from Go's default one.
const UserAgent = "edge-orders-go-client/" + Version

// Defaults for Options.
const (
	DefaultMaxAttempts = 5
	DefaultBaseDelay   = 100 * time.Millisecond
	DefaultMaxDelay    = 5 * time.Second
	DefaultCallTimeout = 30 * time.Second
)

// MaxRetryWait is the longest the client waits before a retry, whatever a
// Retry-After or Options.MaxDelay asks: a proxy's 503 page must not stall
// a call for days.
const MaxRetryWait = 60 * time.Second

// maxResponseBytes bounds what the client reads of a response; a receipt or
// a problem is well under 1 KiB.
const maxResponseBytes = 1 << 20

// Options tunes a Client; nil, or a zero field, takes the default.
type Options struct {
	// HTTPClient sends the requests; nil means http.DefaultClient. The
	// client sends them through a copy of it that follows no redirect, so
	// that the token and the order never go anywhere but baseURL: a 3xx is
	// an ErrUnexpectedResponse. Its Timeout, if set, bounds each attempt;
	// the context and CallTimeout bound the whole call.
	HTTPClient *http.Client
	// Token, if set, is sent as Authorization: Bearer <Token>. A Worker with
	// API tokens configured refuses requests without one.
	Token string
	// MaxAttempts bounds the requests one call sends, the first included;
	// 1 turns retries off. Default DefaultMaxAttempts.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the backoff: before retry n the client
	// waits a uniformly random time in [0, min(MaxDelay, BaseDelay·2ⁿ⁻¹)]
	// ("full jitter"), so clients that failed together do not retry
	// together. Defaults DefaultBaseDelay and DefaultMaxDelay; either is
	// at most MaxRetryWait.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// CallTimeout bounds each call, every attempt and wait included, as
	// well as ctx does: the earlier of the two ends it. Default
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// Sleep waits d, or until ctx is done and then returns ctx.Err(). Nil
	// means a timer; tests pass one that records d and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now tells the time, for comparing waits with the call's deadline
	// and reading Retry-After dates. Nil means time.Now.
	Now func() time.Time
	// OnRetry, if set, is told before each wait between attempts, on the
	// calling goroutine, for a progress display or a log line: the
	// JavaScript client's onRetry. Its event's Err carries the call's
	// Method and Key, so one hook serves every call of the Client.
	OnRetry func(RetryEvent)
}

// RetryEvent is what Options.OnRetry is told before a wait.
type RetryEvent struct {
	// Attempt is the attempt that failed, 1 for the first.
	Attempt int
	// Err is why: a retryable failure (Err.Retryable() is true).
	Err *Error
	// Wait is how long the client waits before the next attempt.
	Wait time.Duration
}

// Client submits orders to one Worker. It is safe for concurrent use.
type Client struct {
	url  string
	opts Options
}

// String names the client by its Worker's URL, without the URL's user
// information, query and fragment, and never with its token: a caller
// that logs a Client (fmt's %v and %+v) logs no secret.
func (c *Client) String() string { return "client.Client(" + redactURL(c.url) + ")" }

// GoString is String, for fmt's %#v.
func (c *Client) GoString() string { return c.String() }

// New returns a Client for the Worker at baseURL (the Worker answers on
// every path but /idempotency, its policy, so any other URL of it will do). opts may be nil. It returns an
// error wrapping ErrInvalidURL for a baseURL that is not an absolute http
// or https URL with a host, and one wrapping ErrInvalidToken for a token
// that is not printable ASCII without spaces: no retry would mend either.
func New(baseURL string, opts *Options) (*Client, error) {
	c := &Client{url: baseURL}
	if opts != nil {
		c.opts = *opts
	}
	if err := checkURL(baseURL); err != nil {
		return nil, err
	}
	if err := checkToken(c.opts.Token); err != nil {
		return nil, err
	}
	hc := http.DefaultClient
	if c.opts.HTTPClient != nil {
		hc = c.opts.HTTPClient
	}
	noRedirects := *hc
	noRedirects.CheckRedirect = refuseRedirect
	c.opts.HTTPClient = &noRedirects
	if c.opts.MaxAttempts <= 0 {
		c.opts.MaxAttempts = DefaultMaxAttempts
	}
	if c.opts.BaseDelay <= 0 {
		c.opts.BaseDelay = DefaultBaseDelay
	}
	if c.opts.MaxDelay <= 0 {
		c.opts.MaxDelay = DefaultMaxDelay
	}
	if c.opts.CallTimeout <= 0 {
		c.opts.CallTimeout = DefaultCallTimeout
	}
	c.opts.BaseDelay = min(c.opts.BaseDelay, MaxRetryWait)
	c.opts.MaxDelay = min(c.opts.MaxDelay, MaxRetryWait)
	if c.opts.Sleep == nil {
		c.opts.Sleep = sleep
	}
	if c.opts.Now == nil {
		c.opts.Now = time.Now
	}
	return c, nil
}

// refuseRedirect hands the caller the redirect itself: following it would
// send the order to another place, and net/http keeps Authorization on
// the same host, even from https to http.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Submit places order under a new random (version 4 UUID) Idempotency-Key,
// kept across every retry. See SubmitWithKey for the errors.
func (c *Client) Submit(ctx context.Context, order Order) (*Result, error) {
	return c.SubmitWithKey(ctx, uuid.NewString(), order)
}

// SubmitWithKey places order under key, which must name this one logical
// order: a caller that gave up on an earlier call (it returned an error for
// which IsRetryable is true) passes the same key again to learn the outcome
// without placing a second order.
//
// It sends key as the Structured Field string the IETF draft makes the
// header, in quotes with " and \ escaped, so that the Worker reads
// exactly key: a bare "x" would name x, and a bare comma a list.
//
// It retries transport failures but TLS trust failures, 400 unreadable_body, 409 in_progress, 500 (but misconfigured),
// 502, 503 (but outcome_unresolved) and 504, up to Options.MaxAttempts requests, waiting at most
// MaxRetryWait before each, and stops early when the next wait would pass
// ctx's deadline or Options.CallTimeout, which also ends a request in
// flight (a transport error wrapping context.DeadlineExceeded). It returns a *Error for the
// last failure: one wrapping the transport error, or one describing the
// Worker's problem, for which errors.Is matches ErrInvalidOrder,
// ErrKeyReused, ErrInProgress, ErrUnauthorized, ErrRateLimited,
// ErrStorageUnavailable, ErrOutcomeUnknown (with the order id, attempts and
// next attempt in Error.Problem), ErrOutcomeUnresolved (returned at once),
// ErrRejected or ErrInvalidKey. Before sending anything it returns an error
// wrapping ErrInvalidKey for a key that is not 1 to MaxKeyBytes printable
// ASCII characters, and one wrapping ErrQuantityTooLarge for a quantity
// above MaxQuantity. A redirect is an ErrUnexpectedResponse: the client
// never follows one.
func (c *Client) SubmitWithKey(ctx context.Context, key string, order Order) (*Result, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if order.Quantity > MaxQuantity {
		return nil, fmt.Errorf("%w: %d is above %d", ErrQuantityTooLarge, order.Quantity, int64(MaxQuantity))
	}
	body, err := json.Marshal(order)
	if err != nil {
		return nil, fmt.Errorf("client: encoding the order: %w", err)
	}
	return c.do(ctx, http.MethodPost, key, body)
}

// Lookup returns the receipt stored under key without placing anything.
// It retries as SubmitWithKey does, so a lookup that meets a request still
// holding the key, or an order the Worker is settling, waits for its
// outcome. It tells the key's states apart by the *Error it returns:
// ErrInProgress when a request still held the key at the last attempt;
// ErrOutcomeUnknown while the Worker is settling the order with the
// order-management system (Error.Problem has OrderID, Attempts and, when
// known, NextAttemptAt; Error.RetryAfter is the wait until then);
// ErrOutcomeUnresolved, at once, when the Worker stopped asking (check it
// before ErrOutcomeUnknown, which it matches too); ErrRejected when the
// order-management system refused the order; ErrNotFound when the key has
// nothing; and the other errors SubmitWithKey returns. A receipt is
// returned as a Result, with ExpiresAt where the Worker tells it (as
// Error.ExpiresAt for ErrRejected).
func (c *Client) Lookup(ctx context.Context, key string) (*Result, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return c.do(ctx, http.MethodGet, key, nil)
}

// checkKey rejects what the Worker would refuse with invalid_idempotency_key,
// so that a caller's bad key fails at once rather than after a round trip.
func checkKey(key string) error {
	if len(key) == 0 || len(key) > MaxKeyBytes {
		return fmt.Errorf("%w: an Idempotency-Key is 1 to %d printable ASCII characters, not %d", ErrInvalidKey, MaxKeyBytes, len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < ' ' || key[i] > '~' {
			return fmt.Errorf("%w: byte %d is 0x%02x, not printable ASCII", ErrInvalidKey, i, key[i])
		}
	}
	return nil
}

// checkURL refuses a base URL that net/http could only fail to send to
// on every attempt: one it cannot parse, a scheme other than http and
// https (a "localhost:8787" without one parses as scheme "localhost"), or
// no host. Its error names the URL's scheme, never the URL, which may
// carry a token in its query.
func checkURL(baseURL string) error {
	u, err := url.Parse(baseURL)
	if err != nil {
		return fmt.Errorf("%w: it does not parse", ErrInvalidURL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q, want http or https", ErrInvalidURL, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	}
	return nil
}

// redactURL is s without its user information, query and fragment.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(the Worker's URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}

// errCallTimeout is the cause of a call's context that its CallTimeout
// ended: context.DeadlineExceeded, told apart from the caller's deadline.
var errCallTimeout = fmt.Errorf("%w", context.DeadlineExceeded)

// checkToken refuses a token that no Worker holds (printable ASCII, no
// spaces) and that a header cannot carry whole. Its error says where and
// what the character is, never the token.
func checkToken(token string) error {
	for i := 0; i < len(token); i++ {
		if token[i] <= ' ' || token[i] > '~' {
			return fmt.Errorf("%w: byte %d is 0x%02x; a token is printable ASCII without spaces", ErrInvalidToken, i, token[i])
		}
	}
	return nil
}

// do sends the request until it succeeds, fails for good, runs out of
// attempts, or the next wait would outlast ctx or the call's timeout.
func (c *Client) do(ctx context.Context, method, key string, body []byte) (*Result, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.opts.CallTimeout, errCallTimeout)
	defer cancel()
	// What earlier attempts said of the order: the Worker's last answer,
	// and the last retryable failure. Each was retryable, or the call
	// would have returned it.
	var answered, failed *Error
	for attempt := 1; ; attempt++ {
		res, err := c.once(ctx, method, key, body)
		if err != nil {
			return nil, err
		}
		if res.err == nil {
			res.result.Key, res.result.Attempts = key, attempt
			return res.result, nil
		}
		e := res.err
		e.Method, e.Key, e.Attempts = method, key, attempt
		if e.StatusCode == 0 && context.Cause(ctx) == errCallTimeout {
			e.Err = fmt.Errorf("client: the call's %v timeout (Options.CallTimeout) passed: %w", c.opts.CallTimeout, e.Err)
		}
		if known := cmp.Or(answered, failed); known != nil && e.StatusCode == 0 && (untrusted(e.Err) || ctx.Err() != nil) {
			// This attempt says nothing of the order: its request never
			// left (a certificate not trusted: a rotated one, another
			// edge), or the call ended it in flight. What an earlier
			// attempt said stands: an order the Worker is settling, say,
			// which a final error here would hide from a caller who might
			// then send it again under a new key.
			known.Attempts = attempt
			return nil, known
		}
		if !e.Retryable() || attempt >= c.opts.MaxAttempts || ctx.Err() != nil {
			return nil, e
		}
		if failed = e; e.StatusCode != 0 {
			answered = e
		}
		wait := c.wait(attempt, e)
		if deadline, ok := ctx.Deadline(); ok && c.opts.Now().Add(wait).After(deadline) {
			return nil, e
		}
		if c.opts.OnRetry != nil {
			c.opts.OnRetry(RetryEvent{Attempt: attempt, Err: e, Wait: wait})
		}
		if c.opts.Sleep(ctx, wait) != nil {
			return nil, e
		}
	}
}

// outcome is one attempt's result: a receipt, or the failure to report.
type outcome struct {
	result *Result
	err    *Error
}

// once sends one request. Its error is for a request that cannot be
// built, which no retry would mend: the call returns it at once.
func (c *Client) once(ctx context.Context, method, key string, body []byte) (outcome, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, nil)
	if err != nil {
		return outcome{}, fmt.Errorf("client: %w", err)
	}
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Idempotency-Key", sfstring.Quote(key)) // the sf-string that names exactly key
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", UserAgent)
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		// net/http names the URL, its query and user name included: keep
		// them out of the message, as checkURL does.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redactURL(ue.URL)
		}
		return outcome{err: &Error{Err: err}}, nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		// The connection broke mid-response: as unknown an outcome as no
		// response at all.
		return outcome{err: &Error{Err: err}}, nil
	}
	if len(raw) > maxResponseBytes {
		return outcome{err: &Error{StatusCode: resp.StatusCode, Header: resp.Header,
			Err: fmt.Errorf("%w: body over %d bytes", ErrUnexpectedResponse, maxResponseBytes)}}, nil
	}
	return c.read(resp, raw), nil
}

// read turns a complete response into a receipt or an Error.
func (c *Client) read(resp *http.Response, raw []byte) outcome {
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
		r, err := parseReceipt(raw)
		if err != nil {
			return outcome{err: &Error{StatusCode: resp.StatusCode, Header: resp.Header, Body: raw, Err: err}}
		}
		return outcome{result: &Result{
			Receipt:    r,
			Raw:        raw,
			Replay:     resp.Header.Get("Idempotent-Replay") == "true",
			StatusCode: resp.StatusCode,
			ExpiresAt:  expiresAt(resp.Header),
		}}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return outcome{err: &Error{StatusCode: resp.StatusCode, Header: resp.Header, Body: raw,
			Err: fmt.Errorf("%w: status %d, a redirect, which the client never follows", ErrUnexpectedResponse, resp.StatusCode)}}
	case resp.StatusCode < 400:
		return outcome{err: &Error{StatusCode: resp.StatusCode, Header: resp.Header, Body: raw,
			Err: fmt.Errorf("%w: status %d", ErrUnexpectedResponse, resp.StatusCode)}}
	}
	e := &Error{StatusCode: resp.StatusCode, Header: resp.Header, Body: raw}
	// A body that is not a problem (a proxy's error page, say) leaves
	// Problem zero, and the status alone decides; a member of the wrong
	// type loses only that member, so the code still counts.
	if err := decodeProblem(raw, &e.Problem); err != nil {
		e.Problem = Problem{}
	}
	e.RetryAfter = c.retryAfter(resp.Header.Get("Retry-After"), e.Problem.RetryAfter)
	e.ExpiresAt = expiresAt(resp.Header)
	return outcome{err: e}
}

// expiresAt reads the Idempotency-Expires header, a date as the receipt's
// acceptedAt is written; zero when absent or not such a date.
func expiresAt(h http.Header) time.Time {
	t, err := time.Parse(time.RFC3339Nano, h.Get("Idempotency-Expires"))
	if err != nil {
		return time.Time{}
	}
	return t
}

// parseReceipt decodes a receipt, refusing one without an order id or a
// time: a 2xx that is not a receipt must not pass for a placed order.
func parseReceipt(raw []byte) (Receipt, error) {
	var r Receipt
	if err := json.Unmarshal(raw, &r); err != nil {
		return Receipt{}, fmt.Errorf("%w: %v", ErrMalformedReceipt, err)
	}
	if r.OrderID == "" || r.AcceptedAt.IsZero() {
		return Receipt{}, fmt.Errorf("%w: no orderId or acceptedAt", ErrMalformedReceipt)
	}
	return r, nil
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date, and
// falls back on the problem's retryAfter seconds; 0 means neither said.
// Either is capped at MaxRetryWait.
func (c *Client) retryAfter(header string, body int) time.Duration {
	header = strings.TrimSpace(header)
	switch s, err := strconv.ParseInt(header, 10, 64); {
	case err == nil && s >= 0:
		return seconds(s)
	case errors.Is(err, strconv.ErrRange) && header[0] != '-':
		// Digits past an int64 (RFC 9110's delay-seconds has no bound):
		// longer than the cap.
		return MaxRetryWait
	}
	if t, err := http.ParseTime(header); err == nil {
		// Compared before subtracting: a Duration holds 292 years.
		if t.After(c.opts.Now().Add(MaxRetryWait)) {
			return MaxRetryWait
		}
		return max(t.Sub(c.opts.Now()), 0)
	}
	if body > 0 {
		return seconds(int64(body))
	}
	return 0
}

// seconds is s seconds, at most MaxRetryWait.
func seconds(s int64) time.Duration {
	if s > int64(MaxRetryWait/time.Second) {
		return MaxRetryWait
	}
	return time.Duration(s) * time.Second
}

// wait is how long to wait before the retry that follows attempt.
//
// A 409's retryAfter is an upper bound: the claim it reports expires by
// then even if its holder died, but a live request usually finishes in
// well under a second (docs/http.md), so the backoff applies,
// capped by it. Any other Retry-After (503's, say) is the least the server
// asked the client to wait, as RFC 9110 has it.
func (c *Client) wait(attempt int, e *Error) time.Duration {
	d := backoff(attempt, c.opts.BaseDelay, c.opts.MaxDelay, rand.Int64N)
	switch {
	case e.RetryAfter <= 0:
		return d
	case e.StatusCode == http.StatusConflict:
		return min(d, e.RetryAfter)
	default:
		return max(d, e.RetryAfter)
	}
}

// backoff is the full-jitter wait after attempt (1 for the first): uniform
// in [0, min(maxDelay, base·2^(attempt-1))]. randN returns a uniform value
// in [0, n).
func backoff(attempt int, base, maxDelay time.Duration, randN func(n int64) int64) time.Duration {
	ceiling := base
	for i := 1; i < attempt && ceiling < maxDelay; i++ {
		if ceiling > maxDelay/2 {
			ceiling = maxDelay
			break
		}
		ceiling *= 2
	}
	ceiling = min(ceiling, maxDelay)
	return time.Duration(randN(int64(ceiling) + 1))
}

// sleep is the default Options.Sleep.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
