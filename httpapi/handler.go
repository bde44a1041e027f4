// Package httpapi serves the order-intake HTTP contract on top of an
// intake.Service: it authenticates, reads the Idempotency-Key and the body
// under their limits, and maps every outcome to a response.
package httpapi

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/internal/panichook"
	"github.com/edge-orders/edge-orders/metrics"
	"github.com/edge-orders/edge-orders/order"
	"github.com/edge-orders/edge-orders/workers"
)

// MaxBodyBytes bounds the order body; an order is well under 1 KiB.
const MaxBodyBytes = 64 << 10

// MaxIdempotencyKeyBytes is the longest Idempotency-Key accepted: enough for UUIDs,
// ULIDs and any key the IETF Idempotency-Key draft shows. With a client id
// of up to auth.MaxClientIDBytes and a prefix in front, it stays far below
// KV's 512-byte key limit.
const MaxIdempotencyKeyBytes = 255

// allowedMethods is the Allow header of a 405: orders are POSTed and
// looked up with GET (or HEAD, its headers alone).
const allowedMethods = "GET, HEAD, POST"

// keyFormat says what a valid Idempotency-Key is, for error messages.
var keyFormat = "an Idempotency-Key is 1 to " + strconv.Itoa(MaxIdempotencyKeyBytes) + " printable ASCII characters"

// Options configures a Handler.
type Options struct {
	// Clients holds the API clients. With clients, every request must carry
	// a client's bearer token and keys are scoped to the client; with nil,
	// the Worker runs open, as the TypeScript reference does, unless
	// Closed.
	Clients *auth.Clients
	// Closed, with nil Clients, refuses every request but the policy page
	// with a 500 misconfigured naming the settings that choose: a Worker
	// with neither API_TOKENS nor OPEN_ACCESS "true", which a deploy
	// refuses (wrangler.toml's [secrets]), so only a secret deleted since
	// meets it. Which host a request names never matters: under
	// `wrangler dev --ip 0.0.0.0` anyone may name localhost.
	Closed bool
	// Log receives one line per request.
	Log eventlog.Sink
	// Now tells the time an unsettled outcome's Retry-After counts from,
	// and a data point's times; nil means time.Now.
	Now func() time.Time
	// Metrics, if set, gets one data point per request answered, made
	// where its log line is: its outcome, status, client and times, and
	// the storage calls and gateway time counted in the metrics.Tally of
	// the request's context. Its Mode is left for the caller to fill.
	Metrics func(metrics.Point)
	// AllowedOrigins are the origins whose pages a browser lets call the
	// Worker (CORS): exact origins as browsers send them in the Origin
	// header, such as https://desk.example.com (config.Load checks them).
	// A preflight from one is answered 204 before the token check, and
	// every response to one lets the page read it. Empty turns CORS off:
	// an OPTIONS is then answered 405 like any other method, and no
	// response carries a CORS header.
	AllowedOrigins []string
	// Admins holds the admin API's tokens, by name; with Admin, the
	// admin API answers under AdminPrefix (admin.go). Nil leaves it off:
	// those paths are answered as any other.
	Admins *auth.Clients
	Admin  *intake.Admin
	// DeadLetters, if set, are what the admin API lists at DeadLettersPath.
	DeadLetters intake.DeadLetters
}

// Handler answers order submissions and key lookups, and publishes the
// idempotency policy at PolicyPath.
type Handler struct {
	svc     *intake.Service
	opts    Options
	origins origins
	// policy is the page at PolicyPath, built once: its figures are the
	// Service's, which never change.
	policy []byte
	// settles is the Service's Policy.Settles: without a settler (the
	// stand-in), an unknown outcome is a receipt whose write failed.
	settles bool
	// settlerRuns is the Service's Policy.SettlerRuns: without one, no
	// nextAttemptAt is promised.
	settlerRuns bool
}

// New returns a Handler for svc.
func New(svc *intake.Service, opts Options) *Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Handler{svc: svc, opts: opts, origins: newOrigins(opts.AllowedOrigins), policy: policyPage(svc.Policy(), opts.Clients != nil),
		settles: svc.Policy().Settles, settlerRuns: svc.Policy().SettlerRuns}
}

// ServeWorker implements workers.Handler with the contract in api/openapi.yaml.
func (h *Handler) ServeWorker(ctx context.Context, r *workers.Request) *workers.Response {
	if h.opts.Admins != nil && h.opts.Admin != nil && isAdminPath(r.Path) {
		// No CORS header lets another origin's page read the admin API,
		// but with CORS on its answers vary by Origin as every other.
		resp := h.serveAdmin(ctx, r)
		if h.origins != nil {
			resp.Header = append(resp.Header, varyOrigin)
		}
		return resp
	}
	start := time.Now()
	var m *measure
	if h.opts.Metrics != nil {
		m = &measure{start: h.opts.Now()}
		ctx, m.tally = metrics.WithTally(ctx)
	}
	var origin string
	if h.origins != nil {
		origin = r.Header.Get("Origin")
	}
	resp, line := h.origins.preflight(r, origin)
	switch {
	case resp == nil:
		resp, line = h.serve(ctx, r, m)
		h.origins.annotate(resp, origin)
	case m != nil:
		m.outcome = metrics.Preflight
		if line.Status != statusNoContent {
			m.outcome = metrics.OriginNotAllowed
		}
	}
	line.Millis = time.Since(start).Milliseconds()
	h.opts.Log.Log(line)
	if m != nil {
		h.opts.Metrics(m.point(line, r.Method, h.opts.Now()))
	}
	return resp
}

// measure is what a request's data point needs beyond its log line.
type measure struct {
	start time.Time
	tally *metrics.Tally
	// outcome is the metric's; "" takes the log line's problem.
	outcome  metrics.Outcome
	attempts int
	// acceptedAt is a replay's order's.
	acceptedAt time.Time
}

// point is the request's data point, answered at now as line says.
func (m *measure) point(line eventlog.Line, method string, now time.Time) metrics.Point {
	p := metrics.Point{Client: line.Client, Outcome: m.outcome, Status: line.Status, Event: metrics.EventOf(method),
		Took: now.Sub(m.start), Gateway: m.tally.Gateway(), GatewayCalls: m.tally.GatewayCalls(), StorageCalls: m.tally.StorageCalls(), Attempts: m.attempts}
	if p.Outcome == metrics.Replay && !m.acceptedAt.IsZero() {
		p.SinceAccepted = now.Sub(m.acceptedAt)
	}
	return p
}

// serve answers r and describes what it did: in line, and in m if set.
func (h *Handler) serve(ctx context.Context, r *workers.Request, m *measure) (resp *workers.Response, line eventlog.Line) {
	defer func() {
		// One bad request must not take down the Go instance every request of
		// the isolate shares.
		if p := recover(); p != nil {
			resp, line.Outcome, line.Status = errorResponse(errInternal, "", 0)
			line.Error = "panic: " + errs.PanicText(p)
			if m != nil {
				m.outcome = metrics.InternalError
			}
		}
	}()
	fail := func(err error) (*workers.Response, eventlog.Line) {
		line.Error = err.Error()
		if m != nil {
			m.outcome = problemFor(err).metric
		}
		var rejection *intake.Rejection
		if errors.As(err, &rejection) {
			line.OrderID = rejection.OrderID
			if rejection.Replayed {
				line.Outcome = "replayed"
				if m != nil {
					m.outcome, m.acceptedAt = metrics.Replay, rejection.AcceptedAt
				}
			}
		}
		retryAfter := int(h.svc.RetryAfter().Seconds())
		var open *intake.Unsettled
		if errors.As(err, &open) {
			// The cause stays in line.Error: the body never shows it.
			line.OrderID = open.OrderID
			retryAfter = retryAfterUntil(open.NextAttempt, h.opts.Now())
			if m != nil {
				m.attempts = open.Attempts
			}
		}
		detail := ""
		switch {
		case open != nil && !h.settles:
			detail = detailReceiptUnstored
		case open != nil && !open.Unresolved() && !h.settlerRuns:
			// Nothing will ask at NextAttempt: the body promises no
			// attempt, and Retry-After keeps the backoff for the client.
			detail = detailOutcomeUnknownNoSettler
			u := *open
			u.NextAttempt = time.Time{}
			err = &u
		}
		resp, outcome, status := errorResponse(err, detail, retryAfter)
		if rejection != nil && (r.Method == "GET" || r.Method == "HEAD") {
			resp.Header = appendExpires(resp.Header, rejection.Expires)
		}
		if line.Outcome == "" {
			line.Outcome = outcome
		}
		line.Status = status
		return resp, line
	}
	if r.Method == "GET" && r.Path == PolicyPath {
		// Public, and no key route: whatever its headers, a GET of the
		// policy reads nothing else of the request and touches no storage.
		if m != nil {
			m.outcome = metrics.Policy
		}
		return policyResponse(h.policy), eventlog.Line{Outcome: string(metrics.Policy), Status: statusOK}
	}
	if h.opts.Clients == nil && h.opts.Closed {
		resp, line.Outcome, line.Status = errorResponse(errMisconfigured, detailNoTokens, 0)
		line.Error = detailNoTokens
		if m != nil {
			m.outcome = metrics.Misconfigured
		}
		return resp, line
	}
	if h.opts.Clients == nil && h.opts.Admins != nil && r.Header.Get("Authorization") != "" {
		// An admin's token never places an order, even where any caller may.
		if _, err := h.opts.Admins.Authenticate(r.Header.Get("Authorization")); err == nil {
			resp, line = fail(auth.ErrInvalidToken)
			resp.Header = append(resp.Header, workers.Field{Name: "WWW-Authenticate", Value: `Bearer realm="edge-orders", error="invalid_token"`})
			return resp, line
		}
	}
	if h.opts.Clients != nil {
		client, err := h.opts.Clients.Authenticate(r.Header.Get("Authorization"))
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
	// HEAD is a GET whose body the runtime drops: a lookup, and a 400
	// without a key, as a GET is.
	lookup := r.Method == "GET" || r.Method == "HEAD"
	if r.Method != "POST" && !lookup {
		resp, line = fail(errMethodNotAllowed)
		resp.Header = append(resp.Header, workers.Field{Name: "Allow", Value: allowedMethods})
		return resp, line
	}
	header := r.Header.Get("Idempotency-Key")
	if header == "" {
		return fail(errMissingKey)
	}
	id, err := parseKey(header)
	line.Key = id
	if err != nil {
		return fail(err)
	}
	key := intake.Key{Client: line.Client, ID: id, Quoted: header[0] == '"'}
	panichook.At(panichook.Early, id)

	var out intake.Outcome
	if lookup {
		out, err = h.svc.Lookup(ctx, key)
	} else {
		var body []byte
		if body, err = r.Body.ReadAll(MaxBodyBytes); err != nil {
			return fail(bodyError(err))
		}
		// The open Worker's rate limit counts per caller (rateCaller); a
		// client's counts per client, and its request never reads the
		// address.
		var caller string
		if key.Client == "" {
			caller = rateCaller(r.Header.Get("CF-Connecting-IP"))
		}
		out, err = h.svc.Submit(ctx, key, body, caller)
	}
	if err != nil {
		return fail(err)
	}
	line.OrderID = out.OrderID
	resp = &workers.Response{Status: statusCreated, Header: []workers.Field{jsonContent, noStore, noSniff}, Body: out.Receipt}
	line.Outcome = "created"
	if m != nil {
		m.outcome = metrics.New
	}
	if out.Replayed {
		resp.Status = statusOK
		resp.Header = append(resp.Header, replayed)
		line.Outcome = "replayed"
		if m != nil {
			m.outcome, m.acceptedAt = metrics.Replay, order.ReceiptAcceptedAt(out.Receipt)
		}
	}
	resp.Header = appendExpires(resp.Header, out.Expires)
	line.Status = resp.Status
	return resp, line
}

// detailNoTokens is the 500's detail for a Worker that is neither given
// tokens nor told to run open.
const detailNoTokens = "No API_TOKENS secret is set, and OPEN_ACCESS is not \"true\": this Worker takes orders from no one. Set API_TOKENS (npx wrangler secret put API_TOKENS), or set OPEN_ACCESS = \"true\" to take orders from anyone."

// appendExpires adds Idempotency-Expires, when the stored outcome stops
// being served, to a lookup's answer, unless the store did not tell it
// (zero). A header, not a body member: the body is the stored outcome,
// byte for byte, on a lookup as on every replay. Its date is written as
// the receipt's acceptedAt is, to the millisecond the ledger keeps.
func appendExpires(header []workers.Field, expires time.Time) []workers.Field {
	if expires.IsZero() {
		return header
	}
	return append(header, workers.Field{Name: "Idempotency-Expires", Value: string(jsjson.AppendISOTime(nil, expires))})
}

// ServePanic implements workers.PanicHandler: a panic outside serve's own
// recovery (in the bridge, around the handler) is logged and answered
// with the same 500 problem.
func (h *Handler) ServePanic(p any) *workers.Response {
	resp, outcome, status := errorResponse(errInternal, "", 0)
	h.opts.Log.Log(eventlog.Line{Outcome: outcome, Status: status, Error: "panic: " + errs.PanicText(p)})
	return resp
}

// TrapAnswer is what every request in flight gets when the Go program
// traps (workers.AnswerTraps): the same 500 problem as a recovered panic,
// and the log line written once per trap, whose error the bridge follows
// with the trap's message and stack.
func TrapAnswer() (*workers.Response, eventlog.Line) {
	resp, outcome, status := errorResponse(errInternal, "", 0)
	return resp, eventlog.Line{Outcome: outcome, Status: status, Error: "trap"}
}

// bodyError sorts a failure to read the body into too large or unreadable.
func bodyError(err error) error {
	if errors.Is(err, workers.ErrTooLarge) {
		return errs.Detail(errBodyTooLarge, "over "+strconv.Itoa(MaxBodyBytes)+" bytes")
	}
	return errs.Detail(errUnreadableBody, err.Error())
}

// parseKey reads an Idempotency-Key header value: the key itself, or the
// IETF draft's Structured Field string form, "..." with \" and \\ escapes,
// which names the same key. The key must then be 1 to MaxIdempotencyKeyBytes printable
// ASCII characters, which is always a valid KV key. The field is one
// string, never a list: a comma outside a quoted key is refused, since the
// runtime joins a header sent on two lines into "k, k", which would
// otherwise name a new key and place a second order.
func parseKey(v string) (string, error) {
	key, err := unquoteKey(v)
	if err != nil {
		return key, err
	}
	return key, checkKey(key)
}

// checkKey refuses a key no request could send: empty, too long, or with
// a byte outside printable ASCII.
func checkKey(key string) error {
	if len(key) == 0 || len(key) > MaxIdempotencyKeyBytes {
		return errs.Detail(errInvalidKey, keyFormat+", not "+strconv.Itoa(len(key)))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < ' ' || key[i] > '~' {
			hex := strconv.FormatUint(uint64(key[i]), 16)
			if len(hex) < 2 {
				hex = "0" + hex
			}
			return errs.Detail(errInvalidKey, keyFormat+"; byte "+strconv.Itoa(i)+" is 0x"+hex)
		}
	}
	return nil
}

// keyList says why a list is refused, for error messages.
const keyList = "one Idempotency-Key, not a list: the header came on more than one line, or holds a comma outside a quoted key"

// unquoteKey undoes the Structured Field string form, if v is in it, and
// refuses a list.
func unquoteKey(v string) (string, error) {
	if v == "" || v[0] != '"' {
		if strings.Contains(v, ",") {
			return v, errs.Detail(errInvalidKey, keyList)
		}
		return v, nil
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && i+1 < len(v) && (v[i+1] == '"' || v[i+1] == '\\'):
			i++
			b.WriteByte(v[i])
		case c == '\\':
			return v, errs.Detail(errInvalidKey, `in a quoted key only \" and \\ are escapes`)
		case c == '"':
			switch rest := v[i+1:]; {
			case rest == "":
				return b.String(), nil
			case strings.HasPrefix(strings.TrimLeft(rest, " \t"), ","):
				return v, errs.Detail(errInvalidKey, keyList)
			}
			return v, errs.Detail(errInvalidKey, `a quoted key must end at its closing quote`)
		default:
			b.WriteByte(c)
		}
	}
	return v, errs.Detail(errInvalidKey, "a quoted key must end with a quote")
}

// Misconfigured returns a handler that answers every request with a 500
// misconfigured error, for a Worker whose environment cannot work. detail says
// what is wrong, naming the setting; it is logged and shown as the problem's
// detail, so it must hold no secret. Each answer is logged to opts.Log,
// and counted to opts.Metrics if set.
func Misconfigured(detail string, opts Options) workers.Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return misconfigured{detail: detail, opts: opts}
}

type misconfigured struct {
	detail string
	opts   Options
}

func (m misconfigured) ServeWorker(ctx context.Context, r *workers.Request) *workers.Response {
	var start time.Time
	if m.opts.Metrics != nil {
		start = m.opts.Now()
	}
	resp, outcome, status := errorResponse(errMisconfigured, m.detail, 0)
	m.opts.Log.Log(eventlog.Line{Outcome: outcome, Status: status, Error: m.detail})
	if m.opts.Metrics != nil {
		m.opts.Metrics(metrics.Point{Outcome: metrics.Misconfigured, Status: status, Event: metrics.EventOf(r.Method), Took: m.opts.Now().Sub(start)})
	}
	return resp
}
