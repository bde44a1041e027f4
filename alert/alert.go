// Package alert pages an operator through PagerDuty's Events API v2: one
// trigger event per order that needs a person, under a dedup_key of its
// own, so that PagerDuty folds a page sent twice into one incident.
package alert

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/internal/sha256"
	"github.com/edge-orders/edge-orders/workers"
)

// The kinds of event that page, as the log lines name them.
const (
	// KindUnresolved: the settler gave up on an order whose outcome the
	// OMS never confirmed.
	KindUnresolved = "order_unresolved"
	// KindDeadLetter: a settle message kept failing until the queue gave
	// it up, for a key whose outcome is still unknown.
	KindDeadLetter = "dead_letter"
)

// Event is one thing an operator must act on.
type Event struct {
	Kind     string
	Key      intake.Key
	OrderID  string
	Attempts int
}

// DedupKey is the event's dedup_key: one per order (per key, since a key
// names one order), the same for a retried page and for either kind, so
// that PagerDuty keeps one incident per order. Without an order id it is
// a digest of the key, which never shows a client's text.
func (e Event) DedupKey() string {
	if e.OrderID != "" {
		return "edge-orders/order/" + e.OrderID
	}
	sum := sha256.Sum256([]byte(e.Key.String()))
	const digits = "0123456789abcdef"
	b := []byte("edge-orders/key/")
	for _, c := range sum[:16] {
		b = append(b, digits[c>>4], digits[c&15])
	}
	return string(b) // encoding/hex would bring fmt into the wasm
}

// Send makes one HTTP request and returns the whole answer; in the Worker
// it is the global fetch.
type Send func(ctx context.Context, r *workers.OutgoingRequest) (*workers.OutgoingResponse, error)

// Options configures a Pager; every field is required but Timeout.
type Options struct {
	// URL is where events are POSTed: PagerDuty's
	// https://events.pagerduty.com/v2/enqueue, or a stand-in that takes
	// the same events. It is secret: a URL may carry a token.
	URL string
	// RoutingKey is the PagerDuty service's integration key, a secret.
	RoutingKey string
	// Source names the Worker in each event.
	Source string
	Send   Send
	// Timeout bounds each page, answer included; zero means DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout bounds a page: PagerDuty answers in well under a second,
// and a page that hangs must not hold the settler's claim for long.
const DefaultTimeout = 5 * time.Second

// maxAnswerBytes bounds the answer read: PagerDuty's is a small object,
// and nothing in it is needed but its status.
const maxAnswerBytes = 4 << 10

// Pager sends events.
type Pager struct{ opts Options }

// New returns a Pager.
func New(opts Options) *Pager {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Pager{opts: opts}
}

// ErrBudgetSpent is Page's error once the run's Budget is spent: nothing
// was sent, and the event is still owed.
var ErrBudgetSpent = errors.New("alert: this run's pages are spent (alert.Budget)")

// ErrRefused is Page's error for an answer other than 2xx: the event was
// not taken, and is still owed.
var ErrRefused = errors.New("alert: the pager refused the event")

// Page sends e as a trigger event and returns nil once the pager took it
// (a 2xx answer: PagerDuty's 202). It returns ErrBudgetSpent, sending
// nothing, when ctx's Budget is spent, an error wrapping ErrRefused for
// any other answer, and the transport's error when none came. No error
// shows the URL or the routing key.
func (p *Pager) Page(ctx context.Context, e Event) error {
	if b, ok := ctx.Value(budgetKey{}).(*Budget); ok && !b.take() {
		return ErrBudgetSpent
	}
	resp, err := p.opts.Send(ctx, &workers.OutgoingRequest{
		Method:         "POST",
		URL:            p.opts.URL,
		Header:         []workers.Field{{Name: "Content-Type", Value: "application/json"}},
		Body:           p.body(e),
		Timeout:        p.opts.Timeout,
		MaxAnswerBytes: maxAnswerBytes,
	})
	if err != nil {
		return errors.New("alert: no answer from the pager: " + p.scrub(err.Error()))
	}
	if resp.Status < 200 || resp.Status > 299 {
		return errs.Detail(ErrRefused, "status "+strconv.Itoa(resp.Status))
	}
	return nil
}

// scrub keeps the secrets out of a transport error's text, which the
// runtime may write with the URL in it, as given or normalised (its host
// in lower case, a "/" added): the URL is taken out whole, and then each
// part of it that may carry a token (secretParts), and the routing key.
//
// A URL parser percent-encodes some characters of a part and not others
// (WHATWG's writes "=" in user info as %3D, but not "+"), which may leave
// no run of a part whole: the text is scrubbed once more with its escapes
// decoded, against the parts as configured and decoded.
func (p *Pager) scrub(text string) string {
	text = strings.ReplaceAll(text, p.opts.URL, "ALERT_WEBHOOK_URL")
	parts := append(secretParts(p.opts.URL), secretParts(percentDecoded(p.opts.URL))...)
	slices.SortFunc(parts, func(a, b string) int { return len(b) - len(a) })
	scrubParts := func(text string) string {
		for _, part := range parts {
			text = strings.ReplaceAll(text, part, "[ALERT_WEBHOOK_URL]")
		}
		if p.opts.RoutingKey != "" {
			text = strings.ReplaceAll(text, p.opts.RoutingKey, "ALERT_ROUTING_KEY")
		}
		return text
	}
	return scrubParts(percentDecoded(scrubParts(text)))
}

// percentDecoded is s with each %XX escape decoded; a % that starts no
// escape stays as it is.
func percentDecoded(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// minSecretPart is the shortest part of the URL scrub takes out by itself:
// shorter ones ("/", "v2") would garble the text and hide nothing.
const minSecretPart = 6

// secretParts are the parts of url that may carry a token, longest
// first: its user info, its path, query and fragment together, its path,
// its query, each query value, and its fragment. The host stays, so that an error
// still says where the page went.
func secretParts(url string) []string {
	_, rest, ok := strings.Cut(url, "://")
	if !ok {
		rest = url
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	parts := []string{tail}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		parts = append(parts, authority[:i])
	}
	beforeFragment, fragment, _ := strings.Cut(tail, "#")
	parts = append(parts, fragment)
	path, query, hasQuery := strings.Cut(beforeFragment, "?")
	parts = append(parts, path)
	if hasQuery {
		parts = append(parts, query)
		for pair := range strings.SplitSeq(query, "&") {
			_, value, _ := strings.Cut(pair, "=")
			parts = append(parts, value)
		}
	}
	// A URL parser may percent-encode a character of a part (WHATWG's
	// encodes "=", ";", "|" in user info, "{" "}" in a path): each run
	// between such characters goes too.
	for _, part := range slices.Clone(parts) {
		parts = append(parts, strings.FieldsFunc(part, func(r rune) bool { return !unreserved(r) })...)
	}
	kept := parts[:0]
	for _, part := range parts {
		if len(part) >= minSecretPart {
			kept = append(kept, part)
		}
	}
	slices.SortFunc(kept, func(a, b string) int { return len(b) - len(a) })
	return kept
}

// body is e as an Events API v2 trigger. The summary says what to do; the
// client's own text (its key) is only in custom_details, as a string.
func (p *Pager) body(e Event) []byte {
	summary, severity := "edge-orders: the outcome of order "+e.OrderID+" is unresolved: the OMS never confirmed it after "+
		strconv.Itoa(e.Attempts)+" calls, and the settler gave up; reconcile it with the OMS (runbook: docs/operating.md)", "critical"
	if e.Kind == KindDeadLetter {
		summary, severity = "edge-orders: the settle message of order "+e.OrderID+" was dead-lettered, its outcome still unknown after "+
			strconv.Itoa(e.Attempts)+" calls; settle it by hand (runbook: docs/operating.md)", "error"
	}
	b := []byte(`{"routing_key":`)
	b = jsjson.AppendString(b, p.opts.RoutingKey)
	b = append(b, `,"event_action":"trigger","dedup_key":`...)
	b = jsjson.AppendString(b, e.DedupKey())
	b = append(b, `,"payload":{"summary":`...)
	b = jsjson.AppendString(b, summary)
	b = append(b, `,"source":`...)
	b = jsjson.AppendString(b, p.opts.Source)
	b = append(b, `,"severity":"`+severity+`","class":`...)
	b = jsjson.AppendString(b, e.Kind)
	b = append(b, `,"custom_details":{"client":`...)
	b = jsjson.AppendString(b, e.Key.Client)
	b = append(b, `,"idempotency_key":`...)
	b = jsjson.AppendString(b, e.Key.ID)
	b = append(b, `,"order_id":`...)
	b = jsjson.AppendString(b, e.OrderID)
	b = strconv.AppendInt(append(b, `,"attempts":`...), int64(e.Attempts), 10)
	return append(b, "}}}"...)
}

// Budget bounds the pages one run sends (a Cron sweep, an alarm, a queue
// batch): a run that meets a thousand unresolved keys pages for the first
// few, and leaves the rest owed for the next run, rather than flooding
// the pager past its rate limit or the run past its time.
type Budget struct {
	mu   sync.Mutex
	left int
}

// NewBudget returns a Budget of n pages.
func NewBudget(n int) *Budget { return &Budget{left: n} }

func (b *Budget) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left <= 0 {
		return false
	}
	b.left--
	return true
}

type budgetKey struct{}

// WithBudget returns ctx with b: every Page under it takes one page from
// b. A Page under a context without one is not bounded.
func WithBudget(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// unreserved reports whether r is a character no URL parser encodes
// (RFC 3986's unreserved).
func unreserved(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~", r)
}
