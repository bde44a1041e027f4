// Package intake runs the idempotency lifecycle of an order submission over
// a Store: at most one order per key, every retry answered with the
// original receipt, and every order whose outcome is unknown settled with
// the gateway, with or without its client.
//
// The lifecycle lives in one file per concern: phase.go (the table of
// phases and who moves a key between them), step.go (the decisions both
// stores and the Service take by it), submit.go (a client's submission,
// the rate limit included), settle.go (the settler), lookup.go,
// fallback.go (the migration fallback), inflight.go and opened.go (what
// an instance remembers), cache.go (recent receipts).
package intake

import (
	"context"
	"errors"
	"time"
)

var (
	// ErrKeyReused is returned when the key's receipt or claim is for another
	// order; the receipt is not revealed.
	ErrKeyReused = errors.New("intake: idempotency key reused for a different order")
	// ErrInProgress is returned while another request holds the key.
	ErrInProgress = errors.New("intake: request with this key in progress")
	// ErrRateLimited is returned when Options.Limit refuses a new order.
	ErrRateLimited = errors.New("intake: too many new orders")
	// ErrNotFound is returned by Lookup for a key with no receipt and no claim.
	ErrNotFound = errors.New("intake: no receipt for this key")
	// ErrStorageUnavailable wraps every storage failure. No receipt was
	// handed out, and a retry under the same key places at most one order
	// (see the Store for what holds across instances).
	ErrStorageUnavailable = errors.New("intake: storage unavailable")
	// ErrGivenBack marks a Begin whose write of a takeover failed, after
	// which the Store wrote the key back open as its read had found it
	// (GiveBack; KV, which has no compare-and-swap). That read may have
	// been stale: the due time written back may be past, its chain of
	// settle messages ended since, so the caller sends a message.
	ErrGivenBack = errors.New("intake: the key was given back as it was found")
	// ErrOutcomeUnknown is matched by every *Unsettled: the gateway's
	// answer is unknown (a timeout, a lost connection, a 5xx), so the OMS
	// may or may not have the order.
	ErrOutcomeUnknown = errors.New("intake: order outcome unknown")
	// ErrUnresolved is matched by an *Unsettled whose key the settler gave
	// up on after Options.SettleMaxAge.
	ErrUnresolved = errors.New("intake: order outcome unresolved")
	// ErrRejected is matched by every *Rejection.
	ErrRejected = errors.New("intake: order rejected")
)

// Defaults for Options.
const (
	// DefaultCachedReceipts bounds the receipts an instance keeps in memory
	// (a receipt is about 200 bytes).
	DefaultCachedReceipts = 4096
	// DefaultSettleMaxAge is how long the settler keeps calling the gateway
	// for an order whose outcome is unknown, from its acceptance.
	DefaultSettleMaxAge = 24 * time.Hour
)

// Options tunes a Service. ResultTTL and PendingTTL are required; the
// Worker's defaults live in package config.
type Options struct {
	// ResultTTL is how long a receipt stays replayable.
	ResultTTL time.Duration
	// PendingTTL is a claim's lease: how long it blocks its key if the
	// request holding it dies.
	PendingTTL time.Duration
	// Wait is how long a duplicate of a request in flight waits for its
	// outcome before it is answered ErrInProgress; zero answers at once.
	Wait time.Duration
	// Gateway passes each new order on to the OMS. Nil is the reference's
	// stand-in: every order is accepted at once and nothing leaves the
	// Worker, so no outcome is ever unknown. Over a Store that settles
	// itself its answer precedes its commit, as a gateway's does;
	// otherwise it commits first, and a key keeps its order id only for
	// its claim's lease, as the reference's KV layout does
	// (Lifecycle.SettlesItself).
	Gateway Gateway
	// SettleMaxAge is how long, from an order's acceptance, the settler
	// keeps calling the gateway for it while its outcome is unknown;
	// zero means DefaultSettleMaxAge. After that the key is unresolved and
	// kept for another ResultTTL.
	SettleMaxAge time.Duration
	// Schedule, if set, is told when an attempt ended with an unknown
	// outcome and when the settler is due for key: KV mode sends a queue
	// message. A Store that settles by itself (the ledger's alarm) needs
	// none.
	Schedule func(ctx context.Context, key Key, at time.Time) error
	// OnUnresolved is told when the settler has given up on a key, once
	// the give-up is stored: the Worker logs it at error level.
	OnUnresolved func(ctx context.Context, key Key, p Placement, attempts int)
	// ReportUnresolved, if set, is told when the settler gives up on a
	// key, before the give-up is stored: the Worker pages an operator and
	// sends the give-up's dead letter. An error (the pager did not take
	// it, or the letter went nowhere) stores the key unresolved but due
	// again after ReportRetryDelay, when the settler calls the gateway
	// once more and, still without an answer, reports it again; OnUnresolved
	// waits for the report that succeeds. So the key itself records that a
	// report is owed, and a report is never lost, though it may be made
	// twice (the give-up's write failed after the pager took it).
	ReportUnresolved func(ctx context.Context, key Key, p Placement, attempts int) error
	// ObserveSettle, if set, is called as each Settle starts, and the
	// function it returns as that Settle ends, with its result: the
	// Worker measures a settle attempt under the context it returns (its
	// storage calls and gateway time) and writes a data point for it.
	ObserveSettle func(ctx context.Context, key Key) (context.Context, func(Settlement, error))
	// Defer runs work after the response. The Worker passes
	// workers.WaitUntil; nil runs it at once.
	Defer func(ctx context.Context, task func(context.Context))
	// Fallback, if set, is consulted until FallbackUntil when a new claim
	// finds nothing: a receipt found there (stored before a migration to
	// this Store) is copied into the Store and replayed instead of placing
	// a new order.
	Fallback      Fallback
	FallbackUntil time.Time
	// Now is the clock stamped on receipts.
	Now func() time.Time
	// NewID mints claim tokens: random and unique, such as UUIDs. Nil
	// uses math/rand/v2. Order ids are derived (OrderIDFor).
	NewID func() string
	// Sleep waits between polls. The Worker passes workers.Sleep; nil uses a
	// Go timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnReleaseError is told when a claim could not be released; it then
	// holds its key until its lease ends.
	OnReleaseError func(key Key, err error)
	// CachedReceipts is how many receipts the instance keeps in memory for
	// replays; zero means DefaultCachedReceipts, negative none.
	CachedReceipts int
	// Limit, if set, is asked before each new order (never for replays,
	// lookups or an order whose outcome is unknown) whether who may place
	// one: the client, or "addr:" and the caller's address (Submit's
	// caller) for the open Worker. False answers ErrRateLimited.
	Limit func(ctx context.Context, who string) (bool, error)
}

// Service accepts orders at most once per key among the requests its Store
// sees as one: exactly once everywhere over the ledger, within one instance
// over KV.
type Service struct {
	store Store
	opts  Options
	// life is the Store's Lifecycle, read once.
	life Lifecycle
	// inFlight holds the keys that requests of this instance, and its
	// settler, are working on: only one of them goes on to the Store, the
	// others wait for its receipt in memory. Over KV this is what makes a
	// claim exact within the instance.
	inFlight keySet
	// receipts holds recent outcomes for replays without a round trip.
	receipts *receiptCache
	// opened remembers the order ids this instance sent to the gateway
	// without an answer, so that a stale read never mints a second one;
	// nil over a Store whose reads are exact (the ledger), where memory
	// must never override what it says: a key it holds as absent was
	// purged, and a claim minted from memory would store the erased
	// receipt again.
	opened *openedOrders
	// settles is false for the stand-in, whose outcomes are never unknown.
	settles bool
	// settledWithoutClient is true when a key left open is settled with
	// no client's retry: by the settler with a gateway, by the Store's own
	// alarm with the stand-in (Lifecycle.SettlesItself). A client's answer
	// then precedes its commit.
	settledWithoutClient bool
}

// New returns a Service over store, run as store.Lifecycle says.
func New(store Store, opts Options) *Service {
	if opts.ResultTTL <= 0 || opts.PendingTTL <= 0 {
		panic("intake: Options.ResultTTL and PendingTTL are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = randomID
	}
	if opts.Sleep == nil {
		opts.Sleep = Sleep
	}
	if opts.OnReleaseError == nil {
		opts.OnReleaseError = func(Key, error) {}
	}
	if opts.Defer == nil {
		opts.Defer = func(ctx context.Context, task func(context.Context)) { task(ctx) }
	}
	if opts.CachedReceipts == 0 {
		opts.CachedReceipts = DefaultCachedReceipts
	}
	if opts.SettleMaxAge <= 0 {
		opts.SettleMaxAge = DefaultSettleMaxAge
	}
	settles := opts.Gateway != nil
	if !settles {
		opts.Gateway = StandIn{}
	}
	// An operator's answer takes the gateway's place (Admin.Resolve).
	opts.Gateway = answering{opts.Gateway}
	life := store.Lifecycle()
	var opened *openedOrders
	if life.ReadsLag > 0 {
		opened = newOpenedOrders()
	}
	return &Service{
		store:                store,
		opts:                 opts,
		life:                 life,
		inFlight:             keySet{keys: make(map[string]inFlightEntry)},
		receipts:             newReceiptCache(max(opts.CachedReceipts, 0)),
		opened:               opened,
		settles:              settles,
		settledWithoutClient: settles || life.SettlesItself,
	}
}

// RetryAfter is how long a claim can block its key at most: a retry after
// that long is never answered ErrInProgress because of the claim seen now.
func (s *Service) RetryAfter() time.Duration { return s.opts.PendingTTL }

// Policy is what a Service promises its clients about keys, as its
// Options and its Store make it: the figures the Worker publishes.
type Policy struct {
	// ResultTTL is how long an outcome replays once it is stored.
	ResultTTL time.Duration
	// PendingTTL is a claim's lease: the longest a request that died holds
	// its key, and ErrInProgress's retry-after (RetryAfter).
	PendingTTL time.Duration
	// Wait is how long a duplicate of a request in flight waits for its
	// outcome before it is answered ErrInProgress.
	Wait time.Duration
	// Settles is true with a Gateway: an outcome may be unknown, and the
	// settler asks the gateway again for SettleMaxAge from the order's
	// acceptance. Every key is then kept at least until its acceptance
	// plus SettleMaxAge plus ResultTTL. False is the stand-in, whose
	// outcomes are never unknown.
	Settles      bool
	SettleMaxAge time.Duration
	// SettlerRuns is true when something asks the gateway again without a
	// client: the Store's own alarm (Lifecycle.SettlesItself) or a settle
	// queue (Options.Schedule). Without it, an unknown outcome is settled
	// only by a retry under its key, and no NextAttempt is honoured.
	SettlerRuns bool
	// TellsExpiry is true when Lookup says when a stored outcome expires
	// (Outcome.Expires): the Store tells it (Lifecycle.TellsExpiry).
	TellsExpiry bool
	// ReadsLag is how long a read of a key may miss a write: the Store's
	// (Lifecycle.ReadsLag, KV's), or during a migration the Fallback's;
	// zero where reads never do.
	ReadsLag time.Duration
	// FallbackUntil is, during a migration, until when keys the Store has
	// not seen are read from the Fallback (KV, with its lag); zero
	// otherwise.
	FallbackUntil time.Time
}

// Policy returns the Service's Policy.
func (s *Service) Policy() Policy {
	p := Policy{ResultTTL: s.opts.ResultTTL, PendingTTL: s.opts.PendingTTL, Wait: s.opts.Wait,
		Settles: s.settles, SettleMaxAge: s.opts.SettleMaxAge, TellsExpiry: s.life.TellsExpiry,
		SettlerRuns: s.life.SettlesItself || s.opts.Schedule != nil}
	if s.life.ReadsLag > 0 {
		p.ReadsLag = s.life.ReadsLag
	}
	if f, ok := s.opts.Fallback.(interface{ Lifecycle() Lifecycle }); ok && p.ReadsLag == 0 {
		p.ReadsLag = f.Lifecycle().ReadsLag
	}
	if s.opts.Fallback != nil {
		p.FallbackUntil = s.opts.FallbackUntil
	}
	return p
}

// Sleep waits d on a Go timer, or until ctx is done: the default
// Options.Sleep, for Services outside a Worker.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
