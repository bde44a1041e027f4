package intake

import (
	"context"
	"errors"
	"time"

	"github.com/edge-orders/edge-orders/order"
)

// Key names an order's idempotency record: the client that sent it and the
// Idempotency-Key it carried. Keys of different clients never meet.
type Key struct {
	// Client is the authenticated client's id; empty when the Worker runs
	// open, whose keys are stored as the TypeScript reference stores them.
	Client string
	// ID is the Idempotency-Key.
	ID string
	// Quoted says the client sent the key in the IETF draft's quoted form
	// ("abc" for abc). It is the same key; the open Worker's KV store also
	// reads what the TypeScript reference, which kept the header as it
	// came, stored under that form (kv.Store).
	Quoted bool
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
	// Held: a live claim holds the key: another request's, or, once
	// Begin took the key (Record.Took), the caller's.
	Held
	// Stored: the key's outcome is stored: a receipt, or a rejection.
	Stored
	// Open: an earlier claim sent, or may have sent, the order to the
	// gateway and ended without an outcome. The key keeps that claim's
	// order id and is free: the next Begin for the same order takes it
	// over, with the order id.
	Open
)

// Record is what a Store found under a key.
type Record struct {
	State State
	// Body is the stored outcome, byte for byte; set when State is Stored.
	Body []byte
	// Rejected is true when Body is a rejection rather than a receipt.
	Rejected bool
	// Fingerprint identifies the order a receipt or claim is for; empty when
	// unknown (receipts stored by the TypeScript Worker, claims in KV
	// without a gateway or for a body that is not an order).
	Fingerprint string
	// Expires is when a stored outcome stops being served; zero when the
	// Store cannot tell (KV does not say). A Store that tells it says so
	// in its Lifecycle (TellsExpiry).
	Expires time.Time
	// OrderID and AcceptedAt are the order id and time kept for the key:
	// set for Held and Open, and for a takeover, whose claim must then use
	// them.
	OrderID    string
	AcceptedAt time.Time
	// Order is the order the key's claim is for, kept with the claim so
	// that the settler can call the gateway again without the client; set
	// with OrderID once the claim carried it (HasOrder).
	Order    order.Order
	HasOrder bool
	// Attempts counts the gateway calls for the key that ended without an
	// answer stored; NextAttempt is when the settler is due to call again (zero
	// when no call is due); GiveUp says whether the settler gave up
	// (Options.SettleMaxAge), or awaits the give-up's check at NextAttempt.
	// Set for Held and Open, and for a takeover.
	Attempts    int
	NextAttempt time.Time
	GiveUp      GiveUp
	// WrittenPhase is the key's phase as its Store last wrote it, beside
	// the flags above, before the clock moved it on (a lease that ended);
	// PhaseAbsent where the record does not say: a record written before
	// phases were, a claim in the reference's layout, a receipt in KV
	// (whose key says it is stored), a record of Begin's claim (Took).
	// CheckWrittenPhase tells whether it agrees with the flags.
	WrittenPhase Phase
	// Took is what Begin's claim did, as Step decided it: EventClaim, the
	// claim now holds the key, which was free, under its own order id;
	// EventTakeOver, the claim now holds the key, which was Open, under
	// the order id, time, order, attempts and give-up the key kept (set
	// in the record), which the claim carries from then on (TakeOver):
	// an earlier attempt may have reached the gateway with them. Either
	// way State is Held. EventNone for a record Begin left as it found
	// it, and for every record Lookup returns.
	Took Event
}

// Holds reports whether Begin's claim now holds the key: it claimed it,
// or took it over (Took).
func (r Record) Holds() bool { return r.Took != EventNone }

// GiveUp is how far the settler has given up on a key.
type GiveUp uint8

const (
	// NotGivenUp: the settler is due at NextAttempt.
	NotGivenUp GiveUp = iota
	// AwaitingCheck: the settler's last call failed over reads that lag
	// (KV); the give-up's check at NextAttempt decides, once they have
	// caught up. NextAttempt is never zero.
	AwaitingCheck
	// GivenUp: the settler gave up and paged; nothing is due again.
	GivenUp
)

// Unresolved reports whether g is a give-up, final or awaiting its check:
// what a client and an operator are told, and the flag the stores write.
func (g GiveUp) Unresolved() bool { return g != NotGivenUp }

// GiveUpOf is the give-up the stores' written form says: a flag, and a
// due time while the check awaits. Every store decodes it here, records
// written before GiveUp was too; WrittenGiveUp is its inverse.
func GiveUpOf(unresolved bool, due time.Time) GiveUp {
	switch {
	case !unresolved:
		return NotGivenUp
	case due.IsZero():
		return GivenUp
	}
	return AwaitingCheck
}

// WrittenGiveUp is g with due time next in the stores' written form,
// which GiveUpOf reads back: a key given up on is due never.
func WrittenGiveUp(g GiveUp, next time.Time) (unresolved bool, due time.Time) {
	if g == GivenUp {
		return true, time.Time{}
	}
	return g == AwaitingCheck, next
}

// Claim is a request's claim on a key, or the settler's.
type Claim struct {
	// Token tells this claim's holder apart from any later one; a Store that
	// fences refuses a Commit whose token no longer holds the key.
	Token string
	// Fingerprint is the order's, or empty for a body that is not an order
	// (the KV lifecycle, like the reference, claims before it answers an
	// invalid body) and for the settler's claim, which takes the key's.
	Fingerprint string
	// Order is the order itself, stored with the claim from the first
	// write on so that the key can be settled without the client; zero
	// with an empty Fingerprint.
	Order order.Order
	// OrderID and AcceptedAt are minted before the claim and stored with
	// it, so that every gateway call for the key carries the same order id,
	// even one made after this request died.
	OrderID    string
	AcceptedAt time.Time
	// Lease is how long the claim blocks the key if its holder dies.
	Lease time.Duration
	// KeepUntil is how long the key keeps OrderID and its order at least,
	// once the order may reach the gateway: past every settle attempt and
	// then a receipt's TTL, so a key never expires while its outcome is
	// unknown. Zero keeps the claim only for the Lease, which is enough when
	// placing an order reaches nothing outside (the stand-in gateway). A
	// Store never shortens what an earlier claim kept.
	KeepUntil time.Time
	// Stage is how far the claim has come: tentative, firm, sent or
	// stored. StepRelease reads it to decide how a release leaves the key.
	Stage Stage
	// Attempts, NextAttempt and GiveUp are what Release stores with an
	// Open key: the gateway calls that ended without an answer stored, when
	// the settler is due to call again, and whether it gave up on the key.
	Attempts    int
	NextAttempt time.Time
	GiveUp      GiveUp
	// By is who claims: zero for a client's submission; RoleSettler for
	// the settler's claim, which takes over an Open key only once due
	// (DueFor) and claims no free key; RoleResolver for an operator's
	// (Admin.Resolve), which takes over any Open key and claims no free key
	// either; RoleAdopter for a migration's adoption of a key only the
	// Fallback holds. Step checks every move against the table's rows for
	// By.
	By Role
	// Admit, if set, decides whether a new order may be placed (the rate
	// limit); replays and takeovers of an Open key never reach it. Begin
	// calls it once it knows the key is new: before writing anything where
	// it can (KV), or right after the claim when claiming is one atomic step
	// (the ledger), releasing the claim if Admit refuses. Begin returns
	// Admit's error as it is.
	Admit func(context.Context) error
}

// Stage is how far a claim has come: what its release must keep.
type Stage uint8

const (
	// StageFirm: the claim's order id is the key's, and its order has
	// not been passed to the gateway: a release frees the key.
	StageFirm Stage = iota
	// StageTentative: the claim's order id is not yet the key's, since a
	// migration's Fallback may still hold another. If the claim ends
	// without Commit or Release (its holder died, or its release failed),
	// the key is free again and nothing is due for the settler: its
	// order never reached the gateway under it. Begin with the same token
	// at StageFirm makes it firm. Only a Store with Lifecycle.Tentative
	// (the ledger) tells it from StageFirm.
	StageTentative
	// StageSent: the order may have reached the gateway under OrderID: a
	// release keeps the order id and leaves the key Open.
	StageSent
	// StageStored: Commit stored the claim's outcome. Its release deletes
	// the claim, and the key stays stored, which is no move of the
	// table's (ReleaseAfterCommit; KV's Commit of a claim on a key given
	// up on).
	StageStored
)

var stageNames = []string{"firm", "tentative", "sent", "stored"}

func (st Stage) String() string {
	if int(st) < len(stageNames) {
		return stageNames[st]
	}
	return "stage?"
}

// Result is what Commit stores: the key's final outcome.
type Result struct {
	// Body is the receipt (order.Receipt's JSON), whose status says
	// whether the order was accepted or rejected.
	Body     []byte
	Rejected bool
	// Fingerprint is the order's.
	Fingerprint string
	// TTL is how long the outcome stays replayable.
	TTL time.Duration
}

// ErrLostClaim is returned by Commit when the claim no longer holds the key:
// its lease ran out and another request took the key over. Nothing was
// stored.
var ErrLostClaim = errors.New("intake: claim lost to another request")

// Store keeps claims and outcomes for the lifecycle: Workers KV in the
// reference's layout (kv.Store), or the Durable Object ledger
// (ledger.Client).
//
// Every method either takes effect or returns an error; an error may also
// mean the call took effect but its answer was lost, which the lifecycle
// allows for. A Store must never return an outcome it did not store.
type Store interface {
	// Begin claims key for c, unless an outcome is stored (Stored, with
	// the body) or another request's live claim holds it (Held). An Open
	// key is taken over, keeping its order id, order and attempts (set in
	// the record), unless both it and c have fingerprints and they
	// differ: then it stays Open and Begin returns it. The settler's
	// claim (c.By) takes over only an Open key that is due (DueFor): not
	// one given up on, nor one kept without its order, but one whose
	// give-up awaits its check once the check is due; an operator's, any
	// Open key. Step decides. When c
	// now holds the key, Begin returns Held, and Took says how c took
	// it. An error that wraps ErrStorageUnavailable says that Begin wrote
	// nothing. With any other error the record is zero, but for a
	// takeover whose write failed (KV): the Open key it took over, Took
	// EventTakeOver, whose order id, time, attempts and give-up its write
	// and the write-back after it both leave the key holding.
	Begin(ctx context.Context, key Key, c Claim) (Record, error)
	// Commit stores r under key and ends c. It returns ErrLostClaim if c no
	// longer holds the key, where a Store can tell.
	Commit(ctx context.Context, key Key, c Claim, r Result) error
	// Release ends c without an outcome, so a retry can claim the key at
	// once. If c's order was sent (StageSent), the key is left Open with
	// c's order id and order, its Attempts, NextAttempt and GiveUp, kept
	// until c.KeepUntil at least; otherwise the claim is removed. A claim that no longer holds
	// the key is left alone.
	Release(ctx context.Context, key Key, c Claim) error
	// Lookup returns what is stored under key (Absent, Held, Open or
	// Stored), changing nothing.
	Lookup(ctx context.Context, key Key) (Record, error)
	// Lifecycle says how the Service runs the lifecycle over this Store.
	// New reads it once: it must not change once the Store is in use.
	Lifecycle() Lifecycle
}

// Lifecycle is what a Store asks of the Service beyond Begin, Commit,
// Release and Lookup: the steps its layout makes pointless or calls for.
// The zero Lifecycle is the TypeScript reference's with its claims left to
// expire.
type Lifecycle struct {
	// ValidateFirst has the Service refuse an invalid body before anything
	// is stored, so that it costs no writes: a Store whose claim carries
	// the order's fingerprint (the ledger) has nothing to claim for a body
	// that is not an order. Off, an invalid body claims the key and
	// releases it before it is answered, as the reference does.
	ValidateFirst bool
	// ReleaseAfterCommit has the Service delete the claim once the outcome
	// is stored, after the response (through Options.Defer): the
	// reference's check, claim, write, release. A Store whose Commit
	// replaces the claim, as the ledger's does, leaves it off; so does KV
	// when its claims are left to expire with their lease.
	ReleaseAfterCommit bool
	// Tentative says the Store keeps a tentative claim (StageTentative)
	// apart from a firm one, and renews a claim, firm, on a Begin with the
	// same token: the ledger. The Service then claims tentatively while a
	// Fallback may hold the key's order id, and renews its claim after
	// reading the Fallback.
	Tentative bool
	// TellsExpiry says the Store's Lookup and Begin set Record.Expires for
	// a stored outcome: the later of its Commit's time plus Result.TTL
	// and the claim's KeepUntil (the ledger). The Service then tells a
	// lookup when the outcome expires (Outcome.Expires), from memory too.
	TellsExpiry bool
	// SettlesItself says the Store's own alarm settles a key left due with
	// no client to retry it (the ledger). The stand-in's answer then
	// precedes its commit, as a gateway's does, and its claim keeps the
	// order id and time it answered until the receipt would expire: a
	// commit that fails is stored by a retry or the alarm, with the same
	// bytes. Off (KV, with no settler for the stand-in and the reference's
	// claim, a marker kept for its lease), the stand-in commits first.
	SettlesItself bool
	// ReadsLag is how long a read may miss a write (KV: a minute or
	// more; zero for a Store whose reads are exact). The settler's give-up
	// rests on reads that found no outcome: over such a Store, the last
	// call that fails leaves the key Unresolved but due again (GiveUpCheck
	// later), and only a settler that then still finds no outcome reports
	// it, so that an outcome stored by another request or isolate, which a
	// lagging read missed, raises no alert.
	ReadsLag time.Duration
}

// Placement is an order as the gateway receives it: the same for every
// call made for one key, the settler's included.
type Placement struct {
	// OrderID is the order's (OrderIDFor); the gateway dedupes by it.
	OrderID string
	// Client is the authenticated client's id, empty for the open Worker.
	Client     string
	Order      order.Order
	AcceptedAt time.Time
}

// placement is the order claim carries, as the gateway and the reports
// of an unresolved key name it.
func (c Claim) placement(key Key) Placement {
	return Placement{OrderID: c.OrderID, Client: key.Client, Order: c.Order, AcceptedAt: c.AcceptedAt}
}

// Gateway passes orders on to the order-management system (OMS).
type Gateway interface {
	// Place sends p to the OMS. It returns nil once the OMS has accepted
	// the order, a *Rejection when the OMS refuses it for good, and any
	// other error when the outcome is unknown: the OMS may or may not have
	// the order. After an unknown outcome Place is called again with the
	// same p, and the OMS must answer a repeated OrderID with its original
	// outcome.
	Place(ctx context.Context, p Placement) error
}

// StandIn is the reference's stand-in for the OMS: every order is
// accepted at once, and nothing leaves the Worker.
type StandIn struct{}

// Place implements Gateway.
func (StandIn) Place(context.Context, Placement) error { return nil }
