// Package intake runs the idempotency lifecycle of an order submission over
// a Store: at most one order per key, and every retry answered with the
// original receipt.
package intake

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/uuid"
	"github.com/edge-orders/edge-orders/order"
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
	// ErrUnavailable wraps every storage failure. No receipt was handed out,
	// and a retry under the same key places at most one order (see the
	// Store for what holds across instances).
	ErrUnavailable = errors.New("intake: storage unavailable")
	// ErrOutcomeUnknown wraps a gateway failure whose outcome is unknown
	// (a timeout, a lost connection, a 5xx): the OMS may or may not have
	// the order. The key keeps its order id and is free at once, and a
	// retry calls the gateway again with the same order id. Lookup returns
	// it for a key left so.
	ErrOutcomeUnknown = errors.New("intake: order outcome unknown")
	// ErrRejected is matched by every *Rejection.
	ErrRejected = errors.New("intake: order rejected")
)

// Rejection is the OMS's final refusal of an order: a Gateway returns it,
// and Submit and Lookup return it for a key whose stored outcome is one.
type Rejection struct {
	// Reason is the OMS's, as the receipt keeps it (order.MaxReasonBytes).
	Reason string
	// OrderID is the refused order's id; the Service sets it.
	OrderID string
	// Replayed is true when the rejection was stored by an earlier request.
	Replayed bool
}

func (r *Rejection) Error() string { return "intake: order rejected: " + r.Reason }

// Is makes every Rejection match ErrRejected.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }

// DefaultCachedReceipts bounds the receipts an instance keeps in memory (a
// receipt is about 200 bytes).
const DefaultCachedReceipts = 4096

// Polling while a duplicate waits for the request that holds its key: the
// first look soon, since most requests take tens of milliseconds, then
// doubling up to a cap.
const (
	firstPoll = 20 * time.Millisecond
	maxPoll   = 320 * time.Millisecond
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
	// ValidateFirst validates the body before anything is stored, so an
	// invalid body costs no writes. Off, the body is validated after the
	// claim, as the reference does.
	ValidateFirst bool
	// Gateway passes each new order on to the OMS; nil is the StandIn.
	Gateway Gateway
	// ReleaseAfterCommit deletes the claim once the outcome is stored, after
	// the response (through Defer): the reference's check, claim, write,
	// release. A Store whose Commit replaces the claim, as the ledger's
	// does, leaves it off; so does KV mode when claims are left to expire.
	ReleaseAfterCommit bool
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
	// Sleep waits between polls. The Worker passes workers.Sleep; nil uses a
	// Go timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnReleaseError is told when a claim could not be released; it then
	// holds its key until its lease ends.
	OnReleaseError func(key Key, err error)
	// CachedReceipts is how many receipts the instance keeps in memory for
	// replays; zero means DefaultCachedReceipts, negative none.
	CachedReceipts int
	// Limit, if set, is asked before each new order (never for replays or
	// lookups) whether who (the client, or the caller's address for the open
	// Worker) may place one; false answers ErrRateLimited.
	Limit func(ctx context.Context, who string) (bool, error)
}

type callerKey struct{}

// WithCaller returns ctx carrying how to read the caller's address, which
// the rate limit counts against when the Worker runs open. addr is called
// only then: reading a request header costs a crossing to JavaScript that
// most requests need not pay.
func WithCaller(ctx context.Context, addr func() string) context.Context {
	return context.WithValue(ctx, callerKey{}, addr)
}

// admit asks Options.Limit whether key's client, or the caller, may place
// a new order.
func (s *Service) admit(ctx context.Context, key Key) error {
	who := key.Client
	if who == "" {
		var addr string
		if read, ok := ctx.Value(callerKey{}).(func() string); ok {
			addr = read()
		}
		who = "addr:" + addr
	}
	ok, err := s.opts.Limit(ctx, who)
	switch {
	case err != nil:
		return unavailable(err)
	case !ok:
		return ErrRateLimited
	}
	return nil
}

// Fallback is a read-only source of receipts stored before a migration.
type Fallback interface {
	Lookup(ctx context.Context, key Key) (Record, error)
}

// Outcome is a successful submission's or lookup's response.
type Outcome struct {
	// Receipt is the receipt JSON, byte for byte as stored.
	Receipt []byte
	// Replayed is true when the receipt was stored by an earlier request.
	Replayed bool
	// OrderID is the receipt's order id, for logs; empty if a stored receipt
	// has none.
	OrderID string
}

// Service accepts orders at most once per key among the requests its Store
// sees as one: exactly once everywhere over the ledger, within one instance
// over KV.
type Service struct {
	store Store
	opts  Options
	// inFlight holds the keys that requests of this instance are working
	// on: only one of them goes on to the Store, the others wait for its
	// receipt in memory. Over KV this is what makes a claim exact within
	// the instance.
	inFlight keySet
	// receipts holds recent outcomes for replays without a round trip.
	receipts *receiptCache
	// keep is how long a key keeps its order id once the order may have
	// reached the gateway (Claim.Keep).
	keep time.Duration
}

// New returns a Service over store.
func New(store Store, opts Options) *Service {
	if opts.ResultTTL <= 0 || opts.PendingTTL <= 0 {
		panic("intake: Options.ResultTTL and PendingTTL are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
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
	keep := opts.ResultTTL
	if opts.Gateway == nil {
		opts.Gateway = StandIn{}
	}
	if _, ok := opts.Gateway.(StandIn); ok {
		// The stand-in reaches nothing outside, so an order id need not
		// outlive its claim: KV's claims stay exactly the reference's.
		keep = 0
	}
	return &Service{
		store:    store,
		opts:     opts,
		inFlight: keySet{keys: make(map[string]inFlightEntry)},
		receipts: newReceiptCache(max(opts.CachedReceipts, 0)),
		keep:     keep,
	}
}

// RetryAfter is how long a claim can block its key at most: a retry after
// that long is never answered ErrInProgress because of the claim seen now.
func (s *Service) RetryAfter() time.Duration { return s.opts.PendingTTL }

// Submit places the order in body under key, at most once per key.
//
// It returns the stored receipt if one exists for the same order;
// ErrKeyReused when the key's receipt or claim is for a different order;
// ErrInProgress while another request holds the key past the Wait; an error
// wrapping order.ErrInvalid for a body that is not a valid order (the key
// stays free); ErrRateLimited when Options.Limit refuses a new order; a
// *Rejection when the OMS refused the order, now or before; an error
// wrapping ErrOutcomeUnknown when the gateway's answer is unknown; and an
// error wrapping ErrUnavailable when storage fails. On every error no
// receipt was handed out, and a retry under the same key places the order
// at most once.
func (s *Service) Submit(ctx context.Context, key Key, body []byte) (Outcome, error) {
	sub := submission{key: key, body: body}
	if s.opts.ValidateFirst {
		if err := sub.parse(); err != nil {
			return Outcome{}, err
		}
	}
	// The wait ends at the deadline or once the sleeps add up to Wait,
	// whichever comes first: in a Worker the clock only moves with I/O.
	// The clock is read once, and then once per poll: on js/wasm each
	// reading is a call into JavaScript.
	now := s.opts.Now()
	deadline := now.Add(s.opts.Wait)
	var slept time.Duration
	for delay := firstPoll; ; delay = min(2*delay, maxPoll) {
		out, err := s.attempt(ctx, &sub, now)
		if !errors.Is(err, ErrInProgress) {
			return out, err
		}
		if slept+delay > s.opts.Wait || !now.Add(delay).Before(deadline) || s.opts.Sleep(ctx, delay) != nil {
			return s.inProgress(ctx, &sub, err)
		}
		slept += delay
		now = s.opts.Now()
	}
}

// errInFlight is ErrInProgress because a request of this instance holds the
// key, which the Store has not been asked about.
var errInFlight = errs.Wrap(ErrInProgress, ErrInProgress.Error()+" in this instance")

// inProgress answers a submission whose wait ran out with err. If only
// this instance's in-flight set held the key, the Store is asked once: the
// request holding it may have been abandoned by the runtime after another
// request stored the outcome, and a 409 must not hide a stored receipt.
func (s *Service) inProgress(ctx context.Context, sub *submission, err error) (Outcome, error) {
	if !errors.Is(err, errInFlight) {
		return Outcome{}, err
	}
	rec, lerr := s.store.Lookup(ctx, sub.key)
	if lerr != nil || rec.State != Stored {
		return Outcome{}, ErrInProgress
	}
	s.receipts.put(sub.key.String(), rec, s.opts.Now())
	return s.replay(rec, sub)
}

// submission is one Submit call's request, parsed, and its fingerprint
// hashed, at most once however many times the request polls.
type submission struct {
	key    Key
	body   []byte
	order  order.Order
	fp     string // the order's fingerprint, once parsed
	parsed bool
}

func (sub *submission) parse() error {
	if sub.parsed {
		return nil
	}
	o, err := order.Parse(sub.body)
	if err != nil {
		return err
	}
	sub.order, sub.fp, sub.parsed = o, o.Fingerprint(), true
	return nil
}

// fingerprint is the order's, or "" before the body is parsed.
func (sub *submission) fingerprint() string { return sub.fp }

// attempt runs the lifecycle once, starting at now; ErrInProgress means
// another request holds the key now.
func (s *Service) attempt(ctx context.Context, sub *submission, now time.Time) (Outcome, error) {
	cacheKey := sub.key.String()
	if rec, ok := s.receipts.get(cacheKey, now); ok {
		return s.replay(rec, sub)
	}
	// Only one request per key and instance goes on to the Store; the
	// others find its outcome in memory on their next poll. The check does
	// not block, so no request's goroutine is ever woken by another
	// request; an entry older than the claim lease, left by a request the
	// runtime abandoned, is taken over like an expired claim, and each
	// request removes only its own entry.
	entry, ok := s.inFlight.add(cacheKey, now, s.opts.PendingTTL)
	if !ok {
		return Outcome{}, errInFlight
	}
	defer s.inFlight.remove(cacheKey, entry)

	// The order id and time are minted before the claim and stored with
	// it, so every gateway call for the key carries them.
	claim := Claim{Token: uuid.New(), Fingerprint: sub.fingerprint(), OrderID: uuid.New(), AcceptedAt: now,
		Lease: s.opts.PendingTTL, Keep: s.keep}
	// During a migration a key new to the Store may still have a receipt
	// in the Fallback, whose replay must not count: the limit is then asked
	// once the Fallback has nothing either.
	limitLater := s.opts.Limit != nil && s.fallback()
	if s.opts.Limit != nil && !limitLater {
		claim.Admit = func(ctx context.Context) error { return s.admit(ctx, sub.key) }
	}
	rec, err := s.store.Begin(ctx, sub.key, claim)
	switch {
	case errors.Is(err, ErrRateLimited) || errors.Is(err, ErrUnavailable):
		return Outcome{}, err
	case err != nil:
		return Outcome{}, unavailable(err)
	case rec.State == Stored:
		s.receipts.put(cacheKey, rec, now)
		return s.replay(rec, sub)
	case rec.State == Held:
		if claim.Fingerprint != "" && rec.Fingerprint != "" && rec.Fingerprint != claim.Fingerprint {
			return Outcome{}, ErrKeyReused
		}
		return Outcome{}, ErrInProgress
	case rec.State == Open:
		// Begin leaves an Open key alone only for a different order.
		return Outcome{}, ErrKeyReused
	}

	// The claim is ours: from here on every way out commits or releases it.
	if rec.OrderID != "" {
		// An earlier attempt may have reached the gateway: its order id,
		// and the order it is for, are the key's for good.
		claim.OrderID, claim.AcceptedAt, claim.Sent = rec.OrderID, rec.AcceptedAt, true
		if rec.Fingerprint != "" {
			claim.Fingerprint = rec.Fingerprint
		}
	}
	if err := sub.parse(); err != nil {
		s.release(ctx, sub.key, claim)
		return Outcome{}, err
	}
	if fp := sub.fingerprint(); claim.Fingerprint != fp {
		if claim.Sent && claim.Fingerprint != "" {
			s.release(ctx, sub.key, claim)
			return Outcome{}, ErrKeyReused
		}
		// Over KV the claim was made before the body was read; a release
		// from here on must name the order.
		claim.Fingerprint = fp
	}
	if s.fallback() {
		if out, done, err := s.adopt(ctx, sub, &claim); done {
			return out, err
		}
	}
	if limitLater && !claim.Sent {
		if err := s.admit(ctx, sub.key); err != nil {
			s.release(ctx, sub.key, claim)
			return Outcome{}, err
		}
	}
	return s.place(ctx, sub, claim)
}

// place passes the claimed order to the gateway and stores its outcome. An
// unknown outcome releases the claim with its order id kept, so a retry
// may come at once and calls the gateway again with the same order id.
func (s *Service) place(ctx context.Context, sub *submission, claim Claim) (Outcome, error) {
	receipt := order.Receipt{OrderID: claim.OrderID, Status: order.StatusAccepted, Order: sub.order, AcceptedAt: claim.AcceptedAt}
	claim.Sent = true
	err := s.opts.Gateway.Place(ctx, Placement{OrderID: claim.OrderID, Client: sub.key.Client, Order: sub.order, AcceptedAt: claim.AcceptedAt})
	var rejection *Rejection
	switch {
	case errors.As(err, &rejection):
		receipt.Status, receipt.Reason = order.StatusRejected, order.TruncateReason(rejection.Reason)
	case err != nil:
		s.release(ctx, sub.key, claim)
		return Outcome{}, errs.Detail(ErrOutcomeUnknown, err.Error())
	}
	result := Result{Body: receipt.JSON(), Rejected: receipt.Status == order.StatusRejected,
		Fingerprint: sub.fingerprint(), TTL: s.opts.ResultTTL}
	if err := s.commit(ctx, sub.key, claim, result, s.opts.Now()); err != nil {
		return Outcome{}, err
	}
	if result.Rejected {
		return Outcome{}, &Rejection{Reason: receipt.Reason, OrderID: receipt.OrderID}
	}
	return Outcome{Receipt: result.Body, OrderID: receipt.OrderID}, nil
}

// commit stores result under claim and caches it as stored no later than
// at (its expiry in the cache then comes no later than in storage).
// ErrInProgress means another request took the key over after claim's
// lease ran out: its outcome is the key's. Any other failure releases the
// claim: without a stored outcome a retry places the order, under the same
// order id once it may have reached the gateway.
func (s *Service) commit(ctx context.Context, key Key, claim Claim, result Result, at time.Time) error {
	if err := s.store.Commit(ctx, key, claim, result); err != nil {
		if errors.Is(err, ErrLostClaim) {
			return ErrInProgress
		}
		s.release(ctx, key, claim)
		return unavailable(err)
	}
	s.receipts.put(key.String(), Record{State: Stored, Body: result.Body, Rejected: result.Rejected,
		Fingerprint: result.Fingerprint, Expires: at.Add(result.TTL)}, at)
	if s.opts.ReleaseAfterCommit {
		claim.Sent = false // the outcome is stored: the claim goes
		s.opts.Defer(ctx, func(ctx context.Context) { s.release(ctx, key, claim) })
	}
	return nil
}

// fallback reports whether the Fallback is to be consulted now.
func (s *Service) fallback() bool {
	return s.opts.Fallback != nil && s.opts.Now().Before(s.opts.FallbackUntil)
}

// adopt looks the claimed key up in the Fallback (done when it answered
// the submission). A receipt found there is committed under claim and
// replayed; a claim there, a request still in flight in KV mode, is a
// request in progress; an order id kept there is the claim's from now on;
// nothing lets the new order go ahead.
func (s *Service) adopt(ctx context.Context, sub *submission, claim *Claim) (out Outcome, done bool, err error) {
	rec, err := s.opts.Fallback.Lookup(ctx, sub.key)
	switch {
	case err != nil:
		s.release(ctx, sub.key, *claim)
		return Outcome{}, true, unavailable(err)
	case rec.State == Held:
		s.release(ctx, sub.key, *claim)
		return Outcome{}, true, ErrInProgress
	case rec.State == Open && !claim.Sent:
		claim.OrderID, claim.AcceptedAt, claim.Sent = rec.OrderID, rec.AcceptedAt, true
		return Outcome{}, false, nil
	case rec.State != Stored:
		return Outcome{}, false, nil
	}
	result := Result{Body: rec.Body, Rejected: rec.Rejected, Fingerprint: rec.Fingerprint, TTL: s.opts.ResultTTL}
	if err := s.commit(ctx, sub.key, *claim, result, s.opts.Now()); err != nil {
		return Outcome{}, true, err
	}
	out, err = s.replay(rec, sub)
	return out, true, err
}

// Lookup returns key's stored receipt without a body to check it against
// and without changing anything: a *Rejection when the stored outcome is
// one, ErrInProgress while a request holds the key, ErrOutcomeUnknown when
// an attempt ended without the gateway's answer (the order is settled by
// submitting it again), ErrNotFound when nothing is stored, and an error
// wrapping ErrUnavailable when storage fails.
func (s *Service) Lookup(ctx context.Context, key Key) (Outcome, error) {
	now := s.opts.Now()
	if rec, ok := s.receipts.get(key.String(), now); ok {
		return replayed(rec)
	}
	rec, err := s.store.Lookup(ctx, key)
	if err == nil && rec.State == Absent && s.fallback() {
		rec, err = s.opts.Fallback.Lookup(ctx, key)
	}
	switch {
	case err != nil:
		return Outcome{}, unavailable(err)
	case rec.State == Held:
		return Outcome{}, ErrInProgress
	case rec.State == Open:
		return Outcome{}, errs.Detail(ErrOutcomeUnknown, "an attempt ended without the gateway's answer")
	case rec.State != Stored:
		return Outcome{}, ErrNotFound
	}
	s.receipts.put(key.String(), rec, now)
	return replayed(rec)
}

// replay answers with a stored outcome if the submission is the order it
// was stored for. Receipts stored without a fingerprint, as the TypeScript
// reference stores them, replay whatever the body.
func (s *Service) replay(rec Record, sub *submission) (Outcome, error) {
	if rec.Fingerprint != "" {
		if err := sub.parse(); err != nil {
			return Outcome{}, err
		}
		if sub.fingerprint() != rec.Fingerprint {
			return Outcome{}, ErrKeyReused
		}
	}
	return replayed(rec)
}

// replayed is a stored outcome as an earlier request's: a receipt, or the
// rejection it records.
func replayed(rec Record) (Outcome, error) {
	id, _, reason := order.ReceiptFields(rec.Body)
	if rec.Rejected {
		return Outcome{}, &Rejection{Reason: reason, OrderID: id, Replayed: true}
	}
	return Outcome{Receipt: rec.Body, Replayed: true, OrderID: id}, nil
}

// release ends claim, reporting a failure to OnReleaseError. A claim left
// behind blocks its key for the whole lease, and Release is idempotent for
// its claim, so a failed release is tried once more. It ignores ctx's
// cancellation: a request that is abandoned midway must still free its key.
func (s *Service) release(ctx context.Context, key Key, claim Claim) {
	ctx = context.WithoutCancel(ctx)
	err := s.store.Release(ctx, key, claim)
	if err != nil {
		err = s.store.Release(ctx, key, claim)
	}
	if err != nil {
		s.opts.OnReleaseError(key, err)
	}
}

func unavailable(err error) error {
	return errs.Detail(ErrUnavailable, err.Error())
}

// sleep waits on a Go timer, for Services outside a Worker.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// keySet is a set of keys safe for concurrent use, each with the time it
// was added and an id that tells its adder's entry apart from a later one.
type keySet struct {
	mu   sync.Mutex
	next uint64
	keys map[string]inFlightEntry
}

type inFlightEntry struct {
	id    uint64
	added time.Time
}

// add adds key at now and reports whether it was absent, or present for
// longer than lease: a request whose promises the runtime dropped never
// removes its key, and must not block it for the instance's life. The id
// returned removes this entry and no later one.
func (k *keySet) add(key string, now time.Time, lease time.Duration) (id uint64, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, held := k.keys[key]; held && now.Sub(e.added) < lease {
		return 0, false
	}
	k.next++
	k.keys[key] = inFlightEntry{id: k.next, added: now}
	return k.next, true
}

// remove removes key's entry if it is still the one added with id: an
// abandoned request that wakes after its entry was taken over must not
// free the key under the request that holds it now.
func (k *keySet) remove(key string, id uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.keys[key]; ok && e.id == id {
		delete(k.keys, key)
	}
}
