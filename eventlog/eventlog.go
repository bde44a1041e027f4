// Package eventlog writes the Worker's log: one JSON line per event, which
// Workers Logs indexes.
package eventlog

import (
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/edge-orders/edge-orders/internal/jsjson"
)

// Line describes one event: a request, or something about the Worker itself
// (its configuration, a claim left behind). It never holds secrets.
type Line struct {
	// Outcome names what happened: created, replayed, an error code, or a
	// Worker event such as auth_disabled.
	Outcome string
	// Client is the authenticated client id; empty when the Worker runs open.
	Client  string
	Key     string
	Status  int
	OrderID string
	// Error is the internal error text behind an error outcome, such as the
	// KV failure behind a storage_error; clients never see it.
	Error string
	// Millis is the time spent; in a deployed Worker the clock only moves
	// during I/O, so this is mostly storage time.
	Millis int64
	// Attempts is how many gateway calls for the order ended without an
	// answer stored, on the settler's lines.
	Attempts int
	// Alert marks a line someone must act on, such as an order the settler
	// gave up on: it is written with "level":"error", which Workers Logs
	// can alert on.
	Alert bool
	// Action names an admin API action (list, inspect, resolve, purge):
	// the line is then an audit line, written with "level":"audit" and
	// kept at every LOG_LEVEL. Admin is the admin token's name, never the
	// token; Before and After are the key's state around the action, and
	// Note the operator's note.
	Action, Admin, Before, After, Note string
	// LetterID names the dead letter a line is about.
	LetterID string
}

// MaxFieldBytes bounds each field of a line as it is written: a client may
// send an invalid Idempotency-Key of any length (up to the request's header
// limit), and Workers Logs bills by volume. Every valid key, client id and
// order id is far shorter.
const MaxFieldBytes = 512

// AppendJSON appends l as one line of JSON, empty fields and a zero status
// (lines about the Worker rather than a request) left out. A field longer
// than MaxFieldBytes is cut at a character boundary and says how long it
// was.
func (l Line) AppendJSON(b []byte) []byte {
	b = jsjson.AppendString(append(b, `{"outcome":`...), l.Outcome)
	for _, f := range []struct{ name, value string }{{"client", l.Client}, {"key", l.Key}, {"orderId", l.OrderID}, {"error", l.Error},
		{"action", l.Action}, {"admin", l.Admin}, {"before", l.Before}, {"after", l.After}, {"note", l.Note}, {"letterId", l.LetterID}} {
		if f.value != "" {
			b = append(b, `,"`+f.name+`":`...)
			b = jsjson.AppendString(b, bounded(f.value))
		}
	}
	if l.Status != 0 {
		b = strconv.AppendInt(append(b, `,"status":`...), int64(l.Status), 10)
	}
	if l.Attempts != 0 {
		b = strconv.AppendInt(append(b, `,"attempts":`...), int64(l.Attempts), 10)
	}
	switch {
	case l.Alert:
		b = append(b, `,"level":"error"`...)
	case l.Action != "":
		b = append(b, `,"level":"audit"`...)
	}
	b = strconv.AppendInt(append(b, `,"ms":`...), l.Millis, 10)
	return append(b, '}')
}

// bounded returns s, or its first MaxFieldBytes at most, cut before a
// character that would not fit, with a note of s's length.
func bounded(s string) string {
	if len(s) <= MaxFieldBytes {
		return s
	}
	cut := MaxFieldBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "...(" + strconv.Itoa(len(s)) + " bytes)"
}

// Level says which lines a Sink keeps. Lines about the Worker itself
// (Status 0) are kept at every level.
type Level uint8

// The levels, from most to least said.
const (
	// All keeps every line.
	All Level = iota
	// Orders keeps every line but successful replays and lookups (status
	// 200): every order placed and every error. Under retries replays are
	// most of the traffic, and each line costs.
	Orders
	// Errors keeps only errors (status 400 and above).
	Errors
)

// LevelNames are the levels as LOG_LEVEL spells them.
var LevelNames = map[string]Level{"all": All, "orders": Orders, "errors": Errors}

// keeps reports whether level l keeps line.
func (l Level) keeps(line Line) bool {
	switch {
	case line.Status == 0 || l == All || line.Action != "":
		return true
	case l == Orders:
		return line.Status != 200
	}
	return line.Status >= 400
}

// Sink receives log lines. A nil Sink drops them.
type Sink func(Line)

// Log sends l to s, if s is set.
func (s Sink) Log(l Line) {
	if s != nil {
		s(l)
	}
}

// To returns a Sink that writes each line level keeps, newline-terminated,
// to w in one Write call.
func To(w io.Writer, level Level) Sink {
	return func(l Line) {
		if level.keeps(l) {
			w.Write(append(l.AppendJSON(nil), '\n'))
		}
	}
}
