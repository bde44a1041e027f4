package intake

import (
	"context"
	"errors"

	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/kv"
)

// Key prefixes and the claim marker, as the TypeScript reference writes
// them, so both Workers can share one namespace.
const (
	resultPrefix  = "result:"
	pendingPrefix = "pending:"
	pendingValue  = "1"
)

// KVStore is the reference's Store: receipts under result:<key> and claims
// under pending:<key> in one KV namespace. KV has no compare-and-swap, so a
// claim is a read followed by a write: two requests reaching two isolates
// at once can both claim a key, and KVStore cannot fence (Commit never
// returns ErrLostClaim). The Service's in-flight set makes claims exact
// within one instance.
type KVStore struct {
	kv   kv.Store
	opts KVOptions
}

// KVOptions tunes a KVStore; nil fields take the defaults.
type KVOptions struct {
	// Defer runs work after the response. The Worker passes
	// workers.WaitUntil; nil runs it at once.
	Defer func(ctx context.Context, task func(context.Context))
	// OnReleaseError is told when a claim released after the response could
	// not be deleted; the claim then expires after its lease.
	OnReleaseError func(key Key, err error)
}

// NewKVStore returns a KVStore over s.
func NewKVStore(s kv.Store, opts *KVOptions) *KVStore {
	k := &KVStore{kv: s}
	if opts != nil {
		k.opts = *opts
	}
	if k.opts.Defer == nil {
		k.opts.Defer = func(ctx context.Context, task func(context.Context)) { task(ctx) }
	}
	if k.opts.OnReleaseError == nil {
		k.opts.OnReleaseError = func(Key, error) {}
	}
	return k
}

// Lookup implements Store: it reads result:<key> and pending:<key> at once,
// one round trip instead of two. A stored receipt wins over a claim.
func (k *KVStore) Lookup(ctx context.Context, key Key) (Record, error) {
	claim := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				claim <- panicked{p}
			}
		}()
		_, err := k.kv.Get(ctx, pendingPrefix+key.String())
		claim <- err
	}()
	stored, err := k.kv.Get(ctx, resultPrefix+key.String())
	// Always wait: a lookup left running could outlive the request.
	claimErr := <-claim
	if p, ok := claimErr.(panicked); ok {
		panic(p.value) // on the request's goroutine, where it is recovered
	}
	switch {
	case err == nil:
		return Record{State: Stored, Receipt: []byte(stored.Value), Fingerprint: decodeMetadata(stored.Metadata).Fingerprint}, nil
	case !errors.Is(err, kv.ErrNotFound):
		return Record{}, err
	case claimErr == nil:
		return Record{State: Held}, nil
	case !errors.Is(claimErr, kv.ErrNotFound):
		return Record{}, claimErr
	}
	return Record{State: Absent}, nil
}

// panicked carries a panic from a lookup goroutine to the request's.
type panicked struct{ value any }

func (panicked) Error() string { return "panic in a KV lookup" }

// Begin implements Store as the reference does: look up, then write the
// claim marker with the lease as its TTL.
func (k *KVStore) Begin(ctx context.Context, key Key, c Claim) (Record, error) {
	rec, err := k.Lookup(ctx, key)
	if err != nil || rec.State != Absent {
		return rec, err
	}
	if c.Admit != nil {
		if err := c.Admit(ctx); err != nil {
			return Record{}, err
		}
	}
	if err := k.kv.Put(ctx, pendingPrefix+key.String(), kv.Entry{Value: pendingValue}, kv.PutOptions{TTL: c.Lease}); err != nil {
		// A failed put may still have landed: release it so retries are not blocked.
		if rerr := k.Release(ctx, key, c); rerr != nil {
			k.opts.OnReleaseError(key, rerr)
		}
		return Record{}, err
	}
	return Record{State: Claimed}, nil
}

// Commit implements Store: it writes result:<key>, whose metadata holds the
// fingerprint (the value stays exactly the receipt, as the reference stores
// it). From then on the receipt wins over the claim for every reader, so
// the claim is left to expire with its lease, unlike the reference, which
// deletes it: a delete is a write KV bills and a round trip, and a claim
// still visible where the receipt has not yet arrived (KV takes up to a
// minute to spread a write) keeps other locations from placing the order
// again. Only a claim that would outlive the receipt is deleted, after the
// response.
func (k *KVStore) Commit(ctx context.Context, key Key, c Claim, r Receipt) error {
	entry := kv.Entry{Value: string(r.Body), Metadata: receiptMetadata{Fingerprint: r.Fingerprint}.encode()}
	if err := k.kv.Put(ctx, resultPrefix+key.String(), entry, kv.PutOptions{TTL: r.TTL}); err != nil {
		return err
	}
	if c.Lease > r.TTL {
		k.opts.Defer(ctx, func(ctx context.Context) {
			if err := k.Release(ctx, key, c); err != nil {
				k.opts.OnReleaseError(key, err)
			}
		})
	}
	return nil
}

// Release implements Store by deleting pending:<key>. KV cannot tell whose
// claim it is, so this is only called by the claim's holder. It ignores
// ctx's cancellation: a request abandoned midway must still free its key.
func (k *KVStore) Release(ctx context.Context, key Key, _ Claim) error {
	if err := k.kv.Delete(context.WithoutCancel(ctx), pendingPrefix+key.String()); err != nil {
		return errs.Prefix("release", err)
	}
	return nil
}

// receiptMetadata is the metadata stored beside a receipt in KV.
type receiptMetadata struct {
	// Fingerprint is the order's fingerprint (order.Order.Fingerprint).
	Fingerprint string
}

// fingerprintMember names the metadata member holding the fingerprint.
const fingerprintMember = "fingerprint"

// encode writes m as {"fingerprint":"..."}, or nil when m is empty.
func (m receiptMetadata) encode() []byte {
	if m.Fingerprint == "" {
		return nil
	}
	b := append([]byte(`{"`+fingerprintMember+`":`), jsjson.AppendString(nil, m.Fingerprint)...)
	return append(b, '}')
}

// decodeMetadata reads what encode wrote. Anything else, such as the
// absent metadata of a receipt the TypeScript Worker stored, decodes to the
// zero receiptMetadata: no fingerprint.
func decodeMetadata(b []byte) receiptMetadata {
	if b == nil {
		return receiptMetadata{}
	}
	doc, err := jsjson.Parse(b, fingerprintMember)
	if err != nil {
		return receiptMetadata{}
	}
	if fp := doc.Get(fingerprintMember); fp.Kind == jsjson.String {
		return receiptMetadata{Fingerprint: fp.Str}
	}
	return receiptMetadata{}
}
