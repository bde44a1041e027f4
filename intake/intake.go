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
	"github.com/edge-orders/edge-orders/internal/jsjson"
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
)

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
	// expires after its lease.
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
	// receipts holds recent receipts for replays without a round trip.
	receipts *receiptCache
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
	if opts.CachedReceipts == 0 {
		opts.CachedReceipts = DefaultCachedReceipts
	}
	return &Service{
		store:    store,
		opts:     opts,
		inFlight: keySet{keys: make(map[string]time.Time)},
		receipts: newReceiptCache(max(opts.CachedReceipts, 0)),
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
// stays free); ErrRateLimited when Options.Limit refuses a new order; and an
// error wrapping ErrUnavailable when storage fails, in which case no receipt
// was handed out.
func (s *Service) Submit(ctx context.Context, key Key, body []byte) (Outcome, error) {
	sub := submission{key: key, body: body}
	if s.opts.ValidateFirst {
		if err := sub.parse(); err != nil {
			return Outcome{}, err
		}
	}
	// The wait ends at the deadline or once the sleeps add up to Wait,
	// whichever comes first: in a Worker the clock only moves with I/O.
	// The clock is read once per attempt and once per poll: on js/wasm
	// each reading is a call into JavaScript.
	now := s.opts.Now()
	deadline := now.Add(s.opts.Wait)
	var slept time.Duration
	for delay := firstPoll; ; delay = min(2*delay, maxPoll) {
		out, err := s.attempt(ctx, &sub, now)
		if !errors.Is(err, ErrInProgress) || slept+delay > s.opts.Wait {
			return out, err
		}
		if now = s.opts.Now(); !now.Add(delay).Before(deadline) {
			return out, err
		}
		if s.opts.Sleep(ctx, delay) != nil {
			return out, err
		}
		slept += delay
		now = s.opts.Now()
	}
}

// submission is one Submit call's request, parsed at most once.
type submission struct {
	key    Key
	body   []byte
	order  order.Order
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
	sub.order, sub.parsed = o, true
	return nil
}

// fingerprint is the order's, or "" before the body is parsed.
func (sub *submission) fingerprint() string {
	if !sub.parsed {
		return ""
	}
	return sub.order.Fingerprint()
}

// attempt runs the lifecycle once, starting at now; ErrInProgress means
// another request holds the key now.
func (s *Service) attempt(ctx context.Context, sub *submission, now time.Time) (Outcome, error) {
	cacheKey := sub.key.String()
	if rec, ok := s.receipts.get(cacheKey, now); ok {
		return s.replay(rec, sub)
	}
	// Only one request per key and instance goes on to the Store; the
	// others find its receipt in memory on their next poll. The check does
	// not block, so no request's goroutine is ever woken by another
	// request; an entry older than the claim lease, left by a request the
	// runtime abandoned, is taken over like an expired claim.
	if !s.inFlight.add(cacheKey, now, s.opts.PendingTTL) {
		return Outcome{}, ErrInProgress
	}
	defer s.inFlight.remove(cacheKey)

	claim := Claim{Token: uuid.New(), Fingerprint: sub.fingerprint(), Lease: s.opts.PendingTTL}
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
	}

	// The claim is ours: from here on every way out commits or releases it.
	if err := sub.parse(); err != nil {
		s.release(ctx, sub.key, claim)
		return Outcome{}, err
	}
	if s.fallback() {
		if out, ok, err := s.adopt(ctx, sub, claim); ok || err != nil {
			return out, err
		}
	}
	if limitLater {
		if err := s.admit(ctx, sub.key); err != nil {
			s.release(ctx, sub.key, claim)
			return Outcome{}, err
		}
	}
	// The order is stamped once the key is ours, as the reference does.
	placedAt := s.opts.Now()
	placed := order.Place(sub.order, placedAt)
	receipt := Receipt{Body: placed.JSON(), Fingerprint: sub.order.Fingerprint(), TTL: s.opts.ResultTTL}
	if err := s.commit(ctx, sub.key, claim, receipt, placedAt); err != nil {
		return Outcome{}, err
	}
	return Outcome{Receipt: receipt.Body, OrderID: placed.OrderID}, nil
}

// commit stores receipt under claim and caches it as stored no later than
// at (its expiry in the cache then comes no later than in storage).
// ErrInProgress means
// another request took the key over after claim's lease ran out: its
// outcome is the key's. Any other failure releases the claim: without a
// stored receipt the order does not exist, and a retry places it.
func (s *Service) commit(ctx context.Context, key Key, claim Claim, receipt Receipt, at time.Time) error {
	if err := s.store.Commit(ctx, key, claim, receipt); err != nil {
		if errors.Is(err, ErrLostClaim) {
			return ErrInProgress
		}
		s.release(ctx, key, claim)
		return unavailable(err)
	}
	s.receipts.put(key.String(), Record{State: Stored, Receipt: receipt.Body, Fingerprint: receipt.Fingerprint, Expires: at.Add(receipt.TTL)}, at)
	return nil
}

// fallback reports whether the Fallback is to be consulted now.
func (s *Service) fallback() bool {
	return s.opts.Fallback != nil && s.opts.Now().Before(s.opts.FallbackUntil)
}

// adopt looks the claimed key up in the Fallback. A receipt found there is
// committed under claim and replayed (ok); a claim there, a request still in
// flight in KV mode, is a request in progress; nothing lets the new order go
// ahead.
func (s *Service) adopt(ctx context.Context, sub *submission, claim Claim) (Outcome, bool, error) {
	rec, err := s.opts.Fallback.Lookup(ctx, sub.key)
	switch {
	case err != nil:
		s.release(ctx, sub.key, claim)
		return Outcome{}, false, unavailable(err)
	case rec.State == Held:
		s.release(ctx, sub.key, claim)
		return Outcome{}, false, ErrInProgress
	case rec.State != Stored:
		return Outcome{}, false, nil
	}
	if err := s.commit(ctx, sub.key, claim, Receipt{Body: rec.Receipt, Fingerprint: rec.Fingerprint, TTL: s.opts.ResultTTL}, s.opts.Now()); err != nil {
		return Outcome{}, false, err
	}
	out, err := s.replay(rec, sub)
	return out, true, err
}

// Lookup returns key's stored receipt without a body to check it against
// and without changing anything: ErrInProgress while a request holds the
// key, ErrNotFound when nothing is stored, and an error wrapping
// ErrUnavailable when storage fails.
func (s *Service) Lookup(ctx context.Context, key Key) (Outcome, error) {
	now := s.opts.Now()
	if rec, ok := s.receipts.get(key.String(), now); ok {
		return replayed(rec), nil
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
	case rec.State != Stored:
		return Outcome{}, ErrNotFound
	}
	s.receipts.put(key.String(), rec, now)
	return replayed(rec), nil
}

// replay answers with a stored receipt if the submission is the order it
// was stored for. Receipts stored without a fingerprint, as the TypeScript
// reference stores them, replay whatever the body.
func (s *Service) replay(rec Record, sub *submission) (Outcome, error) {
	if rec.Fingerprint != "" {
		if err := sub.parse(); err != nil {
			return Outcome{}, err
		}
		if sub.order.Fingerprint() != rec.Fingerprint {
			return Outcome{}, ErrKeyReused
		}
	}
	return replayed(rec), nil
}

func replayed(rec Record) Outcome {
	return Outcome{Receipt: rec.Receipt, Replayed: true, OrderID: orderID(rec.Receipt)}
}

// orderID reads a stored receipt's orderId, for logs.
func orderID(receipt []byte) string {
	doc, err := jsjson.Parse(receipt, "orderId")
	if err != nil {
		return ""
	}
	return doc.Get("orderId").Str
}

// release ends claim, reporting a failure to OnReleaseError. It ignores
// ctx's cancellation: a request that is abandoned midway must still free
// its key.
func (s *Service) release(ctx context.Context, key Key, claim Claim) {
	if err := s.store.Release(context.WithoutCancel(ctx), key, claim); err != nil {
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
// was added.
type keySet struct {
	mu   sync.Mutex
	keys map[string]time.Time
}

// add adds key at now and reports whether it was absent, or present for
// longer than lease: a request whose promises the runtime dropped never
// removes its key, and must not block it for the instance's life.
func (k *keySet) add(key string, now time.Time, lease time.Duration) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if added, ok := k.keys[key]; ok && now.Sub(added) < lease {
		return false
	}
	k.keys[key] = now
	return true
}

func (k *keySet) remove(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.keys, key)
}
