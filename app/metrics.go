package app

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/metrics"
)

// meter writes the Worker's data points to the METRICS dataset: the
// handler's, one per request, and one per settle attempt. It wraps the
// store and the gateway to count, in each request's or attempt's
// metrics.Tally, its storage round trips and its time at the gateway. A
// nil meter (METRICS unbound) wraps nothing and writes nothing.
type meter struct {
	dataset metrics.Dataset
	log     eventlog.Sink
	now     func() time.Time
	// mode is the storage mode every point names.
	mode string
	// refused is set once a point was refused, which is logged once.
	refused atomic.Bool
}

// newMeter is env's meter; nil when METRICS is unbound.
func newMeter(env Env, log eventlog.Sink) *meter {
	if env.Metrics == nil {
		return nil
	}
	return &meter{dataset: env.Metrics, log: log, now: env.Now}
}

// write writes p with the Worker's mode. A point refused is dropped, and
// the first one logged: the runtime refuses points over Analytics
// Engine's limits, such as past an invocation's 250.
func (m *meter) write(p metrics.Point) {
	p.Mode = m.mode
	if err := p.Write(m.dataset); err != nil && m.refused.CompareAndSwap(false, true) {
		m.log.Log(eventlog.Line{Outcome: "metrics_write_failed", Error: "a data point for " + MetricsBinding + " was refused: " + err.Error()})
	}
}

// TrapPoint is the data point a trap of the Go program writes
// (workers.MeasureTraps); false without a dataset.
func (w *Worker) TrapPoint() (metrics.Point, bool) {
	if w.meter == nil {
		return metrics.Point{}, false
	}
	return metrics.Point{Outcome: metrics.InternalError, Mode: w.meter.mode, Status: 500, Event: metrics.Trap}, true
}

// requests is httpapi.Options.Metrics: nil without a dataset.
func (m *meter) requests() func(metrics.Point) {
	if m == nil {
		return nil
	}
	return m.write
}

// observeSettle is intake.Options.ObserveSettle: a data point per settle
// attempt; nil without a dataset.
func (m *meter) observeSettle() func(context.Context, intake.Key) (context.Context, func(intake.Settlement, error)) {
	if m == nil {
		return nil
	}
	return func(ctx context.Context, key intake.Key) (context.Context, func(intake.Settlement, error)) {
		start := m.now()
		ctx, tally := metrics.WithTally(ctx)
		return ctx, func(st intake.Settlement, err error) {
			end := m.now()
			p := metrics.Point{Client: key.Client, Outcome: settleOutcome(st, err), Event: metrics.Settle, Took: end.Sub(start),
				Gateway: tally.Gateway(), GatewayCalls: tally.GatewayCalls(), StorageCalls: tally.StorageCalls(), Attempts: st.Attempts}
			if (p.Outcome == metrics.Settled || p.Outcome == metrics.Rejected) && !st.AcceptedAt.IsZero() {
				// From the order's acceptance: the first unknown outcome
				// came one gateway call later (docs/metrics.md).
				p.SettledAfter = end.Sub(st.AcceptedAt)
			}
			m.write(p)
		}
	}
}

// settleOutcome is a settle attempt's outcome.
func settleOutcome(st intake.Settlement, err error) metrics.Outcome {
	switch {
	case errors.Is(err, intake.ErrSettlePanicked):
		return metrics.InternalError
	case err != nil:
		return metrics.StorageUnavailable
	}
	switch st.Result {
	case intake.SettleAccepted:
		return metrics.Settled
	case intake.SettleRejected:
		return metrics.Rejected
	case intake.SettleUnknown:
		return metrics.Unknown
	case intake.SettleGaveUp:
		return metrics.Unresolved
	case intake.SettleBusy:
		return metrics.InProgress
	}
	return metrics.NothingToSettle
}

// namespace is ns counting each KV call as a storage round trip, and
// reading several keys at once where ns does (one round trip).
func (m *meter) namespace(ns Namespace) Namespace {
	if m == nil || ns == nil {
		return ns
	}
	counted := countingNamespace{ns}
	if many, ok := ns.(kv.ManyGetter); ok {
		return countingManyNamespace{counted, many}
	}
	return counted
}

// store is s counting each call as a storage round trip: one ledger RPC,
// or, in the object's own alarm, one synchronous step.
func (m *meter) store(s intake.Store) intake.Store {
	if m == nil || s == nil {
		return s
	}
	return countingStore{s}
}

// gateway is g timing each call; nil for the stand-in.
func (m *meter) gateway(g intake.Gateway) intake.Gateway {
	if m == nil || g == nil {
		return g
	}
	return timedGateway{g, m.now}
}

type countingNamespace struct{ Namespace }

func (n countingNamespace) Get(ctx context.Context, key string) (kv.Entry, error) {
	metrics.TallyFrom(ctx).AddStorageCall()
	return n.Namespace.Get(ctx, key)
}

func (n countingNamespace) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	metrics.TallyFrom(ctx).AddStorageCall()
	return n.Namespace.Put(ctx, key, e, opts)
}

func (n countingNamespace) Delete(ctx context.Context, key string) error {
	metrics.TallyFrom(ctx).AddStorageCall()
	return n.Namespace.Delete(ctx, key)
}

func (n countingNamespace) List(ctx context.Context, prefix, cursor string, limit int) ([]kv.Listed, string, error) {
	metrics.TallyFrom(ctx).AddStorageCall()
	return n.Namespace.List(ctx, prefix, cursor, limit)
}

type countingManyNamespace struct {
	countingNamespace
	many kv.ManyGetter
}

func (n countingManyNamespace) GetMany(ctx context.Context, keys ...string) ([]*kv.Entry, error) {
	metrics.TallyFrom(ctx).AddStorageCall()
	return n.many.GetMany(ctx, keys...)
}

type countingStore struct{ intake.Store }

func (s countingStore) Begin(ctx context.Context, key intake.Key, c intake.Claim) (intake.Record, error) {
	metrics.TallyFrom(ctx).AddStorageCall()
	return s.Store.Begin(ctx, key, c)
}

func (s countingStore) Commit(ctx context.Context, key intake.Key, c intake.Claim, r intake.Result) error {
	metrics.TallyFrom(ctx).AddStorageCall()
	return s.Store.Commit(ctx, key, c, r)
}

func (s countingStore) Release(ctx context.Context, key intake.Key, c intake.Claim) error {
	metrics.TallyFrom(ctx).AddStorageCall()
	return s.Store.Release(ctx, key, c)
}

func (s countingStore) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	metrics.TallyFrom(ctx).AddStorageCall()
	return s.Store.Lookup(ctx, key)
}

type timedGateway struct {
	intake.Gateway
	now func() time.Time
}

func (g timedGateway) Place(ctx context.Context, p intake.Placement) error {
	start := g.now()
	err := g.Gateway.Place(ctx, p)
	metrics.TallyFrom(ctx).AddGateway(g.now().Sub(start))
	return err
}
