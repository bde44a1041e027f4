package httpapi

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
)

// DeadLettersPath lists what the dead-letter queue delivered, kept until
// an operator acknowledges each letter with a DELETE of
// DeadLettersPath/{client}/{key}.
const DeadLettersPath = AdminPrefix + "deadletters"

// deadLetterRoute reads a dead letters path, as adminRoute does; false
// for another path.
func (h *Handler) deadLetterRoute(method, path string) (adminRoute, error, bool) {
	if path == DeadLettersPath {
		if method != "GET" {
			return adminRoute{action: actionListDeadLetters, allow: "GET"}, errAdminMethod, true
		}
		return adminRoute{action: actionListDeadLetters}, nil, true
	}
	rest, ok := strings.CutPrefix(path, DeadLettersPath+"/")
	if !ok {
		return adminRoute{}, nil, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 2 {
		return adminRoute{}, errAdminNoRoute, true
	}
	route := adminRoute{allow: "DELETE"}
	if method == "DELETE" {
		route.action = actionAcknowledge
	}
	route, err := h.keyRoute(route, parts[0], parts[1])
	return route, err, true
}

// listDeadLetters answers GET /admin/deadletters.
func (h *Handler) listDeadLetters(ctx context.Context, query string) ([]byte, error) {
	if h.opts.DeadLetters == nil {
		return []byte(`{"deadLetters":[]}`), nil
	}
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
				return nil, errs.Detail(errInvalidQuery, "limit is a whole number from 1 to "+strconv.Itoa(intake.MaxListLimit))
			}
			limit = n
		default:
			return nil, errs.Detail(errInvalidQuery, "the dead letters' query takes cursor and limit")
		}
	}
	letters, next, err := h.opts.DeadLetters.List(ctx, cursor, limit)
	if err != nil {
		if errors.Is(err, intake.ErrBadCursor) {
			return nil, err
		}
		return nil, errs.Detail(intake.ErrStorageUnavailable, err.Error())
	}
	b := append([]byte(nil), `{"deadLetters":[`...)
	for i, d := range letters {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendDeadLetter(b, d)
	}
	b = append(b, ']')
	if next != "" {
		b = jsjson.AppendString(append(b, `,"cursor":`...), next)
	}
	return append(b, '}'), nil
}

// acknowledge answers DELETE /admin/deadletters/{client}/{key}.
func (h *Handler) acknowledge(ctx context.Context, key intake.Key, line *eventlog.Line) ([]byte, error) {
	if h.opts.DeadLetters == nil {
		return nil, intake.ErrNotFound
	}
	d, err := h.opts.DeadLetters.Acknowledge(ctx, key)
	if err != nil {
		if !errors.Is(err, intake.ErrNotFound) {
			err = errs.Detail(intake.ErrStorageUnavailable, err.Error())
		}
		return nil, err
	}
	line.OrderID, line.Before, line.After = d.OrderID, deadLetterState(d), "acknowledged"
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
// state, orderId, attempts and receivedAt.
func appendDeadLetter(b []byte, d intake.DeadLetter) []byte {
	client := d.Key.Client
	if client == "" {
		client = OpenClient
	}
	b = jsjson.AppendString(append(b, `{"client":`...), client)
	b = jsjson.AppendString(append(b, `,"key":`...), d.Key.ID)
	b = jsjson.AppendString(append(b, `,"state":`...), deadLetterState(d))
	if d.OrderID != "" {
		b = jsjson.AppendString(append(b, `,"orderId":`...), d.OrderID)
	}
	b = strconv.AppendInt(append(b, `,"attempts":`...), int64(d.Attempts), 10)
	b = append(jsjson.AppendISOTime(append(b, `,"receivedAt":"`...), d.Received), '"')
	return append(b, '}')
}
