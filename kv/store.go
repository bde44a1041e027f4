package kv

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/order"
)

// Key prefixes and the claim marker, as the TypeScript reference writes
// them, so both Workers can share one namespace.
const (
	resultPrefix  = "result:"
	pendingPrefix = "pending:"
	pendingValue  = "1"
)

// Store is the intake.Store over a KV namespace in the reference's layout:
// outcomes under result:<key> and claims under pending:<key>. KV has no
// compare-and-swap, so a claim is a read followed by a write: two requests
// reaching two isolates at once can both claim a key, and Store cannot
// fence (Commit never returns intake.ErrLostClaim). The Service's in-flight
// set makes claims exact within one instance.
//
// What the reference does not store lives in metadata, so that values stay
// exactly the reference's: a receipt's fingerprint and whether it records
// a rejection beside result:<key>, and, once an order may reach a gateway,
// the claim's order id, time and lease beside pending:<key>.
type Store struct {
	// ReleaseClaims deletes each claim once its outcome is stored, after
	// the response, as the reference does: Lifecycle then asks the Service
	// for ReleaseAfterCommit. False, the default, leaves the claim to expire
	// with its lease, one KV write fewer per order; every reader already
	// prefers the outcome. Set it before the Store is given to intake.New.
	ReleaseClaims bool

	// Sleep waits out KV's write limit before a release's second write;
	// nil waits on a Go timer. The Worker passes workers.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// ReadsLag is how long a read may miss a write, which the settler's
	// give-up allows for (intake.Lifecycle.ReadsLag); zero means
	// ReadsLag, Cloudflare's figure. Set it before the Store is given to
	// intake.New.
	ReadsLag time.Duration

	ns  Namespace
	now func() time.Time
}

// writeEvery is how often KV takes a write to one key.
const writeEvery = time.Second

// NewStore returns a Store over ns on the clock now; nil means time.Now.
func NewStore(ns Namespace, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{ns: ns, now: now}
}

// Lifecycle implements intake.Store: the reference's, which claims the
// key before it answers an invalid body, and releases each claim after
// its outcome only with ReleaseClaims.
func (k *Store) Lifecycle() intake.Lifecycle {
	lag := k.ReadsLag
	if lag == 0 {
		lag = ReadsLag
	}
	return intake.Lifecycle{ReleaseAfterCommit: k.ReleaseClaims, ReadsLag: lag}
}

// ReadsLag is how long a KV read may miss a write, even in the location
// that made it: Cloudflare documents 60 seconds or more.
const ReadsLag = 60 * time.Second

// Lookup implements intake.Store: it reads result:<key> and pending:<key>
// at once, one round trip instead of two where the namespace reads
// several keys at once (ManyGetter, as the binding does). A stored
// outcome wins over a claim.
func (k *Store) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	stored, pending, _, err := k.readBoth(ctx, key)
	if err != nil {
		return intake.Record{}, err
	}
	return k.record(stored, pending), nil
}

// record is what a key's outcome and claim, nil when not found, say.
func (k *Store) record(stored, pending *Entry) intake.Record {
	switch {
	case stored != nil:
		m := decodeMetadata(stored.Metadata)
		return intake.Record{State: intake.Stored, Body: []byte(stored.Value), Rejected: m.rejected, Fingerprint: m.fingerprint}
	case pending != nil:
		return k.claimRecord(*pending)
	}
	return intake.Record{State: intake.Absent}
}

// readBoth reads result:<key> and pending:<key>, nil for one not found
// (GetMany), in one round trip. For an open Worker's key its client sent
// quoted (Key.Quoted), it reads the TypeScript reference's names of the
// key too (referenceID), and for a key the Worker holds nothing under of
// its own, takes what the reference wrote there (byReference): a key the
// Worker has written is its own, whatever the reference left beside it.
// others are the names beside pending:<key> that a purge deletes, in
// order: the reference's claim, then every outcome of the key, its own
// and the reference's.
func (k *Store) readBoth(ctx context.Context, key intake.Key) (stored, pending *Entry, others []string, err error) {
	names := []string{resultPrefix + key.String(), pendingPrefix + key.String()}
	ref, hasRef := referenceID(key)
	if hasRef {
		names = append(names, resultPrefix+ref, pendingPrefix+ref)
	}
	entries, err := GetMany(ctx, k.ns, names...)
	if err != nil {
		return nil, nil, nil, err
	}
	stored, pending = entries[0], entries[1]
	if hasRef && byReference(entries[3]) {
		others = append(others, names[3])
	}
	if stored != nil {
		others = append(others, names[0])
	}
	if hasRef && byReference(entries[2]) {
		others = append(others, names[2])
	}
	if hasRef && stored == nil && pending == nil {
		stored, pending = byReferenceOnly(entries[2]), byReferenceOnly(entries[3])
	}
	return stored, pending, others, nil
}

// referenceID is the name the TypeScript reference gave an open Worker's
// key its client sent quoted, as the Idempotency-Key draft's string
// (`"abc"`): the header as it came, quotes and all. This Worker reads the
// quoted form as the key itself (abc), so a retry after the route moved
// from the reference, repeating its header unchanged as the draft asks,
// must find what the reference stored under the quoted name. Only such a
// key pays for the two extra reads. A client's key has none (the
// reference had no clients), and neither has a key whose quoted name
// would be past KV's limit: the reference could not have written it.
func referenceID(key intake.Key) (string, bool) {
	if !key.Quoted || key.Client != "" {
		return "", false
	}
	ref := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key.ID) + `"`
	return ref, len(pendingPrefix)+len(ref) <= MaxKeyBytes
}

// byReference reports whether e is an entry the TypeScript reference
// wrote: it wrote no metadata, and this Worker writes a receipt, and a
// claim for an order, with metadata. So the reference's name of the key
// abc, result:"abc", which is also this Worker's own name of another key
// (the id "abc", quotes and all), is taken for abc's only where the
// reference wrote it.
func byReference(e *Entry) bool { return e != nil && e.Metadata == nil }

// byReferenceOnly is e if the reference wrote it, else nil.
func byReferenceOnly(e *Entry) *Entry {
	if byReference(e) {
		return e
	}
	return nil
}

// claimRecord reads a claim. The reference's, and one made without a
// gateway, have no metadata: they hold the key until they expire. The
// claim's order is in its metadata, or in its value where it did not fit.
func (k *Store) claimRecord(e Entry) intake.Record {
	return claimRecordAt(decodeMetadata(e.Metadata), e.Value, k.now())
}

// claimRecordAt is the claim with metadata m and value value at now.
func claimRecordAt(m metadata, value string, now time.Time) intake.Record {
	rec := intake.Record{Fingerprint: m.fingerprint, OrderID: m.orderID, AcceptedAt: m.acceptedAt,
		Order: m.order, HasOrder: m.hasOrder, Attempts: m.attempts, NextAttempt: m.due, GiveUp: intake.GiveUpOf(m.unresolved, m.due),
		WrittenPhase: m.phase}
	if !rec.HasOrder && value != pendingValue {
		if o, err := order.Parse([]byte(value)); err == nil {
			rec.Order, rec.HasOrder = o, true
		}
	}
	// A claim without an order id (the reference's) has no lease in its
	// metadata: it holds the key until KV lets it go.
	rec.State = intake.ClaimState(m.open, m.leaseUntil, false, m.orderID, now)
	return rec
}

// Begin implements intake.Store as the reference does: look up, then write
// the claim marker with the lease as its TTL. Once an order may reach a
// gateway (c.KeepUntil), the claim also keeps its order id and order until
// then, with the lease in its metadata. The settler's claim takes over an
// Open key only.
//
// The settler's claim on a key whose outcome is stored deletes the claim
// left beside it, if any (a failed delete, or ReleaseClaims false), so
// that the sweep never lists it again.
func (k *Store) Begin(ctx context.Context, key intake.Key, c intake.Claim) (intake.Record, error) {
	stored, pending, _, err := k.readBoth(ctx, key)
	if err != nil {
		return intake.Record{}, unwritten{err}
	}
	if c.By == intake.RoleSettler && stored != nil && pending != nil {
		// The outcome is what counts: a delete that fails leaves the claim
		// for the next sweep to list and the next settler to delete.
		_ = k.ns.Delete(ctx, pendingPrefix+key.String())
	}
	rec := k.record(stored, pending)
	move, err := intake.Step(rec, c, k.now())
	switch {
	case err != nil:
		return intake.Record{}, err
	case move.Event == intake.EventNone:
		return rec, nil
	case move.Event == intake.EventTakeOver:
		return k.takeOver(ctx, key, move.Claim, rec)
	}
	if c.Admit != nil && intake.NewOrder(move.Event, move.Claim) {
		if err := c.Admit(ctx); err != nil {
			return intake.Record{}, err
		}
	}
	if err := k.putClaim(ctx, key, c, false); err != nil {
		if errors.Is(err, ErrRateLimited) {
			// Refused: nothing landed, and another's write did within the
			// second, which a release would overwrite.
			return intake.Record{}, unwritten{err}
		}
		// A failed put may still have landed: release it so retries are not
		// blocked for its lease, trying twice. A claim for an order that
		// may reach a gateway is left open with it rather than deleted:
		// the read that found the key free may have been stale, and a
		// delete would take an open key's order id and order with it.
		if c.Placeable() {
			c.Stage = intake.StageSent
		}
		if rerr := intake.ReleaseTwice(ctx, k, key, c); rerr != nil {
			err = errs.Wrap(err, err.Error()+" (and releasing the claim: "+rerr.Error()+")")
		}
		return intake.Record{}, err
	}
	return intake.Record{State: intake.Held, Took: intake.EventClaim}, nil
}

// unwritten is err, from a Begin that wrote nothing: its read failed, or
// KV refused its write. It is intake.ErrStorageUnavailable too, which
// tells the Service that no claim may have landed for it to remember.
type unwritten struct{ err error }

func (e unwritten) Error() string {
	return intake.ErrStorageUnavailable.Error() + ": " + e.err.Error()
}

func (e unwritten) Unwrap() []error { return []error{intake.ErrStorageUnavailable, e.err} }

// givenBack is a takeover's failed write, after which the key was written
// back open as the takeover found it (intake.ErrGivenBack).
type givenBack struct{ err error }

func (e givenBack) Error() string { return e.err.Error() + " (the key given back as it was)" }

func (e givenBack) Unwrap() []error { return []error{intake.ErrGivenBack, e.err} }

// takeOver writes c, a claim Step made of the Open key open. A failed
// write may still have landed and would hold the key for its lease: the
// key is written back open, as it was, trying twice. A claim on an
// unresolved key stays unresolved, as the ledger's row does: a holder
// that dies leaves the key unresolved once its lease ends, due only for
// the give-up's check if it awaited one, and never reported twice
// (docs/operating.md). One left beside the outcome it stored
// (ReleaseClaims false) is deleted by Commit.
func (k *Store) takeOver(ctx context.Context, key intake.Key, c intake.Claim, open intake.Record) (intake.Record, error) {
	if err := k.putClaim(ctx, key, c, false); err != nil {
		if errors.Is(err, ErrRateLimited) {
			return intake.Record{}, unwritten{err} // refused: the key is as it was
		}
		// What the key holds now, either way, is open's order id, time,
		// attempts and give-up: the caller remembers them (intake.Store).
		open.Took = intake.EventTakeOver
		if rerr := intake.ReleaseTwice(ctx, k, key, intake.GiveBack(c, open)); rerr != nil {
			return open, errs.Wrap(err, err.Error()+" (and reopening the key: "+rerr.Error()+")")
		}
		return open, givenBack{err}
	}
	open.State, open.Took = intake.Held, intake.EventTakeOver
	open.WrittenPhase = intake.PhaseAbsent // what was there, not what this claim wrote
	return open, nil
}

// putClaim writes c under pending:<key>: held for its lease, or open. A
// claim made without a gateway is the reference's: "1" for the lease, with
// at most the order's fingerprint in its metadata. With one, it keeps the order id and the
// order until c.KeepUntil, and says when the settler is due: when the
// lease ends, for a held claim whose holder may die, or c.NextAttempt.
func (k *Store) putClaim(ctx context.Context, key intake.Key, c intake.Claim, open bool) error {
	e := Entry{Value: pendingValue}
	if c.KeepUntil.IsZero() {
		e.Metadata = metadata{fingerprint: c.Fingerprint}.encode()
		return k.ns.Put(ctx, pendingPrefix+key.String(), e, PutOptions{TTL: c.Lease})
	}
	now := k.now()
	ttl := claimTTL(c, now)
	// An older version's open key kept no order: nothing but a client's
	// retry, which brings it, can settle the key, so it is never due
	// (DueAt).
	m := metadata{fingerprint: c.Fingerprint, orderID: c.OrderID, acceptedAt: c.AcceptedAt, client: key.Client,
		order: c.Order, hasOrder: c.HasOrder(), leaseUntil: now.Add(c.Lease), open: open,
		attempts: c.Attempts, unresolved: c.GiveUp.Unresolved()}
	m.due = intake.DueAt(c, open, m.leaseUntil, now)
	m.phase = intake.PhaseOf(claimRecordAt(m, e.Value, now))
	e.Metadata = m.encode()
	if len(e.Metadata) > MaxMetadataBytes {
		// A long symbol: the order goes in the value instead.
		e.Value = string(m.order.JSON())
		m.hasOrder = false
		e.Metadata = m.encode()
	}
	return k.ns.Put(ctx, pendingPrefix+key.String(), e, PutOptions{TTL: ttl})
}

// Commit implements intake.Store: it writes result:<key>, whose metadata
// holds the fingerprint (the value stays exactly the receipt, as the
// reference stores it). From then on the outcome wins over the claim for
// every reader; the Service deletes the claim after the response, as the
// reference does, or leaves it to expire.
//
// The receipt is kept at least as long as c's claim can be (claimTTL): a
// claim that outlived its receipt, left by a failed delete or by
// ReleaseClaims false, would be listed as overdue once the receipt
// expired, and the settler would call the gateway again for an order
// whose outcome was stored, and report it unresolved past SETTLE_MAX_AGE.
//
// A claim on an unresolved key is never due, so no sweep would find one
// left beside its outcome: with ReleaseClaims false Commit deletes it, or
// it would list the key as unresolved until it expires.
func (k *Store) Commit(ctx context.Context, key intake.Key, c intake.Claim, r intake.Result) error {
	entry := Entry{Value: string(r.Body), Metadata: metadata{fingerprint: r.Fingerprint, rejected: r.Rejected}.encode()}
	// Beside a claim kept to a KeepUntil, a second more than the claim's
	// own TTL: each is rounded to whole seconds from its own write's time,
	// so the claim's may end up to a second past KeepUntil, and the
	// receipt must end no sooner. A claim kept only for its lease (the
	// reference's) was written before this, and ends no later than a
	// receipt kept as long: that receipt keeps the reference's TTL.
	keep := claimTTL(c, k.now())
	if !c.KeepUntil.IsZero() {
		keep += time.Second
	}
	if err := k.ns.Put(ctx, resultPrefix+key.String(), entry, PutOptions{TTL: max(r.TTL, keep)}); err != nil {
		return err
	}
	if c.GiveUp.Unresolved() && !k.ReleaseClaims {
		// The outcome is stored: a failed delete leaves only a listing
		// that the admin API's lookup corrects.
		_ = k.Release(ctx, key, intake.Claim{Stage: intake.StageStored})
	}
	return nil
}

// claimTTL is the TTL putClaim gives c's claim when written at now: its
// lease, or, once its order may reach a gateway, until c.KeepUntil.
func claimTTL(c intake.Claim, now time.Time) time.Duration {
	if c.KeepUntil.IsZero() {
		return c.Lease
	}
	// KV counts a TTL in whole seconds: rounded up, the key outlives
	// KeepUntil rather than expire before it.
	return max(c.Lease, c.KeepUntil.Sub(now).Truncate(time.Second)+time.Second)
}

// Release implements intake.Store by deleting pending:<key>, or, once the
// order may have reached the gateway (intake.StageSent), by leaving it
// open with its order id and order, due for the settler at c.NextAttempt. KV cannot tell
// whose claim it is, so this is only called by the claim's holder. It
// ignores ctx's cancellation: a request abandoned midway must still free
// its key.
//
// A release often follows its claim's write within a second, which KV may
// refuse (ErrRateLimited): the release then waits out the second and
// writes once more, rather than leave the key held for the claim's whole
// lease.
func (k *Store) Release(ctx context.Context, key intake.Key, c intake.Claim) error {
	ctx = context.WithoutCancel(ctx)
	move, err := intake.StepRelease(c, intake.PhaseHeld, false)
	if err != nil {
		return err
	}
	write := func() error {
		if move.To == intake.PhaseAbsent || move.To == intake.PhaseStored {
			return k.ns.Delete(ctx, pendingPrefix+key.String())
		}
		return k.putClaim(ctx, key, c, true)
	}
	err = write()
	if errors.Is(err, ErrRateLimited) && k.sleep(ctx, writeEvery) == nil {
		err = write()
	}
	if err != nil {
		return errs.Prefix("release", err)
	}
	return nil
}

func (k *Store) sleep(ctx context.Context, d time.Duration) error {
	if k.Sleep != nil {
		return k.Sleep(ctx, d)
	}
	return intake.Sleep(ctx, d)
}

// metadata is what the Worker stores beside a value in KV, in one JSON
// object whose members are all optional.
type metadata struct {
	// fingerprint is the order's (order.Order.Fingerprint).
	fingerprint string
	// rejected marks a receipt that records the OMS's rejection.
	rejected bool
	// orderID and acceptedAt are a claim's order id and time, kept so that
	// every gateway call for the key carries them; client is the key's
	// client, so that a key listed by the sweep can be named.
	orderID    string
	acceptedAt time.Time
	client     string
	// order is the claim's order (hasOrder), for the settler.
	order    order.Order
	hasOrder bool
	// leaseUntil is when the claim stops holding the key; open means it
	// no longer does.
	leaseUntil time.Time
	open       bool
	// attempts counts the gateway calls without an answer stored; due is when
	// the settler is next due (zero: never); unresolved marks a key the
	// settler gave up on.
	attempts   int
	due        time.Time
	unresolved bool
	// phase is the key's phase as this write leaves it (intake.Phase),
	// beside the flags it follows from; written with an order id only.
	phase intake.Phase
}

// Metadata members, and the values that stand for true.
const (
	fingerprintMember = "fingerprint"
	outcomeMember     = "outcome"
	orderIDMember     = "orderId"
	acceptedAtMember  = "acceptedAt"
	clientMember      = "client"
	symbolMember      = "symbol"
	sideMember        = "side"
	quantityMember    = "quantity"
	leaseUntilMember  = "leaseUntil"
	stateMember       = "state"
	attemptsMember    = "attempts"
	dueMember         = "due"
	phaseMember       = "phase"
	rejectedValue     = "rejected"
	openValue         = "open"
	unresolvedValue   = "unresolved" // open, and given up on
	// heldUnresolvedValue is a live claim on a key the settler gave up
	// on: it holds the key like any claim until its lease ends.
	heldUnresolvedValue = "unresolved-held"
)

// encode writes m as a JSON object with only the members that are set, in
// a fixed order, or nil when none is.
func (m metadata) encode() []byte {
	var b []byte
	member := func(name string) {
		if b == nil {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(jsjson.AppendString(b, name), ':')
	}
	str := func(name, value string) {
		member(name)
		b = jsjson.AppendString(b, value)
	}
	millis := func(name string, at time.Time) {
		member(name)
		b = strconv.AppendInt(b, at.UnixMilli(), 10)
	}
	if m.fingerprint != "" {
		str(fingerprintMember, m.fingerprint)
	}
	if m.rejected {
		str(outcomeMember, rejectedValue)
	}
	if m.orderID != "" {
		str(orderIDMember, m.orderID)
		millis(acceptedAtMember, m.acceptedAt)
		millis(leaseUntilMember, m.leaseUntil)
		if m.client != "" {
			str(clientMember, m.client)
		}
		if m.attempts > 0 {
			member(attemptsMember)
			b = strconv.AppendInt(b, int64(m.attempts), 10)
		}
		if !m.due.IsZero() {
			millis(dueMember, m.due)
		}
		if m.phase != intake.PhaseAbsent {
			str(phaseMember, m.phase.String())
		}
	}
	if m.hasOrder {
		str(symbolMember, m.order.Symbol)
		str(sideMember, string(m.order.Side))
		member(quantityMember)
		b = jsjson.AppendNumber(b, m.order.Quantity)
	}
	switch {
	case m.unresolved && m.open:
		str(stateMember, unresolvedValue)
	case m.unresolved:
		str(stateMember, heldUnresolvedValue)
	case m.open:
		str(stateMember, openValue)
	}
	if b == nil {
		return nil
	}
	return append(b, '}')
}

// decodeMetadata reads what encode wrote. Anything else, such as the
// absent metadata of a receipt the TypeScript Worker stored, decodes to
// the zero metadata, member by member.
func decodeMetadata(b []byte) metadata {
	if b == nil {
		return metadata{}
	}
	doc, err := jsjson.Parse(b, fingerprintMember, outcomeMember, orderIDMember, acceptedAtMember, clientMember,
		symbolMember, sideMember, quantityMember, leaseUntilMember, stateMember, attemptsMember, dueMember, phaseMember)
	if err != nil {
		return metadata{}
	}
	str := func(name string) string {
		if v := doc.Get(name); v.Kind == jsjson.String {
			return v.Str
		}
		return ""
	}
	num := func(name string) float64 {
		if v := doc.Get(name); v.Kind == jsjson.Number {
			return v.Num
		}
		return 0
	}
	ms := func(name string) time.Time {
		if n := num(name); n != 0 {
			return time.UnixMilli(int64(n))
		}
		return time.Time{}
	}
	m := metadata{
		fingerprint: str(fingerprintMember),
		rejected:    str(outcomeMember) == rejectedValue,
		orderID:     str(orderIDMember),
		acceptedAt:  ms(acceptedAtMember),
		client:      str(clientMember),
		leaseUntil:  ms(leaseUntilMember),
		open:        str(stateMember) == openValue || str(stateMember) == unresolvedValue,
		unresolved:  str(stateMember) == unresolvedValue || str(stateMember) == heldUnresolvedValue,
		attempts:    int(num(attemptsMember)),
		due:         ms(dueMember),
	}
	m.phase, _ = intake.ParsePhase(str(phaseMember))
	o := order.Order{Symbol: str(symbolMember), Side: order.Side(str(sideMember)), Quantity: num(quantityMember)}
	if o.Symbol != "" && (o.Side == order.Buy || o.Side == order.Sell) && o.Quantity > 0 {
		m.order, m.hasOrder = o, true
	}
	return m
}

// Overdue returns up to limit keys whose settler was due before before:
// open keys, and claims whose holder did not come back by the end of its
// lease. It costs its list pages and nothing per key: a claim past its
// lease whose outcome was stored (its delete failed, or ReleaseClaims is
// false) is listed too, and settling it finds the outcome and deletes the
// claim (Begin). It reads at most maxSweepPages pages of pending:<key>,
// from where the last call stopped (a cursor kept under sweepCursorKey),
// so that one Cron Trigger's operations stay bounded however many claims
// there are. It needs a namespace that lists (Lister). The list may lag
// behind writes, as KV's does: a key is listed again on a later sweep.
func (k *Store) Overdue(ctx context.Context, before time.Time, limit int) ([]intake.Key, error) {
	return k.walk(ctx, sweepCursorKey, limit, func(m metadata) bool {
		return !m.due.IsZero() && m.due.Before(before)
	})
}

// LeftOpen returns up to limit keys KV mode may have left open, for a
// migration to adopt (intake.Service.Adopt): every claim made with a
// gateway, whether due, backing off, given up on (unresolved, with no due
// time) or still held, since its holder may die. Like Overdue it costs its
// list pages, and goes on across calls from where the last one stopped
// (a cursor of its own, under adoptCursorKey), past the keys it returned,
// so that N such claims are all returned within N/limit calls plus one,
// whatever is done with them; then it starts over.
func (k *Store) LeftOpen(ctx context.Context, limit int) ([]intake.Key, error) {
	return k.walk(ctx, adoptCursorKey, limit, func(m metadata) bool { return m.orderID != "" })
}

// walk returns up to limit keys of pending:<key> whose metadata match
// takes, reading at most maxSweepPages pages from where the last walk
// under cursorKey stopped. The cursor it keeps names the KV page it
// stopped in and the last name of it it returned: KV lists in name order,
// so the next walk lists that page again and skips the names up to it.
func (k *Store) walk(ctx context.Context, cursorKey string, limit int, match func(metadata) bool) ([]intake.Key, error) {
	lister, ok := k.ns.(Lister)
	if !ok {
		return nil, errors.New("kv: the namespace cannot list its keys")
	}
	var keys []intake.Key
	cursor, after := "", ""
	if e, err := k.ns.Get(ctx, cursorKey); err == nil {
		cursor, after, _ = strings.Cut(e.Value, "\n")
	}
	for range maxSweepPages {
		page, next, err := lister.List(ctx, pendingPrefix, cursor, listPage)
		if err != nil {
			return keys, errs.Prefix("kv: list", err)
		}
		for i, l := range page {
			if after != "" && l.Name <= after {
				continue // returned by an earlier walk
			}
			m := decodeMetadata(l.Metadata)
			if !match(m) {
				continue
			}
			name := strings.TrimPrefix(l.Name, pendingPrefix)
			id := name
			if m.client != "" {
				id = strings.TrimPrefix(id, m.client+":")
			}
			keys = append(keys, intake.Key{Client: m.client, ID: id})
			if len(keys) == limit {
				if i == len(page)-1 {
					return keys, k.saveWalkCursor(ctx, cursorKey, next, "")
				}
				// The rest of this page waits for the next walk.
				return keys, k.saveWalkCursor(ctx, cursorKey, cursor, l.Name)
			}
		}
		switch {
		case next == "":
			// The walk's end: the next one starts over.
			return keys, k.saveWalkCursor(ctx, cursorKey, "", "")
		case next != cursor:
			after = "" // a new page (an empty one may name its own start)
		}
		cursor = next
	}
	return keys, k.saveWalkCursor(ctx, cursorKey, cursor, after)
}

// saveWalkCursor keeps where the next walk under cursorKey starts: in KV's
// page cursor, after the name after; both "" for the first page. A cursor
// that fails to save only makes the next walk start over.
func (k *Store) saveWalkCursor(ctx context.Context, cursorKey, cursor, after string) error {
	if cursor == "" && after == "" {
		if err := k.ns.Delete(ctx, cursorKey); err != nil {
			return errs.Prefix("kv: clearing the sweep's cursor", err)
		}
		return nil
	}
	if err := k.ns.Put(ctx, cursorKey, Entry{Value: cursor + "\n" + after}, PutOptions{TTL: sweepCursorTTL}); err != nil {
		return errs.Prefix("kv: saving the sweep's cursor", err)
	}
	return nil
}

// The sweep's bounds: pages per sweep, and where the cursors of KV mode's
// sweep and of a migration's adoption are kept between runs (an hour,
// past which a walk starts over).
const (
	maxSweepPages  = 10
	sweepCursorKey = "sweep:cursor"
	adoptCursorKey = "sweep:adopt-cursor"
	sweepCursorTTL = time.Hour
)

// listPage is how many keys a KV list call returns at most.
const listPage = MaxListKeys
