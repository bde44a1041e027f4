// Package intake runs the idempotency lifecycle of an order submission over a kv.Store.
package intake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"edge-orders/kv"
	"edge-orders/order"
)

// Defaults for Options.
const (
	// DefaultResultTTL keeps a receipt replayable for a day of client retries.
	DefaultResultTTL = 24 * time.Hour
	// DefaultPendingTTL is the shortest claim KV accepts: a claim whose holder
	// died mid-request unblocks its key after this long.
	DefaultPendingTTL = kv.MinTTL
	// DefaultMaxBodyBytes bounds the order body; an order is well under 1 KiB.
	DefaultMaxBodyBytes = 64 << 10
)

// Key prefixes, as the TypeScript reference writes them, so both Workers can
// share one namespace.
const (
	resultPrefix  = "result:"
	pendingPrefix = "pending:"
	// pendingValue is the claim marker's value.
	pendingValue = "1"
)

// MaxKeyBytes is the longest Idempotency-Key whose KV keys fit KV's key limit.
const MaxKeyBytes = kv.MaxKeyBytes - len(pendingPrefix)

var (
	// ErrInvalidKey is returned for an Idempotency-Key that cannot be stored.
	ErrInvalidKey = errors.New("intake: invalid idempotency key")
	// ErrBodyTooLarge is returned for a body over Options.MaxBodyBytes.
	ErrBodyTooLarge = errors.New("intake: body too large")
	// ErrUnreadableBody is returned when the body cannot be read to its end.
	ErrUnreadableBody = errors.New("intake: body could not be read")
	// ErrInProgress is returned while another request holds the key's claim.
	ErrInProgress = errors.New("intake: request with this key in progress")
	// ErrUnavailable wraps every storage failure. No receipt was handed out, and
	// a retry under the same key reaching the same instance places at most one
	// order (see Service for what holds across instances).
	ErrUnavailable = errors.New("intake: storage unavailable")
)

// Options tunes a Service; nil or zero fields take the defaults.
type Options struct {
	ResultTTL    time.Duration
	PendingTTL   time.Duration
	MaxBodyBytes int64
	// Now is the clock stamped on receipts.
	Now func() time.Time
	// Defer runs work that need not delay the response. The Worker passes
	// worker.WaitUntil; nil runs the work before Submit returns.
	Defer func(ctx context.Context, task func(context.Context))
	// OnReleaseError is told when a claim could not be released; the claim then
	// expires by itself after PendingTTL.
	OnReleaseError func(key string, err error)
}

// Outcome is a successful submission's response.
type Outcome struct {
	// Receipt is the receipt JSON, byte for byte as stored under result:<key>.
	Receipt []byte
	// Replayed is true when the receipt was stored by an earlier request.
	Replayed bool
	// OrderID is the receipt's order id, for logs; empty if a stored receipt
	// has none.
	OrderID string
}

// Service accepts orders at most once per Idempotency-Key among the requests
// it serves. Requests with one key served by different instances (isolates,
// locations) can both place an order: KV has no atomic claim.
type Service struct {
	store kv.Store
	opts  Options
	// claimed holds the keys that requests of this instance are working on. It
	// makes a claim atomic within the instance, which KV alone cannot do.
	claimed keySet
}

// New returns a Service over store.
func New(store kv.Store, opts *Options) *Service {
	s := &Service{store: store, claimed: keySet{keys: make(map[string]struct{})}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.ResultTTL == 0 {
		s.opts.ResultTTL = DefaultResultTTL
	}
	if s.opts.PendingTTL == 0 {
		s.opts.PendingTTL = DefaultPendingTTL
	}
	if s.opts.MaxBodyBytes == 0 {
		s.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	if s.opts.Defer == nil {
		s.opts.Defer = func(ctx context.Context, task func(context.Context)) { task(ctx) }
	}
	if s.opts.OnReleaseError == nil {
		s.opts.OnReleaseError = func(string, error) {}
	}
	return s
}

// RetryAfter is how long a claim can block its key at most: a retry after
// that long is never answered ErrInProgress because of the claim seen now.
func (s *Service) RetryAfter() time.Duration { return s.opts.PendingTTL }

// MaxBodyBytes is the largest body Submit reads.
func (s *Service) MaxBodyBytes() int64 { return s.opts.MaxBodyBytes }

// CheckKey returns ErrInvalidKey if key cannot be stored.
func CheckKey(key string) error {
	if len(key) > MaxKeyBytes {
		return fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrInvalidKey, len(key), MaxKeyBytes)
	}
	return nil
}

// Submit places the order in body under key, at most once per key.
//
// It returns the stored receipt if one exists; ErrInvalidKey,
// ErrBodyTooLarge or ErrUnreadableBody before touching storage; ErrInProgress
// while another request holds the key; an error wrapping order.ErrInvalid for
// a body that is not a valid order (the key stays free); and an error wrapping
// ErrUnavailable when storage fails, in which case no receipt was handed out.
func (s *Service) Submit(ctx context.Context, key string, body io.Reader) (Outcome, error) {
	if err := CheckKey(key); err != nil {
		return Outcome{}, err
	}
	raw, err := s.readBody(body)
	if err != nil {
		return Outcome{}, err
	}
	resultKey, pendingKey := resultPrefix+key, pendingPrefix+key

	// Only one request per key and instance may go on to claim it; the others
	// can still replay a stored receipt. The check does not block, so no
	// request's goroutine is ever woken by another request.
	leader := s.claimed.add(key)
	if leader {
		defer s.claimed.remove(key)
	}

	// The leader looks up the receipt and the claim at once: one round trip
	// instead of two for a new key.
	var claim chan lookup
	if leader {
		claim = make(chan lookup, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					claim <- lookup{panicked: p}
				}
			}()
			_, err := s.store.Get(ctx, pendingKey)
			claim <- lookup{err: err}
		}()
	}
	stored, err := s.store.Get(ctx, resultKey)
	var claimErr error
	if leader {
		// Always wait: a lookup left running could outlive the request.
		l := <-claim
		if l.panicked != nil {
			panic(l.panicked) // on the request's goroutine, where it is recovered
		}
		claimErr = l.err
	}
	switch {
	case err == nil:
		// A stored receipt wins over any claim.
		return Outcome{Receipt: []byte(stored.Value), Replayed: true, OrderID: orderID(stored.Value)}, nil
	case !errors.Is(err, kv.ErrNotFound):
		return Outcome{}, unavailable(err)
	case !leader:
		return Outcome{}, ErrInProgress
	}
	switch {
	case claimErr == nil:
		return Outcome{}, ErrInProgress
	case !errors.Is(claimErr, kv.ErrNotFound):
		return Outcome{}, unavailable(claimErr)
	}
	if err := s.store.Put(ctx, pendingKey, kv.Entry{Value: pendingValue}, kv.PutOptions{TTL: s.opts.PendingTTL}); err != nil {
		// A failed put may still have landed: release it so retries are not blocked.
		s.release(ctx, key)
		return Outcome{}, unavailable(err)
	}

	o, err := order.Parse(raw)
	if err != nil {
		s.release(ctx, key)
		return Outcome{}, err
	}
	placed := order.Place(o, s.opts.Now())
	receipt := placed.JSON()
	if err := s.store.Put(ctx, resultKey, kv.Entry{Value: string(receipt)}, kv.PutOptions{TTL: s.opts.ResultTTL}); err != nil {
		// Without a stored receipt the order does not exist; a retry places it.
		s.release(ctx, key)
		return Outcome{}, unavailable(err)
	}
	// The stored receipt now wins over the claim for every reader, so the
	// claim can be released after the response.
	s.opts.Defer(ctx, func(ctx context.Context) { s.release(ctx, key) })
	return Outcome{Receipt: receipt, OrderID: placed.OrderID}, nil
}

// orderID reads the orderId member of a stored receipt, for logs, without
// a JSON decoder in the wasm: it finds the member's name, then the plain
// string after the colon. A receipt it cannot read that way gives "".
func orderID(receipt string) string {
	_, rest, ok := strings.Cut(receipt, `"orderId"`)
	if !ok {
		return ""
	}
	rest = strings.TrimLeft(rest, " \t\r\n")
	rest, ok = strings.CutPrefix(rest, ":")
	if !ok {
		return ""
	}
	rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), `"`)
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, `"`)
	if !ok || strings.Contains(id, `\`) {
		return ""
	}
	return id
}

// readBody reads at most MaxBodyBytes of body.
func (s *Service) readBody(body io.Reader) ([]byte, error) {
	if body == nil {
		return nil, nil
	}
	raw, err := io.ReadAll(io.LimitReader(body, s.opts.MaxBodyBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrUnreadableBody, err)
	case int64(len(raw)) > s.opts.MaxBodyBytes:
		return nil, fmt.Errorf("%w: over %d bytes", ErrBodyTooLarge, s.opts.MaxBodyBytes)
	}
	return raw, nil
}

// release deletes key's claim, reporting a failure to OnReleaseError. It
// ignores ctx's cancellation: a request that is abandoned midway must still
// free its key.
func (s *Service) release(ctx context.Context, key string) {
	if err := s.store.Delete(context.WithoutCancel(ctx), pendingPrefix+key); err != nil {
		s.opts.OnReleaseError(key, err)
	}
}

func unavailable(err error) error {
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// lookup is the outcome of a Get run on its own goroutine.
type lookup struct {
	err      error
	panicked any
}

// keySet is a set of keys safe for concurrent use.
type keySet struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

// add adds key and reports whether it was absent.
func (k *keySet) add(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.keys[key]; ok {
		return false
	}
	k.keys[key] = struct{}{}
	return true
}

func (k *keySet) remove(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.keys, key)
}
