package kv

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
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
	ns  Namespace
	now func() time.Time
}

// NewStore returns a Store over ns on the clock now; nil means time.Now.
func NewStore(ns Namespace, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{ns: ns, now: now}
}

// Lookup implements intake.Store: it reads result:<key> and pending:<key>
// at once, one round trip instead of two. A stored outcome wins over a
// claim.
func (k *Store) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	type read struct {
		e   Entry
		err error
	}
	claim := make(chan read, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				claim <- read{err: panicked{p}}
			}
		}()
		e, err := k.ns.Get(ctx, pendingPrefix+key.String())
		claim <- read{e, err}
	}()
	stored, err := k.ns.Get(ctx, resultPrefix+key.String())
	// Always wait: a lookup left running could outlive the request.
	pending := <-claim
	if p, ok := pending.err.(panicked); ok {
		panic(p.value) // on the request's goroutine, where it is recovered
	}
	switch {
	case err == nil:
		m := decodeMetadata(stored.Metadata)
		return intake.Record{State: intake.Stored, Body: []byte(stored.Value), Rejected: m.rejected, Fingerprint: m.fingerprint}, nil
	case !errors.Is(err, ErrNotFound):
		return intake.Record{}, err
	case pending.err == nil:
		return k.claimRecord(pending.e.Metadata), nil
	case !errors.Is(pending.err, ErrNotFound):
		return intake.Record{}, pending.err
	}
	return intake.Record{State: intake.Absent}, nil
}

// claimRecord reads a claim. The reference's, and one made without a
// gateway, have no metadata: they hold the key until they expire.
func (k *Store) claimRecord(meta []byte) intake.Record {
	m := decodeMetadata(meta)
	rec := intake.Record{State: intake.Held, Fingerprint: m.fingerprint, OrderID: m.orderID, AcceptedAt: m.acceptedAt}
	if m.orderID != "" && (m.open || !k.now().Before(m.leaseUntil)) {
		rec.State = intake.Open
	}
	return rec
}

// panicked carries a panic from a lookup goroutine to the request's.
type panicked struct{ value any }

func (panicked) Error() string { return "panic in a KV lookup" }

// Begin implements intake.Store as the reference does: look up, then write
// the claim marker with the lease as its TTL. Once an order may reach a
// gateway (c.Keep), the claim also keeps its order id for that long, with
// the lease in its metadata.
func (k *Store) Begin(ctx context.Context, key intake.Key, c intake.Claim) (intake.Record, error) {
	rec, err := k.Lookup(ctx, key)
	switch {
	case err != nil:
		return intake.Record{}, err
	case rec.State == intake.Open:
		return k.takeOver(ctx, key, c, rec)
	case rec.State != intake.Absent:
		return rec, nil
	}
	if c.Admit != nil {
		if err := c.Admit(ctx); err != nil {
			return intake.Record{}, err
		}
	}
	if err := k.putClaim(ctx, key, c, false); err != nil {
		// A failed put may still have landed: release it so retries are not
		// blocked for its lease, trying twice.
		rerr := k.Release(ctx, key, c)
		if rerr != nil {
			rerr = k.Release(ctx, key, c)
		}
		if rerr != nil {
			err = errs.Wrap(err, err.Error()+" (and releasing the claim: "+rerr.Error()+")")
		}
		return intake.Record{}, err
	}
	return intake.Record{State: intake.Claimed}, nil
}

// takeOver claims an Open key for c with the order id it keeps, unless it
// is another order's. A failed write may still have landed and would hold
// the key for its lease: the key is written back open, with its order id,
// trying twice.
func (k *Store) takeOver(ctx context.Context, key intake.Key, c intake.Claim, open intake.Record) (intake.Record, error) {
	if c.Fingerprint != "" && open.Fingerprint != "" && c.Fingerprint != open.Fingerprint {
		return open, nil
	}
	c.OrderID, c.AcceptedAt = open.OrderID, open.AcceptedAt
	if c.Fingerprint == "" {
		c.Fingerprint = open.Fingerprint
	}
	if err := k.putClaim(ctx, key, c, false); err != nil {
		ctx = context.WithoutCancel(ctx)
		if rerr := k.putClaim(ctx, key, c, true); rerr != nil {
			if rerr = k.putClaim(ctx, key, c, true); rerr != nil {
				err = errs.Wrap(err, err.Error()+" (and reopening the key: "+rerr.Error()+")")
			}
		}
		return intake.Record{}, err
	}
	open.State = intake.Claimed
	return open, nil
}

// putClaim writes c under pending:<key>: held for its lease, or open. A
// claim made before the body is read, as the reference makes it, and
// without a gateway, is exactly the reference's: "1" and no metadata.
func (k *Store) putClaim(ctx context.Context, key intake.Key, c intake.Claim, open bool) error {
	e := Entry{Value: pendingValue}
	ttl := c.Lease
	m := metadata{fingerprint: c.Fingerprint}
	if c.Keep > 0 {
		ttl = max(c.Lease, c.Keep)
		m.orderID, m.acceptedAt, m.leaseUntil, m.open = c.OrderID, c.AcceptedAt, k.now().Add(c.Lease), open
	}
	e.Metadata = m.encode()
	return k.ns.Put(ctx, pendingPrefix+key.String(), e, PutOptions{TTL: ttl})
}

// Commit implements intake.Store: it writes result:<key>, whose metadata
// holds the fingerprint (the value stays exactly the receipt, as the
// reference stores it). From then on the outcome wins over the claim for
// every reader; the Service deletes the claim after the response, as the
// reference does, or leaves it to expire.
func (k *Store) Commit(ctx context.Context, key intake.Key, _ intake.Claim, r intake.Result) error {
	entry := Entry{Value: string(r.Body), Metadata: metadata{fingerprint: r.Fingerprint, rejected: r.Rejected}.encode()}
	return k.ns.Put(ctx, resultPrefix+key.String(), entry, PutOptions{TTL: r.TTL})
}

// Release implements intake.Store by deleting pending:<key>, or, once the
// order may have reached the gateway (c.Sent), by leaving it open with its
// order id. KV cannot tell whose claim it is, so this is only called by
// the claim's holder. It ignores ctx's cancellation: a request abandoned
// midway must still free its key.
func (k *Store) Release(ctx context.Context, key intake.Key, c intake.Claim) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	if c.Sent && c.Keep > 0 {
		err = k.putClaim(ctx, key, c, true)
	} else {
		err = k.ns.Delete(ctx, pendingPrefix+key.String())
	}
	if err != nil {
		return errs.Prefix("release", err)
	}
	return nil
}

// metadata is what the Worker stores beside a value in KV, in one JSON
// object whose members are all optional.
type metadata struct {
	// fingerprint is the order's (order.Order.Fingerprint).
	fingerprint string
	// rejected marks a receipt that records the OMS's rejection.
	rejected bool
	// orderID and acceptedAt are a claim's order id and time, kept so that
	// every gateway call for the key carries them.
	orderID    string
	acceptedAt time.Time
	// leaseUntil is when the claim stops holding the key; open means it
	// no longer does.
	leaseUntil time.Time
	open       bool
}

// Metadata members, and the values that stand for true.
const (
	fingerprintMember = "fingerprint"
	outcomeMember     = "outcome"
	orderIDMember     = "orderId"
	acceptedAtMember  = "acceptedAt"
	leaseUntilMember  = "leaseUntil"
	stateMember       = "state"
	rejectedValue     = "rejected"
	openValue         = "open"
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
	if m.fingerprint != "" {
		member(fingerprintMember)
		b = jsjson.AppendString(b, m.fingerprint)
	}
	if m.rejected {
		member(outcomeMember)
		b = jsjson.AppendString(b, rejectedValue)
	}
	if m.orderID != "" {
		member(orderIDMember)
		b = jsjson.AppendString(b, m.orderID)
		member(acceptedAtMember)
		b = strconv.AppendInt(b, m.acceptedAt.UnixMilli(), 10)
		member(leaseUntilMember)
		b = strconv.AppendInt(b, m.leaseUntil.UnixMilli(), 10)
	}
	if m.open {
		member(stateMember)
		b = jsjson.AppendString(b, openValue)
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
	doc, err := jsjson.Parse(b, fingerprintMember, outcomeMember, orderIDMember, acceptedAtMember, leaseUntilMember, stateMember)
	if err != nil {
		return metadata{}
	}
	str := func(name string) string {
		if v := doc.Get(name); v.Kind == jsjson.String {
			return v.Str
		}
		return ""
	}
	ms := func(name string) time.Time {
		if v := doc.Get(name); v.Kind == jsjson.Number {
			return time.UnixMilli(int64(v.Num))
		}
		return time.Time{}
	}
	return metadata{
		fingerprint: str(fingerprintMember),
		rejected:    str(outcomeMember) == rejectedValue,
		orderID:     str(orderIDMember),
		acceptedAt:  ms(acceptedAtMember),
		leaseUntil:  ms(leaseUntilMember),
		open:        str(stateMember) == openValue,
	}
}
