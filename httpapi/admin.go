package httpapi

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/order"
	"github.com/edge-orders/edge-orders/workers"
)

// The admin API's paths: AdminPrefix and all below it are the admin API's
// once Options.Admins is set, and answered as any other path otherwise.
const (
	AdminPrefix = "/admin/"
	ordersPath  = AdminPrefix + "orders"
	// OrderPath names a key in its query (?client=…&key=…), for a client
	// or key that a path segment cannot carry: . and .., whose segments
	// the runtime's URL parser removes before the Worker sees the path.
	OrderPath = AdminPrefix + "order"
	// OpenClient stands for the open Worker's client in a key's path.
	OpenClient = "-"
	// MaxResolutionBytes bounds a resolve's body.
	MaxResolutionBytes = 4 << 10
)

// The admin API's actions, as audit lines name them.
const (
	actionList    = "list"
	actionInspect = "inspect"
	actionResolve = "resolve"
	actionPurge   = "purge"
	actionNone    = "none"
	// The dead letters' (deadletters.go).
	actionListDeadLetters = "list_dead_letters"
	actionAcknowledge     = "acknowledge"
)

// Errors of the admin API's transport.
var (
	// errClientOnAdmin refuses a client's token on the admin API.
	errClientOnAdmin  = errors.New("httpapi: a client token on the admin API")
	errNoAdminToken   = errors.New("httpapi: missing admin token")
	errNotAdminToken  = errors.New("httpapi: invalid admin token")
	errAdminNoRoute   = errors.New("httpapi: no such admin path")
	errAdminMethod    = errors.New("httpapi: method not allowed on this admin path")
	errUnknownClient  = errors.New("httpapi: unknown client")
	errInvalidQuery   = errors.New("httpapi: invalid admin query")
	errInvalidRequest = errors.New("httpapi: invalid resolution body")
)

// stateNames are the states as the admin API spells them.
var stateNames = []struct {
	name  string
	state intake.Attention
}{
	{"in_progress", intake.InProgress},
	{"unknown", intake.Unknown},
	{"unresolved", intake.Unresolved},
}

// adminRoute is what an admin path names.
type adminRoute struct {
	action string
	key    intake.Key
	// orderID is a resolve's or a purge's precondition, from the query's
	// orderId: the order id the operator saw ("" for none).
	orderID string
	// allow is the methods the path takes, for a 405's Allow.
	allow string
}

// isAdminPath reports whether path is the admin API's.
func isAdminPath(path string) bool {
	return path == strings.TrimSuffix(AdminPrefix, "/") || strings.HasPrefix(path, AdminPrefix)
}

// serveAdmin answers an admin API request, and logs it as one audit line:
// the admin's token name (never the token), the action, the key, and its
// state before and after. An admin request costs no data point.
func (h *Handler) serveAdmin(ctx context.Context, r *workers.Request) *workers.Response {
	start := time.Now()
	line := eventlog.Line{Action: "refused"}
	resp := h.admin(ctx, r, &line)
	line.Millis = time.Since(start).Milliseconds()
	h.opts.Log.Log(line)
	return resp
}

// admin answers r, describing what it did in line.
func (h *Handler) admin(ctx context.Context, r *workers.Request, line *eventlog.Line) (resp *workers.Response) {
	defer func() {
		if p := recover(); p != nil {
			resp, line.Outcome, line.Status = errorResponse(errInternal, "", 0)
			line.Error = "panic: " + errs.PanicText(p)
		}
	}()
	fail := func(err error) *workers.Response {
		line.Error = err.Error()
		resp, outcome, status := errorResponse(err, queryDetail(err), int(h.svc.RetryAfter().Seconds()))
		line.Outcome, line.Status = outcome, status
		return resp
	}
	name, err := h.opts.Admins.Authenticate(r.Header.Get("Authorization"))
	if err != nil {
		if h.opts.Clients != nil {
			if _, cerr := h.opts.Clients.Authenticate(r.Header.Get("Authorization")); cerr == nil {
				err = errClientOnAdmin
			}
		}
		var challenge string
		switch {
		case errors.Is(err, auth.ErrMissingToken):
			err, challenge = errNoAdminToken, `Bearer realm="edge-orders-admin"`
		case errors.Is(err, auth.ErrInvalidToken):
			err, challenge = errNotAdminToken, `Bearer realm="edge-orders-admin", error="invalid_token"`
		}
		resp = fail(err)
		if challenge != "" {
			resp.Header = append(resp.Header, workers.Field{Name: "WWW-Authenticate", Value: challenge})
		}
		return resp
	}
	line.Admin = name
	route, err := h.adminRoute(r.Method, r.Path, r.Query)
	line.Client, line.Key = route.key.Client, route.key.ID
	// "refused" is a refused token's: an admin's request the API has no
	// action for is "none".
	line.Action = actionNone
	if route.action != "" {
		line.Action = route.action
	}
	if err != nil {
		resp = fail(err)
		if errors.Is(err, errAdminMethod) {
			resp.Header = append(resp.Header, workers.Field{Name: "Allow", Value: route.allow})
		}
		return resp
	}
	var body []byte
	switch route.action {
	case actionList:
		body, err = h.list(ctx, r.Query, line)
	case actionInspect:
		body, err = h.inspect(ctx, route.key, line)
	case actionResolve:
		body, err = h.resolve(ctx, route, r, line)
	case actionPurge:
		body, err = h.purge(ctx, route, line)
	case actionListDeadLetters:
		body, err = h.listDeadLetters(ctx, r.Query)
	case actionInspectDeadLetters:
		body, err = h.inspectDeadLetters(ctx, route.key, r.Query)
	case actionAcknowledge:
		body, err = h.acknowledge(ctx, route.key, r.Query, line)
	}
	if err != nil {
		return fail(err)
	}
	line.Outcome, line.Status = route.action, statusOK
	return &workers.Response{Status: statusOK, Header: []workers.Field{jsonContent, noStore, noSniff}, Body: body}
}

// adminRoute reads an admin path: /admin/orders, and
// /admin/orders/{client}/{key} with an optional /resolve, each segment
// percent-encoded, or the same key named in the query of OrderPath (with
// an optional /resolve), for a client or key a path cannot carry (. and
// .., which the runtime's URL parser removes). It checks the client and
// the key, so that no action ever meets one the Worker could not hold.
func (h *Handler) adminRoute(method, path, query string) (adminRoute, error) {
	if path == OrderPath || path == OrderPath+"/resolve" {
		return h.queryRoute(method, path, query)
	}
	if path == ordersPath {
		if method != "GET" {
			return adminRoute{action: actionList, allow: "GET"}, errAdminMethod
		}
		return adminRoute{action: actionList}, nil
	}
	if route, err, ok := h.deadLetterRoute(method, path, query); ok {
		return route, err
	}
	rest, ok := strings.CutPrefix(path, ordersPath+"/")
	if !ok {
		return adminRoute{}, errAdminNoRoute
	}
	parts := strings.Split(rest, "/")
	var route adminRoute
	switch {
	case len(parts) == 2:
		route.allow = "GET, DELETE"
		switch method {
		case "GET":
			route.action = actionInspect
		case "DELETE":
			route.action = actionPurge
		}
	case len(parts) == 3 && parts[2] == "resolve":
		route.allow = "POST"
		if method == "POST" {
			route.action = actionResolve
		}
	default:
		return adminRoute{}, errAdminNoRoute
	}
	if route.action == "" {
		return route, errAdminMethod // before the query, which depends on the action
	}
	pairs, err := queryPairs(query)
	if err != nil {
		return route, err
	}
	for _, p := range pairs {
		// An orderId given is never empty (refused below), so a second one
		// finds route.orderID set.
		if p[0] != orderIDParam || route.orderID != "" || !preconditioned(route.action) {
			return route, invalidQuery("a resolve or a purge takes orderId, once; nothing else takes a query")
		}
		if p[1] == "" {
			return route, invalidQuery(emptyOrderID)
		}
		route.orderID = p[1]
	}
	return h.keyRoute(route, parts[0], parts[1])
}

// orderIDParam is the query parameter of a resolve's or a purge's
// precondition: the order id the operator saw; the key must still hold
// it, or nothing is done (409 order_mismatch).
const orderIDParam = "orderId"

// emptyOrderID refuses orderId= with no value: it names no order id a key
// could hold, and must not read as no precondition at all.
const emptyOrderID = "orderId is the order id you saw, not empty; leave it out to act without one"

// preconditioned reports whether action takes orderIDParam.
func preconditioned(action string) bool { return action == actionResolve || action == actionPurge }

// queryRoute reads OrderPath?client=…&key=… and its /resolve: the
// values percent-decoded, nothing else, as a path segment is.
func (h *Handler) queryRoute(method, path, query string) (adminRoute, error) {
	route := adminRoute{allow: "GET, DELETE"}
	switch {
	case path != OrderPath:
		route.allow = "POST"
		if method == "POST" {
			route.action = actionResolve
		}
	case method == "GET":
		route.action = actionInspect
	case method == "DELETE":
		route.action = actionPurge
	}
	if route.action == "" {
		return route, errAdminMethod // before the query, which depends on the action
	}
	var client, key string
	var hasClient, hasKey, hasOrderID bool
	for _, pair := range strings.Split(query, "&") {
		name, value, _ := strings.Cut(pair, "=")
		switch {
		case name == "client" && !hasClient:
			client, hasClient = value, true
		case name == "key" && !hasKey:
			key, hasKey = value, true
		case name == orderIDParam && !hasOrderID && preconditioned(route.action):
			id, ok := unescape(value)
			switch {
			case !ok:
				return route, invalidQuery("the query is not percent-encoded")
			case id == "":
				return route, invalidQuery(emptyOrderID)
			}
			route.orderID, hasOrderID = id, true
		default:
			return route, invalidQuery("the query takes client and key, once each, and for a resolve or a purge orderId")
		}
	}
	if !hasClient || !hasKey {
		return route, invalidQuery("the query takes client and key, once each, and for a resolve or a purge orderId")
	}
	return h.keyRoute(route, client, key)
}

// keyRoute checks a path's client and key segments for route, and names
// the key in it.
func (h *Handler) keyRoute(route adminRoute, clientSegment, keySegment string) (adminRoute, error) {
	client, cok := unescape(clientSegment)
	id, kok := unescape(keySegment)
	switch {
	case !cok:
		return route, errs.Detail(errUnknownClient, "the client's path segment is not percent-encoded")
	case !kok:
		return route, errs.Detail(errInvalidKey, "the key's path segment is not percent-encoded")
	}
	if h.opts.Clients == nil {
		if client != OpenClient {
			return route, errs.Detail(errUnknownClient, "the Worker runs open: its keys' client is "+OpenClient)
		}
		client = ""
	} else if !h.opts.Clients.Has(client) {
		return route, errs.Detail(errUnknownClient, "no client has this id")
	}
	route.key.Client = client
	// The segment is the key itself: the header's rules (unquoting,
	// refusing commas) do not apply, so that no path names another key.
	route.key.ID = id
	if err := checkKey(id); err != nil {
		return route, err
	}
	return route, nil
}

// queryPairs is query's name=value pairs in order, each percent-decoded
// as a path segment is (a '+' is a plus, in every admin query), the empty
// ones left out. A name given twice is refused: no value may silently
// override another (state=unknown&state=unresolved would list only the
// unresolved keys).
func queryPairs(query string) ([][2]string, error) {
	var pairs [][2]string
	for _, pair := range strings.Split(query, "&") {
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, nok := unescape(rawName)
		value, vok := unescape(rawValue)
		if !nok || !vok {
			return nil, invalidQuery("the query is not percent-encoded")
		}
		if slices.ContainsFunc(pairs, func(p [2]string) bool { return p[0] == name }) {
			return nil, invalidQuery("each parameter is given at most once")
		}
		pairs = append(pairs, [2]string{name, value})
	}
	return pairs, nil
}

// list answers GET /admin/orders.
func (h *Handler) list(ctx context.Context, query string, line *eventlog.Line) ([]byte, error) {
	q := intake.ListQuery{States: intake.AnyAttention, Limit: intake.DefaultListLimit}
	client, hasClient := "", false
	pairs, err := queryPairs(query)
	if err != nil {
		return nil, err
	}
	for _, pair := range pairs {
		name, value := pair[0], pair[1]
		switch name {
		case "state":
			q.States = 0
			for _, s := range strings.Split(value, ",") {
				state, ok := stateNamed(s)
				if !ok {
					return nil, invalidQuery("state is a comma-separated list of in_progress, unknown and unresolved")
				}
				q.States |= state
			}
		case "client":
			client, hasClient = value, true
		case "cursor":
			q.Cursor = value
		case "limit":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 || n > intake.MaxListLimit {
				return nil, invalidQuery("limit is a whole number from 1 to " + strconv.Itoa(intake.MaxListLimit))
			}
			q.Limit = n
		default:
			return nil, invalidQuery("the query takes state, client, cursor and limit")
		}
	}
	switch {
	case h.opts.Clients == nil && hasClient && client != OpenClient:
		return nil, errs.Detail(errUnknownClient, "the Worker runs open: its keys' client is "+OpenClient)
	case h.opts.Clients == nil:
		q.Clients = []string{""}
	case hasClient && !h.opts.Clients.Has(client):
		return nil, errs.Detail(errUnknownClient, "no client has this id")
	case hasClient:
		q.Clients = []string{client}
		line.Client = client
	default:
		q.Clients = h.opts.Clients.IDs()
	}
	page, err := h.opts.Admin.List(ctx, q)
	if err != nil {
		return nil, err
	}
	b := append([]byte(nil), `{"orders":[`...)
	for i, l := range page.Keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEntry(b, l.Key, l.Record, time.Time{})
		b = append(b, '}')
	}
	b = append(b, ']')
	if page.Cursor != "" {
		b = jsjson.AppendString(append(b, `,"cursor":`...), page.Cursor)
	}
	return append(b, '}'), nil
}

// stateNamed is the state the admin API calls name.
func stateNamed(name string) (intake.Attention, bool) {
	for _, s := range stateNames {
		if s.name == name {
			return s.state, true
		}
	}
	return 0, false
}

// inspect answers GET /admin/orders/{client}/{key}.
func (h *Handler) inspect(ctx context.Context, key intake.Key, line *eventlog.Line) ([]byte, error) {
	rec, err := h.opts.Admin.Inspect(ctx, key)
	if err != nil {
		return nil, err
	}
	line.Before, line.After = stateOf(rec), stateOf(rec)
	line.OrderID = orderIDOf(rec)
	return detail(key, rec), nil
}

// resolve answers POST /admin/orders/{client}/{key}/resolve.
func (h *Handler) resolve(ctx context.Context, route adminRoute, r *workers.Request, line *eventlog.Line) ([]byte, error) {
	key := route.key
	body, err := r.Body.ReadAll(MaxResolutionBytes)
	if err != nil {
		if errors.Is(err, workers.ErrTooLarge) {
			return nil, errs.Detail(errInvalidRequest, "the body is over "+strconv.Itoa(MaxResolutionBytes)+" bytes")
		}
		return nil, bodyError(err)
	}
	res, note, err := parseResolution(body)
	line.Note = note
	if err != nil {
		return nil, err
	}
	res.OrderID = route.orderID
	// The state before, for the audit line: read first, so that a
	// refusal says what the key was in too.
	if before, err := h.opts.Admin.Inspect(ctx, key); err == nil {
		line.Before, line.OrderID = stateOf(before), orderIDOf(before)
	}
	rec, err := h.opts.Admin.Resolve(ctx, key, res)
	if err != nil {
		line.After = line.Before // refused: nothing changed
		return nil, err
	}
	line.After, line.OrderID = stateOf(rec), orderIDOf(rec)
	return detail(key, rec), nil
}

// parseResolution reads a resolve's body: a JSON object with status
// (accepted or rejected), reason (required for rejected) and note, all
// strings, and nothing else.
func parseResolution(body []byte) (intake.Resolution, string, error) {
	const (
		status, reason, note = "status", "reason", "note"
	)
	o, err := jsjson.Parse(body, status, reason, note)
	switch {
	case err != nil:
		return intake.Resolution{}, "", errs.Detail(errInvalidRequest, "the body is not JSON")
	case !o.IsObject():
		return intake.Resolution{}, "", errs.Detail(errInvalidRequest, "the body is not a JSON object")
	case o.Others() > 0:
		// A misspelt member ("notes") would be dropped silently.
		return intake.Resolution{}, "", errs.Detail(errInvalidRequest, "the body takes status, reason and note, and nothing else")
	}
	str := func(name string) (string, bool) {
		v := o.Get(name)
		return v.Str, v.Kind == jsjson.String || v.Kind == jsjson.Undefined
	}
	s, sok := str(status)
	why, rok := str(reason)
	n, nok := str(note)
	switch {
	case !sok || !rok || !nok:
		return intake.Resolution{}, n, errs.Detail(errInvalidRequest, "status, reason and note are strings")
	case s != order.StatusAccepted && s != order.StatusRejected:
		return intake.Resolution{}, n, errs.Detail(errInvalidRequest, `status is "accepted" or "rejected"`)
	case s == order.StatusRejected && why == "":
		return intake.Resolution{}, n, errs.Detail(errInvalidRequest, "a rejection needs a reason")
	case s == order.StatusAccepted && why != "":
		return intake.Resolution{}, n, errs.Detail(errInvalidRequest, "only a rejection has a reason")
	}
	return intake.Resolution{Status: s, Reason: why}, n, nil
}

// purge answers DELETE /admin/orders/{client}/{key}.
func (h *Handler) purge(ctx context.Context, route adminRoute, line *eventlog.Line) ([]byte, error) {
	key := route.key
	rec, err := h.opts.Admin.Purge(ctx, key, route.orderID)
	line.Before, line.OrderID = stateOf(rec), orderIDOf(rec)
	if err != nil {
		line.After = line.Before
		return nil, err
	}
	line.After = "purged"
	return detail(key, rec), nil
}

// stateOf is rec's state as the admin API names it; "" for an absent key.
func stateOf(rec intake.Record) string {
	switch {
	case rec.State == intake.Stored && rec.Rejected:
		return "rejected"
	case rec.State == intake.Stored:
		return "accepted"
	}
	for _, s := range stateNames {
		if intake.AttentionOf(rec) == s.state {
			return s.name
		}
	}
	return ""
}

// orderIDOf is rec's order id: the claim's, or its receipt's.
func orderIDOf(rec intake.Record) string { return intake.OrderIDOf(rec) }

// detail is a key's entry with what is stored for it: its receipt
// (byte for byte as replayed), rejected and expiresAt.
func detail(key intake.Key, rec intake.Record) []byte {
	b := appendEntry(nil, key, rec, rec.Expires)
	if rec.State == intake.Stored {
		b = append(append(b, `,"receipt":`...), rec.Body...)
		b = append(b, `,"rejected":`...)
		b = strconv.AppendBool(b, rec.Rejected)
	}
	return append(b, '}')
}

// appendEntry appends key's entry, without its closing brace: client
// (OpenClient for the open Worker), key, state, orderId, order,
// acceptedAt, attempts, nextAttemptAt, and expiresAt if set. A stored
// outcome's order id, order and time are its receipt's.
func appendEntry(b []byte, key intake.Key, rec intake.Record, expires time.Time) []byte {
	client := key.Client
	if client == "" {
		client = OpenClient
	}
	orderID, o, hasOrder, acceptedAt := rec.OrderID, rec.Order, rec.HasOrder, rec.AcceptedAt
	if rec.State == intake.Stored {
		orderID = orderIDOf(rec)
		acceptedAt = order.ReceiptAcceptedAt(rec.Body)
		if parsed, err := order.Parse(rec.Body); err == nil {
			o, hasOrder = parsed, true
		}
	}
	b = jsjson.AppendString(append(b, `{"client":`...), client)
	b = jsjson.AppendString(append(b, `,"key":`...), key.ID)
	b = jsjson.AppendString(append(b, `,"state":`...), stateOf(rec))
	if orderID != "" {
		b = jsjson.AppendString(append(b, `,"orderId":`...), orderID)
	}
	if hasOrder {
		b = append(append(b, `,"order":`...), o.JSON()...)
	}
	if !acceptedAt.IsZero() {
		b = append(jsjson.AppendISOTime(append(b, `,"acceptedAt":"`...), acceptedAt), '"')
	}
	b = strconv.AppendInt(append(b, `,"attempts":`...), int64(rec.Attempts), 10)
	if !rec.NextAttempt.IsZero() && rec.State != intake.Stored && !rec.GiveUp.Unresolved() {
		b = append(jsjson.AppendISOTime(append(b, `,"nextAttemptAt":"`...), rec.NextAttempt), '"')
	}
	if !expires.IsZero() {
		b = append(jsjson.AppendISOTime(append(b, `,"expiresAt":"`...), expires), '"')
	}
	return b
}

// unescape percent-decodes s, and nothing else: a '+' is a plus, in a
// path segment and in every admin query alike, so that a key holding one
// is named the same way everywhere (a space is %20). It returns false for
// a malformed escape.
func unescape(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '%':
			if i+2 >= len(s) {
				return "", false
			}
			hi, lo := hexDigit(s[i+1]), hexDigit(s[i+2])
			if hi < 0 || lo < 0 {
				return "", false
			}
			b = append(b, byte(hi<<4|lo))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b), true
}

// queryError is an admin query's fault, told to the operator as its
// detail: the rule the query broke, one of this package's own sentences,
// never an error's text.
type queryError struct{ rule string }

func (e *queryError) Error() string { return errInvalidQuery.Error() + ": " + e.rule }
func (e *queryError) Unwrap() error { return errInvalidQuery }

// invalidQuery is errInvalidQuery, answered with rule as its detail.
func invalidQuery(rule string) error { return &queryError{rule} }

// queryDetail is err's rule, if err is an invalid query; "" otherwise,
// for the problem table's own detail.
func queryDetail(err error) string {
	var q *queryError
	if errors.As(err, &q) && q.rule != "" {
		return strings.ToUpper(q.rule[:1]) + q.rule[1:] + "."
	}
	return ""
}
