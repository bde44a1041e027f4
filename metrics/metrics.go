// Package metrics is the Worker's data points in Workers Analytics Engine,
// one per request answered and one per settle attempt: Point, its columns
// in the order the dataset keeps them, and the Tally that counts what one
// request or attempt spends on storage and on the gateway.
package metrics

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"
)

// Dataset receives data points: workers.AnalyticsEngineDataset, or a
// recorder in tests. WriteDataPoint returns at once; its error is a point
// the dataset refused.
type Dataset interface {
	WriteDataPoint(indexes, blobs []string, doubles []float64) error
}

// Outcome is what a request or a settle attempt came to (blob1).
type Outcome string

// A request's outcomes.
const (
	// New: a new order placed (201).
	New Outcome = "new"
	// Replay: a stored outcome answered again, a receipt or a rejection:
	// a duplicate absorbed, or a lookup that found it.
	Replay Outcome = "replay"
	// KeyReused: the key holds another order (422).
	KeyReused Outcome = "key_reused"
	// Invalid: neither an order nor a lookup: a missing or invalid key, a
	// body that is too large, unreadable or no order, another method.
	Invalid Outcome = "invalid"
	// InProgress: another request holds the key (409); for a settle
	// attempt, another request or settler does.
	InProgress Outcome = "in_progress"
	// Unknown: the OMS's answer is unknown (503); for a settle attempt,
	// unknown again.
	Unknown Outcome = "unknown"
	// Rejected: the OMS refused the order for good, now (422); for a
	// settle attempt, the refusal is now stored.
	Rejected Outcome = "rejected"
	// RateLimited: over the client's budget of new orders (429).
	RateLimited Outcome = "rate_limited"
	// Unauthorized: no token, or a token of no client (401).
	Unauthorized Outcome = "unauthorized"
	// NotFound: a lookup of a key with nothing stored (404).
	NotFound Outcome = "not_found"
	// Unresolved: the settler gave up on the key (503); for a settle
	// attempt, it gave up now.
	Unresolved Outcome = "unresolved"
	// StorageUnavailable: the store failed before an outcome was stored
	// (503), or during a settle attempt.
	StorageUnavailable Outcome = "storage_unavailable"
	// Preflight and OriginNotAllowed: a browser's CORS preflight, allowed
	// (204) or refused (403).
	Preflight        Outcome = "preflight"
	OriginNotAllowed Outcome = "origin_not_allowed"
	// InternalError: the Worker failed unexpectedly (500).
	InternalError Outcome = "internal_error"
	// Misconfigured: a setting cannot work (500).
	Misconfigured Outcome = "misconfigured"
	// Policy: the idempotency policy page (200), which touches no storage.
	Policy Outcome = "policy"
)

// A settle attempt's outcomes, besides InProgress, Unknown, Rejected,
// Unresolved and StorageUnavailable.
const (
	// Settled: the OMS accepted the order, and its receipt is now stored.
	Settled Outcome = "settled"
	// NothingToSettle: the key was final, unresolved or gone already.
	NothingToSettle Outcome = "nothing_to_settle"
)

// Event is what a point counts (blob4): a request, by what it asks, or a
// settle attempt.
type Event string

const (
	Submit Event = "submit" // a POST: an order
	Lookup Event = "lookup" // a GET or HEAD: a key looked up
	Other  Event = "other"  // any other method: a preflight, a refusal
	Settle Event = "settle" // a settle attempt: no client waits
	// Trap: the Go program trapped (docs/operating.md), one point however
	// many requests it held, each answered 500 internal_error.
	Trap Event = "trap"
)

// EventOf is the event of a request with method.
func EventOf(method string) Event {
	switch method {
	case "POST":
		return Submit
	case "GET", "HEAD":
		return Lookup
	}
	return Other
}

// Point is one data point: a request answered, or a settle attempt.
type Point struct {
	// Client is the authenticated client, "" for the open Worker.
	Client  string
	Outcome Outcome
	// Mode is the storage mode, "kv" or "ledger".
	Mode string
	// Status is the HTTP status answered; 0 for a settle attempt.
	Status int
	Event  Event
	// Took is the request's time until its answer, or the attempt's.
	Took time.Duration
	// Gateway is the time spent in calls to the OMS; zero for none.
	Gateway time.Duration
	// StorageCalls counts the storage round trips made before the answer.
	StorageCalls int
	// Attempts is the gateway calls for the key that ended without an
	// answer stored: on an unknown or unresolved answer, and on every
	// settle attempt that read the key.
	Attempts int
	// SinceAccepted is, for a replay, the time since the order was
	// accepted: how long after the first request its duplicate came.
	SinceAccepted time.Duration
	// SettledAfter is, for a settle attempt that stored the final outcome,
	// the time since the order was accepted: the settling's whole time.
	SettledAfter time.Duration
	// GatewayCalls counts the calls to the OMS, 0 or 1: a call may take
	// under the Worker's clock's millisecond, and Gateway zero.
	GatewayCalls int
}

// The dataset's columns, in order: each Point field's column is its place
// here, and docs/metrics.md's schema table lists them in the same order
// (docs' tests check it).
var (
	indexColumns = []stringColumn{
		{"client", func(p Point) string { return p.Client }},
	}
	blobColumns = []stringColumn{
		{"outcome", func(p Point) string { return string(p.Outcome) }},
		{"mode", func(p Point) string { return p.Mode }},
		{"status", func(p Point) string {
			if p.Status == 0 {
				return ""
			}
			return strconv.Itoa(p.Status)
		}},
		{"event", func(p Point) string { return string(p.Event) }},
	}
	doubleColumns = []doubleColumn{
		{"ms", func(p Point) float64 { return millis(p.Took) }},
		{"gateway_ms", func(p Point) float64 { return millis(p.Gateway) }},
		{"storage_calls", func(p Point) float64 { return float64(p.StorageCalls) }},
		{"attempts", func(p Point) float64 { return float64(p.Attempts) }},
		{"since_accepted_ms", func(p Point) float64 { return millis(p.SinceAccepted) }},
		{"settled_after_ms", func(p Point) float64 { return millis(p.SettledAfter) }},
		{"gateway_calls", func(p Point) float64 { return float64(p.GatewayCalls) }},
	}
)

type stringColumn struct {
	field string
	value func(Point) string
}

type doubleColumn struct {
	field string
	value func(Point) float64
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Column is one column of the dataset.
type Column struct {
	// Name is the column's in the SQL API: index1, blob1, double1 ...
	Name string
	// Field is what docs/metrics.md calls it.
	Field string
}

// Columns are the dataset's columns, in order: indexes, blobs, doubles.
func Columns() []Column {
	var out []Column
	for i, c := range indexColumns {
		out = append(out, Column{"index" + strconv.Itoa(i+1), c.field})
	}
	for i, c := range blobColumns {
		out = append(out, Column{"blob" + strconv.Itoa(i+1), c.field})
	}
	for i, c := range doubleColumns {
		out = append(out, Column{"double" + strconv.Itoa(i+1), c.field})
	}
	return out
}

// DoubleIndex is the position among a point's doubles of the double that
// docs/metrics.md calls field, or -1 when none is called so.
func DoubleIndex(field string) int {
	for i, c := range doubleColumns {
		if c.field == field {
			return i
		}
	}
	return -1
}

// Fields returns p as the dataset's indexes, blobs and doubles, in the
// columns' order. An empty index is left out: Analytics Engine then keeps
// the point under the empty index, which index1 reads as "".
func (p Point) Fields() (indexes, blobs []string, doubles []float64) {
	for _, c := range indexColumns {
		if v := c.value(p); v != "" {
			indexes = append(indexes, v)
		}
	}
	blobs = make([]string, len(blobColumns))
	for i, c := range blobColumns {
		blobs[i] = c.value(p)
	}
	doubles = make([]float64, len(doubleColumns))
	for i, c := range doubleColumns {
		doubles[i] = c.value(p)
	}
	return indexes, blobs, doubles
}

// Write writes p to d.
func (p Point) Write(d Dataset) error {
	indexes, blobs, doubles := p.Fields()
	return d.WriteDataPoint(indexes, blobs, doubles)
}

// Tally counts what one request or settle attempt spends: its storage
// round trips and its time in the gateway. The Worker's store and gateway
// add to the Tally of the context they are called with; concurrent calls
// may add to one Tally. A nil Tally counts nothing.
type Tally struct {
	storageCalls atomic.Int64
	gateway      atomic.Int64 // nanoseconds
	gatewayCalls atomic.Int64
}

type tallyKey struct{}

// WithTally returns a context that carries a new Tally, and the Tally.
func WithTally(ctx context.Context) (context.Context, *Tally) {
	t := &Tally{}
	return context.WithValue(ctx, tallyKey{}, t), t
}

// TallyFrom returns ctx's Tally; nil if it has none.
func TallyFrom(ctx context.Context) *Tally {
	t, _ := ctx.Value(tallyKey{}).(*Tally)
	return t
}

// AddStorageCall counts one storage round trip.
func (t *Tally) AddStorageCall() {
	if t != nil {
		t.storageCalls.Add(1)
	}
}

// AddGateway counts a gateway call, which took d.
func (t *Tally) AddGateway(d time.Duration) {
	if t != nil {
		t.gateway.Add(int64(d))
		t.gatewayCalls.Add(1)
	}
}

// GatewayCalls is the gateway calls counted so far.
func (t *Tally) GatewayCalls() int { return int(t.gatewayCalls.Load()) }

// StorageCalls is the storage round trips counted so far.
func (t *Tally) StorageCalls() int { return int(t.storageCalls.Load()) }

// Gateway is the time counted in gateway calls so far.
func (t *Tally) Gateway() time.Duration { return time.Duration(t.gateway.Load()) }
