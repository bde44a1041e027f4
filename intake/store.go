package intake

import (
	"context"
	"errors"
	"time"
)

// Key names an order's idempotency record: the client that sent it and the
// Idempotency-Key it carried. Keys of different clients never meet.
type Key struct {
	// Client is the authenticated client's id; empty when the Worker runs
	// open, whose keys are stored as the TypeScript reference stores them.
	Client string
	// ID is the Idempotency-Key.
	ID string
}

// String is the key in its scoped form, client:id, or id alone for the
// open Worker: the form KV keys and caches use.
func (k Key) String() string {
	if k.Client == "" {
		return k.ID
	}
	return k.Client + ":" + k.ID
}

// State is what a Store holds for a key.
type State uint8

const (
	// Absent: nothing live is stored under the key.
	Absent State = iota
	// Held: another request's live claim holds the key.
	Held
	// Stored: a receipt is stored.
	Stored
	// Claimed is returned by Begin only: the caller's claim now holds the key.
	Claimed
)

// Record is what a Store found under a key.
type Record struct {
	State State
	// Receipt is the stored receipt, byte for byte; set when State is Stored.
	Receipt []byte
	// Fingerprint identifies the order a receipt or claim is for; empty when
	// unknown (receipts stored by the TypeScript Worker, claims in KV).
	Fingerprint string
	// Expires is when a stored receipt stops being served; zero when the
	// Store cannot tell (KV does not say).
	Expires time.Time
}

// Claim is a request's claim on a key.
type Claim struct {
	// Token tells this claim's holder apart from any later one; a Store that
	// fences refuses a Commit whose token no longer holds the key.
	Token string
	// Fingerprint is the order's, or empty when it is not known yet (the KV
	// lifecycle, like the reference, validates the body after claiming).
	Fingerprint string
	// Lease is how long the claim blocks the key if its holder dies.
	Lease time.Duration
	// Admit, if set, decides whether a new order may be placed (the rate
	// limit); replays never reach it. Begin calls it once it knows the key is
	// new: before writing anything where it can (KV), or right after the
	// claim when claiming is one atomic step (the ledger), releasing the
	// claim if Admit refuses. Begin returns Admit's error as it is.
	Admit func(context.Context) error
}

// Receipt is what Commit stores.
type Receipt struct {
	Body        []byte
	Fingerprint string
	// TTL is how long the receipt stays replayable.
	TTL time.Duration
}

// ErrLostClaim is returned by Commit when the claim no longer holds the key:
// its lease ran out and another request took the key over. Nothing was
// stored.
var ErrLostClaim = errors.New("intake: claim lost to another request")

// Store keeps claims and receipts for the lifecycle: Workers KV in the
// reference's layout (KVStore), or the Durable Object ledger.
//
// Every method either takes effect or returns an error; an error may also
// mean the call took effect but its answer was lost, which the lifecycle
// allows for. A Store must never return a receipt it did not store.
type Store interface {
	// Begin claims key for c, unless a receipt is stored (Stored, with the
	// receipt) or another request's live claim holds it (Held). It returns
	// Claimed when c now holds the key.
	Begin(ctx context.Context, key Key, c Claim) (Record, error)
	// Commit stores r under key and ends c. It returns ErrLostClaim if c no
	// longer holds the key, where a Store can tell.
	Commit(ctx context.Context, key Key, c Claim, r Receipt) error
	// Release ends c without a receipt, so a retry can claim the key at
	// once; a claim that no longer holds the key is left alone.
	Release(ctx context.Context, key Key, c Claim) error
	// Lookup returns what is stored under key (Absent, Held or Stored),
	// changing nothing.
	Lookup(ctx context.Context, key Key) (Record, error)
}
