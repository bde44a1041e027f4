package intake

import (
	"context"
	"errors"

	"github.com/edge-orders/edge-orders/order"
)

// Attention is a set of the states in which a key needs an operator's
// eye: what the admin API lists.
type Attention uint8

const (
	// InProgress: a live claim holds the key (Held).
	InProgress Attention = 1 << iota
	// Unknown: the key is Open, its outcome unknown, and the settler is
	// still asking the gateway.
	Unknown
	// Unresolved: the key is Open and the settler gave up on it.
	Unresolved
	// AnyAttention is every state above.
	AnyAttention = InProgress | Unknown | Unresolved
)

// AttentionOf is the state rec is in, or 0 for a key that needs no
// attention (Absent, or Stored: its outcome is final).
func AttentionOf(rec Record) Attention {
	switch {
	case rec.State == Held:
		return InProgress
	case rec.State == Open && rec.GiveUp.Unresolved():
		return Unresolved
	case rec.State == Open:
		return Unknown
	}
	return 0
}

// Bounds of a listing page.
const (
	DefaultListLimit = 100
	// MaxListLimit is KV's own page size: one list call fills a page.
	MaxListLimit = 1000
)

// ListQuery asks an AdminStore for the keys that need attention.
type ListQuery struct {
	// Clients are the clients whose keys are listed, in the order they
	// are listed: "" is the open Worker's. The same Clients must come
	// with every page of one listing.
	Clients []string
	// States are the states listed; zero lists none.
	States Attention
	// Cursor is the page's start: "" for the first, else the Cursor of
	// the page before.
	Cursor string
	// Limit bounds the page's keys, from 1 to MaxListLimit.
	Limit int
}

// Listed is one key a listing found, with what its Store holds.
type Listed struct {
	Key    Key
	Record Record
}

// ListPage is one page of a listing. A page may hold fewer keys than its
// Limit, none even, while more follow: a listing ends when Cursor is "".
type ListPage struct {
	Keys   []Listed
	Cursor string
}

// ErrBadCursor is returned by List for a cursor it did not hand out.
var ErrBadCursor = errors.New("intake: cursor not from this listing")

// AdminStore is what an operator needs of a Store beyond intake.Store: to
// list the keys that need attention and to purge a final outcome.
// kv.Store and the ledger's stores implement it; storetest.RunAdmin
// checks them.
type AdminStore interface {
	// List returns the keys of q.Clients whose state is in q.States, a
	// page at a time, each with its Record as Lookup would return it (a
	// Store that lists from an index may leave out what the index does
	// not hold, such as a KV claim's order kept in its value). It returns
	// ErrBadCursor for a cursor it did not hand out.
	List(ctx context.Context, q ListQuery) (ListPage, error)
	// Purge deletes key's stored outcome, and any claim left beside it,
	// if its outcome is stored and, with an orderID, for that order id
	// (OrderIDOf); anything else (a claim, an Open key, another order's
	// outcome) it leaves as it is. It returns what it found, as Lookup
	// would have.
	Purge(ctx context.Context, key Key, orderID string) (Record, error)
}

// Errors of the admin operations, beside ErrNotFound, ErrInProgress and
// ErrStorageUnavailable.
var (
	// ErrOutcomeFinal is returned by Resolve for a key whose outcome is
	// stored already.
	ErrOutcomeFinal = errors.New("intake: outcome already final")
	// ErrOutcomeOpen is returned by Purge for a key whose outcome is
	// unknown or unresolved: deleting it would let a retry place the
	// order again.
	ErrOutcomeOpen = errors.New("intake: outcome not final")
	// ErrNoOrder is returned by Resolve for an Open key stored without
	// its order (by an older version): no receipt can be built for it.
	ErrNoOrder = errors.New("intake: the key holds no order")
	// ErrPrecondition is returned by Resolve and Purge, given the order
	// id the operator saw, for a key that holds another order: it changed
	// since they looked. Nothing is changed.
	ErrPrecondition = errors.New("intake: the key holds another order")
	// ErrBadResolution is returned by Resolve for an answer that is
	// neither accepted nor rejected with a reason.
	ErrBadResolution = errors.New("intake: invalid resolution")
	// ErrAnswered is returned by Resolve for a rejection of a key whose
	// order the stand-in placed: the stand-in accepts every order, and
	// its client may have been answered 201 before the receipt's write
	// failed.
	ErrAnswered = errors.New("intake: the order was answered accepted")
)

// Resolution is an operator's answer for an order whose outcome was
// unknown: what they found in the OMS.
type Resolution struct {
	// Status is order.StatusAccepted or order.StatusRejected.
	Status string
	// Reason is the rejection's, stored in the receipt as a gateway's
	// is (order.MaxReasonBytes); required for a rejection.
	Reason string
	// OrderID, if set, is the order id the operator looked up: the key
	// must still hold it (ErrPrecondition).
	OrderID string
}

// OrderIDOf is the order id rec is about, as the admin API shows it: a
// stored outcome's own (its receipt's), or the one kept with the claim.
func OrderIDOf(rec Record) string {
	if rec.State == Stored {
		id, _, _ := order.ReceiptFields(rec.Body)
		return id
	}
	return rec.OrderID
}

// Admin runs an operator's actions over a Service's Store: listing the
// keys that need attention, a key's detail, resolving an unknown outcome
// and purging a final one.
type Admin struct {
	svc   *Service
	store AdminStore
}

// NewAdmin returns the operator's actions on svc's keys; store is svc's
// Store, as an AdminStore.
func NewAdmin(svc *Service, store AdminStore) *Admin { return &Admin{svc: svc, store: store} }

// List returns a page of the keys that need attention (AdminStore.List).
func (a *Admin) List(ctx context.Context, q ListQuery) (ListPage, error) {
	if q.Limit <= 0 || q.Limit > MaxListLimit {
		q.Limit = DefaultListLimit
	}
	page, err := a.store.List(ctx, q)
	if err != nil && !errors.Is(err, ErrBadCursor) {
		return ListPage{}, storageUnavailable(err)
	}
	return page, err
}

// Inspect returns what the Store holds for key, read from the Store, not
// from the instance's memory, or, during a migration, what the Fallback
// holds for a key the Store has not: ErrNotFound when nothing is held,
// and an error wrapping ErrStorageUnavailable when storage fails.
func (a *Admin) Inspect(ctx context.Context, key Key) (Record, error) {
	rec, err := a.svc.store.Lookup(ctx, key)
	if err == nil && rec.State == Absent && a.svc.fallback() {
		rec, err = a.svc.opts.Fallback.Lookup(ctx, key)
	}
	switch {
	case err != nil:
		return Record{}, storageUnavailable(err)
	case rec.State == Absent:
		return rec, ErrNotFound
	}
	return rec, nil
}

// Resolve stores res as key's final outcome, as the settler stores a
// gateway's answer: it takes the key's claim as the settler does, builds
// the receipt from the key's own claim (its order id, order and time) and
// commits it through the same steps, so the receipt is byte for byte the
// one the settler would have stored had the gateway answered res. The
// settler then stops, and the client's retry replays it.
//
// The key must be Open, unknown or unresolved. Resolve returns
// ErrBadResolution for a res that is neither accepted nor rejected with a
// reason, ErrAnswered for a rejection when the Worker runs the stand-in,
// ErrNotFound when nothing is held, ErrInProgress while a live
// claim holds the key, ErrOutcomeFinal once its outcome is stored,
// ErrNoOrder for a key stored without its order, ErrPrecondition for a key
// that holds another order id than res.OrderID, and an error wrapping
// ErrStorageUnavailable when storage fails (the key is then left Open).
// It returns the key's Record after. During a migration, a key left open
// only in the Fallback is adopted first (Service.Adopt), and the errors
// above say what the Fallback holds of a key the Store has not.
func (a *Admin) Resolve(ctx context.Context, key Key, res Resolution) (Record, error) {
	switch {
	case res.Status == order.StatusAccepted && res.Reason == "":
	case res.Status == order.StatusRejected && res.Reason != "":
	default:
		return Record{}, ErrBadResolution
	}
	s := a.svc
	if !s.settles && res.Status == order.StatusRejected {
		return Record{}, ErrAnswered
	}
	// A refusal a read can tell writes nothing: bad input changes
	// nothing, and an operator's claim, even given back, would hold the
	// key from its client's retry meanwhile (for its whole lease, should
	// the give-back fail). The read is Inspect's, of KV too during a
	// migration, before any adoption, and before this instance's
	// in-flight set, so that a final outcome is told as final beside a
	// request of this instance on the key. The claim checks again: the
	// read may be stale. A read that fails says nothing of the key:
	// storage is unavailable.
	switch cur, err := a.Inspect(ctx, key); {
	case errors.Is(err, ErrStorageUnavailable):
		return Record{}, err
	case err != nil: // nothing held: the claim finds it so too
	case cur.State == Stored:
		return Record{}, ErrOutcomeFinal
	case cur.State == Open:
		if err := unresolvable(cur, res); err != nil {
			return Record{}, err
		}
	}
	now := s.opts.Now()
	cacheKey := key.String()
	entry, ok := s.inFlight.add(cacheKey, now, s.opts.PendingTTL)
	if !ok {
		return Record{}, ErrInProgress
	}
	defer s.inFlight.remove(cacheKey, entry)

	claim := Claim{Token: s.opts.NewID(), Lease: s.opts.PendingTTL, By: RoleResolver, KeepUntil: s.keepUntil(now)}
	taken, rec, err := s.begin(ctx, key, claim)
	if err == nil && rec.State == Absent && s.fallback() {
		// During a migration a key KV mode left open, and the sweep has
		// not adopted yet, is adopted first, not due for the Store's
		// settler before this answer is stored.
		if _, err = s.adoptOpen(ctx, key, now.Add(s.opts.PendingTTL)); err != nil {
			return Record{}, err
		}
		taken, rec, err = s.begin(ctx, key, claim)
		if err == nil && rec.State == Absent {
			// Still not in the Store: the operator is told what KV holds.
			// A receipt there is final. A claim there is in progress,
			// and so is a key KV holds open: another request held the
			// key in the Store while the adoption looked, and has let it
			// go since (a retry of another order, told 422), or the
			// adoption's read or release outlasted its claim; the
			// operator tries again. A key KV holds open that res cannot
			// resolve is refused as the read before the claim refuses
			// it (unresolvable). A read of KV that fails says nothing of
			// the key: storage is unavailable.
			var old Record
			if old, err = s.opts.Fallback.Lookup(ctx, key); err == nil && old.State == Open {
				if err := unresolvable(old, res); err != nil {
					return Record{}, err
				}
			}
			rec = Record{State: old.State}
		}
	}
	switch {
	case err != nil:
		return Record{}, storageUnavailable(err)
	case rec.Took == EventTakeOver:
		// The operator's claim holds the open key: it resolves it.
	case rec.State == Stored:
		return Record{}, ErrOutcomeFinal
	case rec.State == Absent:
		return Record{}, ErrNotFound
	default:
		// Held by another claim; or Open, and not taken: a Store that
		// cannot take an unresolved key for an operator (an older
		// ledger object).
		return Record{}, ErrInProgress
	}
	claim = taken
	if err := unresolvable(rec, res); err != nil {
		s.release(ctx, key, GiveBack(claim, rec))
		return Record{}, err
	}
	_, err = s.place(withAnswer(ctx, res), key, claim, bySettler)
	if left := (*unstored)(nil); errors.As(err, &left) {
		// Not stored: the key is open again and due for the settler, at a
		// time no settle message is for (a caller of Settle sends one).
		s.schedule(ctx, key, left.open.NextAttempt)
	}
	var rejection *Rejection
	if err != nil && !errors.As(err, &rejection) {
		return Record{}, err
	}
	after, lerr := s.store.Lookup(ctx, key)
	if lerr != nil || after.State != Stored {
		// Committed; a read that missed it (a stale KV read) shows what
		// was stored.
		receipt := order.Receipt{OrderID: claim.OrderID, Status: res.Status, Order: claim.Order, AcceptedAt: claim.AcceptedAt, Reason: res.Reason}
		after = Record{State: Stored, Body: receipt.JSON(), Rejected: res.Status == order.StatusRejected, Fingerprint: claim.Fingerprint}
	}
	return after, nil
}

// unresolvable is why res cannot resolve a key open as rec shows it:
// ErrPrecondition when it holds another order id than res names,
// ErrNoOrder when it holds no order (an older version's key); nil when
// res can.
func unresolvable(rec Record, res Resolution) error {
	switch {
	case res.OrderID != "" && rec.OrderID != res.OrderID:
		return ErrPrecondition
	case !rec.HasOrder || rec.Fingerprint == "":
		return ErrNoOrder
	}
	return nil
}

// Purge deletes key's final outcome and any claim left beside it, so the
// key is free: a retry under it is a new order. It refuses to delete
// anything else: ErrOutcomeOpen while the outcome is unknown or
// unresolved, ErrInProgress while a live claim holds the key, ErrNotFound
// when nothing is held, and an error wrapping ErrStorageUnavailable when
// storage fails. With an orderID, it purges only that order's outcome:
// ErrPrecondition for a key that holds another. It returns what was
// purged. The instance forgets the
// receipt at once; another instance may replay it from memory for up to
// a minute (the receipt cache's TTL).
//
// During a migration it purges the Fallback's copy too, when the Fallback
// is a FallbackAdmin, so that no retry copies the receipt back; a receipt
// held only there is purged there. The Fallback is purged first, so that
// a retry reading it meanwhile finds nothing to copy back. Once the Store
// holds the key's final outcome, the Fallback's claim for it (KV mode left
// it open, and a retry settled it here) is stale: it is deleted too, so
// that no adoption takes the key again and has the settler store the
// purged receipt once more. A purge that fails midway leaves the Store's
// outcome, and is finished by its retry.
func (a *Admin) Purge(ctx context.Context, key Key, orderID string) (Record, error) {
	s := a.svc
	cacheKey := key.String()
	entry, ok := s.inFlight.add(cacheKey, s.opts.Now(), s.opts.PendingTTL)
	if !ok {
		return Record{}, ErrInProgress
	}
	defer s.inFlight.remove(cacheKey, entry)
	old, migrating := s.opts.Fallback.(FallbackAdmin)
	migrating = migrating && s.fallback()
	var oldRec Record
	claimLeft := false // the Fallback's claim, left as the key was not final here
	if migrating {
		cur, err := s.store.Lookup(ctx, key)
		switch {
		case err != nil:
			return Record{}, storageUnavailable(err)
		case mismatched(cur, orderID):
			return cur, ErrPrecondition
		case cur.State == Held:
			// The Fallback must go first, and a request that holds the key
			// may copy its outcome from there until it commits: the purge
			// waits, and its retry finds the key final.
			return cur, ErrInProgress
		case cur.State == Open:
			return cur, ErrOutcomeOpen
		}
		// The Fallback first: a retry that reads it from now on finds
		// nothing to copy back into the Store.
		if oldRec, err = purgeFallback(ctx, old, key, orderID, cur.State == Stored); err != nil {
			s.receipts.purged(cacheKey) // the delete may have landed
			return Record{}, storageUnavailable(err)
		}
		if oldRec.State == Held {
			// A request holds KV's key (a KV-mode Worker's, mid-migration,
			// or one whose read missed KV's receipt): what it stores
			// there, a retry would copy back. The purge waits, as for a
			// key held here, and KV keeps what it holds.
			return oldRec, ErrInProgress
		}
		claimLeft = cur.State == Absent && (oldRec.State != Stored || mismatched(oldRec, orderID))
		if oldRec.State == Stored && !mismatched(oldRec, orderID) {
			// KV's copy is erased, whatever the Store answers next.
			s.receipts.purged(cacheKey)
		}
	}
	rec, err := a.store.Purge(ctx, key, orderID)
	switch {
	case err != nil:
	case claimLeft && rec.State == Stored && !mismatched(rec, orderID):
		// The Store had nothing as the purge began, and a request (a
		// resolve, a retry) adopted the key and stored its outcome since:
		// the Fallback's claim goes now, or the next adoption would
		// store the erased outcome again.
		err = old.DropClaim(ctx, key)
	case migrating && rec.State == Absent:
		rec = oldRec
	}
	switch {
	case err != nil:
		// A delete that failed may have landed, and its retry then finds
		// nothing to purge. A purge that erased nothing leaves the
		// receipt in memory, which keeps a retry here from reading KV
		// stale and minting another acceptedAt.
		s.receipts.purged(cacheKey)
		return Record{}, storageUnavailable(err)
	case rec.State == Held:
		return rec, ErrInProgress
	case rec.State == Open:
		return rec, ErrOutcomeOpen
	case rec.State != Stored:
		return rec, ErrNotFound
	case mismatched(rec, orderID):
		return rec, ErrPrecondition
	}
	s.receipts.purged(cacheKey)
	s.opened.forget(cacheKey)
	return rec, nil
}

// purgeFallback purges the Fallback's receipt for key, with its claim;
// with final (the Store holds the key's final outcome) the claim goes even
// where the Fallback purged nothing: it holds no outcome, or another
// order's. A live claim (Held) stays, and so does all the Fallback holds:
// Purge waits for its request. Each KV key is written once: a second
// delete within the second would be refused (429).
func purgeFallback(ctx context.Context, old FallbackAdmin, key Key, orderID string, final bool) (Record, error) {
	rec, err := old.Purge(ctx, key, orderID)
	if err == nil && final && rec.State != Held && (rec.State != Stored || mismatched(rec, orderID)) {
		err = old.DropClaim(ctx, key)
	}
	if err != nil {
		return Record{}, err
	}
	return rec, nil
}

// mismatched reports whether rec is a stored outcome of another order id
// than orderID, which a purge given orderID leaves alone.
func mismatched(rec Record, orderID string) bool {
	return orderID != "" && rec.State == Stored && OrderIDOf(rec) != orderID
}

// FallbackAdmin is a Fallback an operator's purge clears too, during a
// migration: kv.Store.
type FallbackAdmin interface {
	Fallback
	AdminStore
	// DropClaim deletes key's claim, whatever it holds: Purge calls it
	// once the Store holds key's final outcome, which makes the claim
	// stale.
	DropClaim(ctx context.Context, key Key) error
}

// answerKey carries an operator's answer to the gateway call it replaces.
type answerKey struct{}

// withAnswer is ctx carrying res: the Service's gateway (answering, which
// New installs) then answers with it instead of calling the OMS, so that
// Resolve stores it through the settler's own steps.
func withAnswer(ctx context.Context, res Resolution) context.Context {
	return context.WithValue(ctx, answerKey{}, res)
}

// answering is a Gateway that answers with the operator's answer its
// context carries, if any, and otherwise calls the gateway it wraps.
type answering struct{ Gateway }

// Place implements Gateway.
func (g answering) Place(ctx context.Context, p Placement) error {
	res, ok := ctx.Value(answerKey{}).(Resolution)
	switch {
	case !ok:
		return g.Gateway.Place(ctx, p)
	case res.Status == order.StatusRejected:
		return &Rejection{Reason: res.Reason, OrderID: p.OrderID}
	}
	return nil
}
