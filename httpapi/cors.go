package httpapi

import (
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/workers"
)

// PreflightMaxAge is how long a browser may cache a preflight's answer:
// Chromium's ceiling (Firefox allows a day), so one preflight serves a page
// for hours of orders.
const PreflightMaxAge = 2 * time.Hour

// The CORS headers' values (Fetch standard, "CORS protocol").
const (
	// CORSMethods are the methods the contract has.
	CORSMethods = "GET, POST"
	// CORSRequestHeaders are the headers a page may send beyond the
	// safelisted ones: the key, the order's JSON type and the API token.
	CORSRequestHeaders = "Idempotency-Key, Content-Type, Authorization"
	// CORSExposedHeaders are the response headers a page may read beyond
	// the safelisted ones (Content-Type and Cache-Control among them).
	CORSExposedHeaders = "Idempotent-Replay, Retry-After, Link, Idempotency-Expires"
)

var (
	// varyOrigin goes on every response of a Worker with allowed origins,
	// since its CORS headers depend on the request's Origin: no cache may
	// hand one origin's answer to another.
	varyOrigin     = workers.Field{Name: "Vary", Value: "Origin"}
	exposedHeaders = workers.Field{Name: "Access-Control-Expose-Headers", Value: CORSExposedHeaders}
	preflightFixed = []workers.Field{
		{Name: "Access-Control-Allow-Methods", Value: CORSMethods},
		{Name: "Access-Control-Allow-Headers", Value: CORSRequestHeaders},
		{Name: "Access-Control-Max-Age", Value: strconv.Itoa(int(PreflightMaxAge / time.Second))},
		varyOrigin,
		noSniff,
	}
)

// origins is the set of allowed origins; nil means CORS is off.
type origins map[string]bool

func newOrigins(list []string) origins {
	if len(list) == 0 {
		return nil
	}
	o := make(origins, len(list))
	for _, origin := range list {
		o[origin] = true
	}
	return o
}

// preflight answers r if CORS is on and r is a preflight, an OPTIONS with
// an Origin that asks for a method (any other OPTIONS is an ordinary
// request, answered 405), and returns nil otherwise. From an allowed
// origin the answer is 204 with what a page there may send; from any other
// it is 403 origin_not_allowed without any Access-Control header, so the
// browser never sends the request. It reads nothing else of the request,
// touches no storage and counts against no rate limit: a browser sends no
// credentials with a preflight, so it comes before the token check.
func (o origins) preflight(r *workers.Request, origin string) (*workers.Response, eventlog.Line) {
	if o == nil || r.Method != "OPTIONS" || origin == "" || r.Header.Get("Access-Control-Request-Method") == "" {
		return nil, eventlog.Line{}
	}
	if !o[origin] {
		err := errs.Detail(errOriginNotAllowed, strconv.Quote(origin))
		resp, outcome, status := errorResponse(err, "", 0)
		resp.Header = append(resp.Header, varyOrigin)
		return resp, eventlog.Line{Outcome: outcome, Status: status, Error: err.Error()}
	}
	header := make([]workers.Field, 0, len(preflightFixed)+1)
	header = append(append(header, workers.Field{Name: "Access-Control-Allow-Origin", Value: origin}), preflightFixed...)
	return &workers.Response{Status: statusNoContent, Header: header}, eventlog.Line{Outcome: "preflight", Status: statusNoContent}
}

// TrapCORS is the CORS headers a trap's answer carries
// (workers.CORSTraps), as annotate adds them to every other answer: for a
// request from one of origins, Access-Control-Allow-Origin naming it and
// allowed, unless its path is under private (the admin API, which no
// other origin may read; "" for none); for every request, always. No
// origins: CORS is off.
func (h *Handler) TrapCORS() (origins []string, allowed, always []workers.Field, private string) {
	if h.origins == nil {
		return nil, nil, nil, ""
	}
	for origin := range h.origins {
		origins = append(origins, origin)
	}
	if h.opts.Admins != nil && h.opts.Admin != nil {
		private = AdminPrefix
	}
	return origins, []workers.Field{exposedHeaders}, []workers.Field{varyOrigin}, private
}

// annotate adds the CORS headers to an actual response (not a preflight):
// to an allowed origin, Access-Control-Allow-Origin naming it and the
// headers a page may read; to any other, none. With CORS on, every
// response gets Vary: Origin, since each depends on it.
func (o origins) annotate(resp *workers.Response, origin string) {
	if o == nil {
		return
	}
	if o[origin] {
		resp.Header = append(resp.Header, workers.Field{Name: "Access-Control-Allow-Origin", Value: origin}, exposedHeaders)
	}
	resp.Header = append(resp.Header, varyOrigin)
}
