package httpapi

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
)

// DeadLettersPath lists what the dead-letter queue delivered, kept until
// an operator acknowledges each letter with a DELETE of
// DeadLettersPath/{client}/{key}?letterId={id}; a GET there reads the
// key's letters.
const DeadLettersPath = AdminPrefix + "deadletters"

// DeadLetterPath names a key's letters in its query
// (?client=…&key=…&letterId=…), for a client or key that a path segment
// cannot carry: . and .., as OrderPath does.
const DeadLetterPath = AdminPrefix + "deadletter"

// letterParam names the letter an acknowledgement is for: its
// precondition.
const letterParam = "letterId"

// MaxLetterIDBytes bounds a letter's id: a queue message's id.
const MaxLetterIDBytes = 64

// actionInspectDeadLetters reads one key's letters.
const actionInspectDeadLetters = "inspect_dead_letters"

// deadLetterRoute reads a dead letters path and its query, as adminRoute
// does; false for another path. A letter's client need not be one the
// Worker is configured with: a client removed from API_TOKENS, or the open
// Worker's "-" once tokens are set, may have left letters.
func (h *Handler) deadLetterRoute(method, path, query string) (adminRoute, error, bool) {
	if path == DeadLettersPath {
		if method != "GET" {
			return adminRoute{action: actionListDeadLetters, allow: "GET"}, errAdminMethod, true
		}
		return adminRoute{action: actionListDeadLetters}, nil, true
	}
	route := adminRoute{allow: "GET, DELETE"}
	switch method {
	case "GET":
		route.action = actionInspectDeadLetters
	case "DELETE":
		route.action = actionAcknowledge
	}
	if path == DeadLetterPath {
		if route.action == "" {
			return route, errAdminMethod, true // before the query, which depends on the action
		}
		pairs, err := rawQueryPairs(query, "client", "key", letterParam)
		if err != nil {
			return route, err, true
		}
		if pairs["client"] == nil || pairs["key"] == nil {
			return route, invalidQuery(deadLetterQueryRule), true
		}
		route, err = deadLetterKeyRoute(route, *pairs["client"], *pairs["key"], h.opts.Clients)
		return route, err, true
	}
	rest, ok := strings.CutPrefix(path, DeadLettersPath+"/")
	if !ok {
		return adminRoute{}, nil, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 2 {
		return adminRoute{}, errAdminNoRoute, true
	}
	if route.action == "" {
		return route, errAdminMethod, true
	}
	if _, err := rawQueryPairs(query, letterParam); err != nil {
		return route, err, true
	}
	route, err := deadLetterKeyRoute(route, parts[0], parts[1], h.opts.Clients)
	return route, err, true
}

// deadLetterQueryRule says what the dead letters' key queries take.
const deadLetterQueryRule = "the query takes client and key, and letterId to acknowledge one letter, once each"

// rawQueryPairs is query's pairs by name, values left percent-encoded as
// a path segment is (keyRoute decodes them, '+' a plus): each name once,
// and only those given.
func rawQueryPairs(query string, names ...string) (map[string]*string, error) {
	pairs := map[string]*string{}
	if query == "" {
		return pairs, nil
	}
	for _, pair := range strings.Split(query, "&") {
		name, value, _ := strings.Cut(pair, "=")
		known := false
		for _, n := range names {
			known = known || n == name
		}
		if !known || pairs[name] != nil {
			return nil, invalidQuery(deadLetterQueryRule)
		}
		pairs[name] = &value
	}
	return pairs, nil
}

// deadLetterKeyRoute checks a letter's client and key segments, as
// keyRoute does for a key, but takes any client whose id the Worker could
// have held: OpenClient is the open Worker's, unless clients has a client
// of that id.
func deadLetterKeyRoute(route adminRoute, clientSegment, keySegment string, clients *auth.Clients) (adminRoute, error) {
	client, cok := unescape(clientSegment)
	id, kok := unescape(keySegment)
	switch {
	case !cok || (client != OpenClient && !auth.ValidClientID(client)):
		return route, errs.Detail(errUnknownClient, "no client could have this id")
	case !kok:
		return route, errs.Detail(errInvalidKey, "the key's path segment is not percent-encoded")
	}
	if client == OpenClient && (clients == nil || !clients.Has(client)) {
		client = ""
	}
	route.key = intake.Key{Client: client, ID: id}
	if err := checkKey(id); err != nil {
		return route, err
	}
	if route.action == "" {
		return route, errAdminMethod
	}
	return route, nil
}

// letterOf reads the letterId of a dead letter's query: "" when there is
// none.
func letterOf(query string) (string, error) {
	pairs, err := rawQueryPairs(query, "client", "key", letterParam)
	if err != nil || pairs[letterParam] == nil {
		return "", err
	}
	id := *pairs[letterParam]
	if !ValidLetterID(id) {
		return "", invalidQuery("a letterId is 1 to "+strconv.Itoa(MaxLetterIDBytes)+" letters, digits, '-' or '_'")
	}
	return id, nil
}

// ValidLetterID reports whether id can name a letter: 1 to
// MaxLetterIDBytes letters, digits, '-' or '_'.
func ValidLetterID(id string) bool {
	if id == "" || len(id) > MaxLetterIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// listDeadLetters answers GET /admin/deadletters.
func (h *Handler) listDeadLetters(ctx context.Context, query string) ([]byte, error) {
	cursor, limit := "", intake.DefaultListLimit
	pairs, err := queryPairs(query)
	if err != nil {
		return nil, err
	}
	for _, pair := range pairs {
		name, value := pair[0], pair[1]
		switch name {
		case "cursor":
			cursor = value
		case "limit":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 || n > intake.MaxListLimit {
				return nil, invalidQuery("limit is a whole number from 1 to "+strconv.Itoa(intake.MaxListLimit))
			}
			limit = n
		default:
			return nil, invalidQuery("the dead letters' query takes cursor and limit")
		}
	}
	if h.opts.DeadLetters == nil {
		return []byte(`{"deadLetters":[]}`), nil
	}
	letters, next, err := h.opts.DeadLetters.List(ctx, cursor, limit)
	if err != nil {
		if errors.Is(err, intake.ErrBadCursor) {
			return nil, err
		}
		return nil, errs.Detail(intake.ErrStorageUnavailable, err.Error())
	}
	b := appendDeadLetters(nil, letters)
	if next != "" {
		b = jsjson.AppendString(append(b, `,"cursor":`...), next)
	}
	return append(b, '}'), nil
}

// inspectDeadLetters answers GET /admin/deadletters/{client}/{key}: the
// key's letters, none acknowledged.
func (h *Handler) inspectDeadLetters(ctx context.Context, key intake.Key, query string) ([]byte, error) {
	if id, err := letterOf(query); err != nil || id != "" {
		if err == nil {
			err = invalidQuery("letterId names the letter a DELETE acknowledges")
		}
		return nil, err
	}
	var letters []intake.DeadLetter
	if h.opts.DeadLetters != nil {
		var err error
		if letters, err = h.opts.DeadLetters.Letters(ctx, key); err != nil {
			return nil, errs.Detail(intake.ErrStorageUnavailable, err.Error())
		}
	}
	return append(appendDeadLetters(nil, letters), '}'), nil
}

// appendDeadLetters appends {"deadLetters":[letters…], without its
// closing brace.
func appendDeadLetters(b []byte, letters []intake.DeadLetter) []byte {
	b = append(b, `{"deadLetters":[`...)
	for i, d := range letters {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendDeadLetter(b, d)
	}
	return append(b, ']')
}

// acknowledge answers DELETE /admin/deadletters/{client}/{key}: the
// letter letterId names, or without one the key's only letter. The answer
// and the audit line name the letter acknowledged; when the key holds
// another, it answers 409 dead_letter_changed and changes nothing.
func (h *Handler) acknowledge(ctx context.Context, key intake.Key, query string, line *eventlog.Line) ([]byte, error) {
	id, err := letterOf(query)
	line.LetterID = id
	if err != nil {
		return nil, err
	}
	if h.opts.DeadLetters == nil {
		return nil, intake.ErrNotFound
	}
	d, err := h.opts.DeadLetters.Acknowledge(ctx, key, id)
	if err != nil {
		if !errors.Is(err, intake.ErrNotFound) && !errors.Is(err, intake.ErrOtherLetter) {
			err = errs.Detail(intake.ErrStorageUnavailable, err.Error())
		}
		return nil, err
	}
	line.LetterID, line.OrderID, line.Before, line.After = d.ID, d.OrderID, deadLetterState(d), "acknowledged"
	return appendDeadLetter(nil, d), nil
}

// deadLetterState is the key's state when its letter came: unresolved,
// unknown, or none (its outcome stored, or the key gone, by then).
func deadLetterState(d intake.DeadLetter) string {
	switch {
	case d.Unresolved:
		return "unresolved"
	case d.OrderID != "":
		return "unknown"
	}
	return "none"
}

// appendDeadLetter appends d as the admin API shows it: client, key,
// letterId, state, orderId, attempts, receivedAt, and acknowledgedAt once
// acknowledged.
func appendDeadLetter(b []byte, d intake.DeadLetter) []byte {
	client := d.Key.Client
	if client == "" {
		client = OpenClient
	}
	b = jsjson.AppendString(append(b, `{"client":`...), client)
	b = jsjson.AppendString(append(b, `,"key":`...), d.Key.ID)
	if d.ID != "" {
		b = jsjson.AppendString(append(b, `,"letterId":`...), d.ID)
	}
	b = jsjson.AppendString(append(b, `,"state":`...), deadLetterState(d))
	if d.OrderID != "" {
		b = jsjson.AppendString(append(b, `,"orderId":`...), d.OrderID)
	}
	b = strconv.AppendInt(append(b, `,"attempts":`...), int64(d.Attempts), 10)
	b = append(jsjson.AppendISOTime(append(b, `,"receivedAt":"`...), d.Received), '"')
	if !d.Acknowledged.IsZero() {
		b = append(jsjson.AppendISOTime(append(b, `,"acknowledgedAt":"`...), d.Acknowledged), '"')
	}
	return append(b, '}')
}
