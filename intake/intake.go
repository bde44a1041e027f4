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

	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/order"
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
	// DefaultCachedReceipts bounds the receipts an instance keeps in memory
	// (a receipt is about 200 bytes).
	DefaultCachedReceipts = 4096
	// cacheTTL is how long a receipt is served from memory: as long as KV's
	// edge cache may serve a read by default.
	cacheTTL = 60 * time.Second
)

// Key prefixes, as the TypeScript reference writes them, so both Workers can
// share one namespace.
const (
	resultPrefix  = "result:"
	pendingPrefix = "pending:"
	// pendingValue is the claim marker's value.
	pendingValue = "1"
)

// MaxKeyBytes is the longest Idempotency-Key accepted. With a client id of
// up to 64 bytes in front, pending:<client>:<key> stays far below KV's
// 512-byte key limit.
const MaxKeyBytes = 255

// KeyFormat says what a valid Idempotency-Key is, for error messages.
const KeyFormat = "an Idempotency-Key is 1 to 255 printable ASCII characters"

var (
	// ErrInvalidKey is returned for an Idempotency-Key that cannot be stored.
	ErrInvalidKey = errors.New("intake: invalid idempotency key")
	// ErrBodyTooLarge is returned for a body over Options.MaxBodyBytes.
	ErrBodyTooLarge = errors.New("intake: body too large")
	// ErrUnreadableBody is returned when the body cannot be read to its end.
	ErrUnreadableBody = errors.New("intake: body could not be read")
	// ErrKeyReused is returned when the key's stored receipt is for another
	// order; the receipt is not revealed.
	ErrKeyReused = errors.New("intake: idempotency key reused for a different order")
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
	// workers.WaitUntil; nil runs the work before Submit returns.
	Defer func(ctx context.Context, task func(context.Context))
	// OnReleaseError is told when a claim could not be released; the claim then
	// expires by itself after PendingTTL.
	OnReleaseError func(key string, err error)
	// CachedReceipts is how many receipts the instance keeps in memory for
	// replays; negative turns the cache off.
	CachedReceipts int
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
	// receipts holds recent receipts for replays without a KV round trip.
	receipts *receiptCache
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
	if s.opts.CachedReceipts == 0 {
		s.opts.CachedReceipts = DefaultCachedReceipts
	}
	s.receipts = newReceiptCache(max(s.opts.CachedReceipts, 0))
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

// CheckKey returns an error wrapping ErrInvalidKey unless key is 1 to
// MaxKeyBytes printable ASCII characters: enough for UUIDs, ULIDs and any
// key the IETF Idempotency-Key draft shows, and always a valid KV key.
func CheckKey(key string) error {
	if len(key) == 0 || len(key) > MaxKeyBytes {
		return fmt.Errorf("%w: %s, not %d", ErrInvalidKey, KeyFormat, len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < ' ' || key[i] > '~' {
			return fmt.Errorf("%w: %s; byte %d is 0x%02x", ErrInvalidKey, KeyFormat, i, key[i])
		}
	}
	return nil
}

// Submit places the order in body under key for client, at most once per
// client and key. client scopes the key: two clients with one key place two
// orders. The empty client is the open Worker's, whose keys are stored as
// the TypeScript reference stores them.
//
// It returns the stored receipt if one exists for the same order;
// ErrInvalidKey, ErrBodyTooLarge or ErrUnreadableBody before touching
// storage; ErrKeyReused when the stored receipt is for a different order;
// ErrInProgress while another request holds the key; an error wrapping
// order.ErrInvalid for a body that is not a valid order (the key stays free);
// and an error wrapping ErrUnavailable when storage fails, in which case no
// receipt was handed out.
func (s *Service) Submit(ctx context.Context, client, key string, body io.Reader) (Outcome, error) {
	if err := CheckKey(key); err != nil {
		return Outcome{}, err
	}
	raw, err := s.readBody(body)
	if err != nil {
		return Outcome{}, err
	}
	if client != "" {
		key = client + ":" + key
	}
	resultKey, pendingKey := resultPrefix+key, pendingPrefix+key
	if stored, ok := s.receipts.get(key, s.opts.Now()); ok {
		return replay(stored, raw)
	}

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
		s.receipts.put(key, stored, s.opts.Now())
		return replay(stored, raw)
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
	// The fingerprint goes into metadata, so result:<key> keeps holding
	// exactly the receipt, as the reference stores it.
	meta := []byte(`{"` + fingerprintMember + `":"` + o.Fingerprint() + `"}`)
	entry := kv.Entry{Value: string(receipt), Metadata: meta}
	if err := s.store.Put(ctx, resultKey, entry, kv.PutOptions{TTL: s.opts.ResultTTL}); err != nil {
		// Without a stored receipt the order does not exist; a retry places it.
		s.release(ctx, key)
		return Outcome{}, unavailable(err)
	}
	s.receipts.put(key, entry, s.opts.Now())
	// The stored receipt now wins over the claim for every reader, so the
	// claim can be released after the response.
	s.opts.Defer(ctx, func(ctx context.Context) { s.release(ctx, key) })
	return Outcome{Receipt: receipt, OrderID: placed.OrderID}, nil
}

// fingerprintMember names the metadata member holding the order's fingerprint.
const fingerprintMember = "fingerprint"

// replay answers with a stored receipt if body is the order it was stored
// for. Receipts stored without a fingerprint, as the TypeScript reference
// stores them, replay whatever the body.
func replay(stored kv.Entry, body []byte) (Outcome, error) {
	if want := stringMember(string(stored.Metadata), fingerprintMember); want != "" {
		o, err := order.Parse(body)
		if err != nil {
			return Outcome{}, err
		}
		if o.Fingerprint() != want {
			return Outcome{}, ErrKeyReused
		}
	}
	return Outcome{Receipt: []byte(stored.Value), Replayed: true, OrderID: stringMember(stored.Value, "orderId")}, nil
}

// stringMember reads the string member name of the JSON object doc without a
// JSON decoder in the wasm: it finds the member's name, then the plain string
// after the colon. It serves the documents this package writes (metadata and
// receipts, where such names occur once); anything else gives "".
func stringMember(doc, name string) string {
	_, rest, ok := strings.Cut(doc, `"`+name+`"`)
	if !ok {
		return ""
	}
	rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), ":")
	if !ok {
		return ""
	}
	rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), `"`)
	if !ok {
		return ""
	}
	value, _, ok := strings.Cut(rest, `"`)
	if !ok || strings.Contains(value, `\`) {
		return ""
	}
	return value
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
