package ledger

import (
	"errors"
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/order"
)

// The ledger's RPC carries one JSON argument and returns one JSON result,
// both written and read here, in portable code that the Worker (Client)
// and the object (Export) share: so the two sides cannot disagree about
// an argument's position, and the format is tested natively. Times are
// Unix milliseconds, durations milliseconds, flags 0 or 1; a member that
// is zero is left out.

// errNotRecord is an object's answer the Worker cannot read.
var errNotRecord = errors.New("ledger: an answer that is not a record")

// Members of the ledger's RPC documents.
const (
	mClient      = "client"
	mID          = "id"
	mToken       = "token"
	mFingerprint = "fingerprint"
	mSymbol      = "symbol"
	mSide        = "side"
	mQuantity    = "quantity"
	mOrderID     = "orderId"
	mAcceptedAt  = "acceptedAt"
	mLease       = "lease"
	mKeepUntil   = "keepUntil"
	mSettling    = "settling"
	mResolving   = "resolving"
	mAdopting    = "adopting"
	mSent        = "sent"
	mAttempts    = "attempts"
	mNextAttempt = "nextAttempt"
	mUnresolved  = "unresolved"
	mTentative   = "tentative"
	mReceipt     = "receipt"
	mRejected    = "rejected"
	mTTL         = "ttl"
	mState       = "state"
	mExpires     = "expires"
	mCommitted   = "committed"
	mLost        = "lost"
	mPhase       = "phase"
)

// wireNames is every member a document may have: a reader keeps them all.
var wireNames = []string{mClient, mID, mToken, mFingerprint, mSymbol, mSide, mQuantity, mOrderID, mAcceptedAt,
	mLease, mKeepUntil, mSettling, mResolving, mAdopting, mSent, mAttempts, mNextAttempt, mUnresolved, mTentative, mReceipt, mRejected, mTTL,
	mState, mExpires, mCommitted, mLost, mPhase}

// doc writes one JSON object, leaving out members that are zero.
type doc struct{ b []byte }

func (d *doc) member(name string) {
	if d.b == nil {
		d.b = append(d.b, '{')
	} else {
		d.b = append(d.b, ',')
	}
	d.b = append(jsjson.AppendString(d.b, name), ':')
}

func (d *doc) str(name, v string) {
	if v != "" {
		d.member(name)
		d.b = jsjson.AppendString(d.b, v)
	}
}

func (d *doc) num(name string, v float64) {
	if v != 0 {
		d.member(name)
		d.b = jsjson.AppendNumber(d.b, v)
	}
}

func (d *doc) int(name string, v int64) {
	if v != 0 {
		d.member(name)
		d.b = strconv.AppendInt(d.b, v, 10)
	}
}

func (d *doc) time(name string, t time.Time) {
	if !t.IsZero() {
		d.int(name, t.UnixMilli())
	}
}

func (d *doc) flag(name string, v bool) {
	if v {
		d.int(name, 1)
	}
}

func (d *doc) key(k intake.Key) {
	d.str(mClient, k.Client)
	d.member(mID)
	d.b = jsjson.AppendString(d.b, k.ID)
}

func (d *doc) order(o order.Order, has bool) {
	if has {
		d.str(mSymbol, o.Symbol)
		d.str(mSide, string(o.Side))
		d.num(mQuantity, o.Quantity)
	}
}

func (d *doc) bytes() []byte {
	if d.b == nil {
		return []byte("{}")
	}
	return append(d.b, '}')
}

// reader reads a document written by doc.
type reader struct{ o jsjson.Object }

func read(b []byte) (reader, error) {
	o, err := jsjson.Parse(b, wireNames...)
	if err != nil || !o.IsObject() {
		return reader{}, errNotRecord
	}
	return reader{o}, nil
}

func (r reader) str(name string) string { return r.o.Get(name).Str }

func (r reader) num(name string) float64 {
	if v := r.o.Get(name); v.Kind == jsjson.Number {
		return v.Num
	}
	return 0
}

func (r reader) time(name string) time.Time {
	if n := int64(r.num(name)); n != 0 {
		return time.UnixMilli(n)
	}
	return time.Time{}
}

func (r reader) millis(name string) time.Duration {
	return time.Duration(r.num(name)) * time.Millisecond
}

func (r reader) flag(name string) bool { return r.num(name) != 0 }

// giveUp is the give-up doc's members say, as the stores write it
// (intake.GiveUpOf).
func (r reader) giveUp() intake.GiveUp {
	return intake.GiveUpOf(r.flag(mUnresolved), r.time(mNextAttempt))
}

func (r reader) key() intake.Key { return intake.Key{Client: r.str(mClient), ID: r.str(mID)} }

func (r reader) order() (order.Order, bool) {
	o := order.Order{Symbol: r.str(mSymbol), Side: order.Side(r.str(mSide)), Quantity: r.num(mQuantity)}
	if o.Symbol == "" || (o.Side != order.Buy && o.Side != order.Sell) || o.Quantity <= 0 {
		return order.Order{}, false
	}
	return o, true
}

// giveUp writes g with due time next as the stores do
// (intake.WrittenGiveUp): the unresolved flag, and the due time.
func (d *doc) giveUp(g intake.GiveUp, next time.Time) {
	unresolved, due := intake.WrittenGiveUp(g, next)
	d.time(mNextAttempt, due)
	d.flag(mUnresolved, unresolved)
}

// encodeClaim is a claim, or a release, of key: the claim's own members.
func encodeClaim(key intake.Key, c intake.Claim) []byte {
	var d doc
	d.key(key)
	d.str(mToken, c.Token)
	d.str(mFingerprint, c.Fingerprint)
	d.order(c.Order, c.Fingerprint != "")
	d.str(mOrderID, c.OrderID)
	d.time(mAcceptedAt, c.AcceptedAt)
	d.int(mLease, c.Lease.Milliseconds())
	d.time(mKeepUntil, c.KeepUntil)
	// Who claims, as flags an object of the version before reads too:
	// an operator's claim is a settler's that also resolves.
	d.flag(mSettling, c.By == intake.RoleSettler || c.By == intake.RoleResolver)
	d.flag(mResolving, c.By == intake.RoleResolver)
	d.flag(mAdopting, c.By == intake.RoleAdopter)
	// How far it has come, as the two flags an object of the version
	// before reads: a release beside a stored outcome needs neither, since
	// the object's commit replaced the claim.
	d.flag(mSent, c.Stage == intake.StageSent)
	d.int(mAttempts, int64(c.Attempts))
	d.giveUp(c.GiveUp, c.NextAttempt)
	d.flag(mTentative, c.Stage == intake.StageTentative)
	return d.bytes()
}

// claimedBy is who a claim's document says claims: none of the flags is a
// client.
func (r reader) claimedBy() intake.Role {
	switch {
	case r.flag(mResolving):
		return intake.RoleResolver
	case r.flag(mSettling):
		return intake.RoleSettler
	case r.flag(mAdopting):
		return intake.RoleAdopter
	}
	return 0
}

// stage is how far a claim's document says it has come.
// Sent is read first: the version before released an adopted key with
// both flags set, and its object left the key open, as sent.
func (r reader) stage() intake.Stage {
	switch {
	case r.flag(mSent):
		return intake.StageSent
	case r.flag(mTentative):
		return intake.StageTentative
	}
	return intake.StageFirm
}

func decodeClaim(b []byte) (intake.Key, intake.Claim, error) {
	r, err := read(b)
	if err != nil {
		return intake.Key{}, intake.Claim{}, err
	}
	c := intake.Claim{Token: r.str(mToken), Fingerprint: r.str(mFingerprint), OrderID: r.str(mOrderID),
		AcceptedAt: r.time(mAcceptedAt), Lease: r.millis(mLease), KeepUntil: r.time(mKeepUntil),
		By: r.claimedBy(), Stage: r.stage(), Attempts: int(r.num(mAttempts)),
		NextAttempt: r.time(mNextAttempt), GiveUp: r.giveUp()}
	if o, ok := r.order(); ok && c.Fingerprint != "" {
		c.Order = o
	}
	return r.key(), c, nil
}

// encodeCommit is a commit of result under key by c: its token, and how
// long it keeps the key, which the outcome is kept as long as
// (Object.Commit).
func encodeCommit(key intake.Key, c intake.Claim, res intake.Result) []byte {
	var d doc
	d.key(key)
	d.str(mToken, c.Token)
	d.time(mKeepUntil, c.KeepUntil)
	d.member(mReceipt)
	d.b = jsjson.AppendString(d.b, string(res.Body))
	d.flag(mRejected, res.Rejected)
	d.str(mFingerprint, res.Fingerprint)
	d.int(mTTL, res.TTL.Milliseconds())
	return d.bytes()
}

func decodeCommit(b []byte) (intake.Key, intake.Claim, intake.Result, error) {
	r, err := read(b)
	if err != nil {
		return intake.Key{}, intake.Claim{}, intake.Result{}, err
	}
	res := intake.Result{Body: []byte(r.str(mReceipt)), Rejected: r.flag(mRejected), Fingerprint: r.str(mFingerprint), TTL: r.millis(mTTL)}
	return r.key(), intake.Claim{Token: r.str(mToken), KeepUntil: r.time(mKeepUntil)}, res, nil
}

// encodeKey is a lookup of key.
func encodeKey(key intake.Key) []byte {
	var d doc
	d.key(key)
	return d.bytes()
}

func decodeKey(b []byte) (intake.Key, error) {
	r, err := read(b)
	return r.key(), err
}

// encodePurge is a purge's argument: the key, and the call's token, the
// same on its retry.
// encodePurge is a purge call's argument: the key, the call's token, and
// the order id whose outcome alone it purges ("" for any).
func encodePurge(key intake.Key, token, orderID string) []byte {
	var d doc
	d.key(key)
	d.str(mToken, token)
	d.str(mOrderID, orderID)
	return d.bytes()
}

func decodePurge(b []byte) (key intake.Key, token, orderID string, err error) {
	r, err := read(b)
	return r.key(), r.str(mToken), r.str(mOrderID), err
}

// encodeCommitted is Commit's answer: committed, or lost to another claim.
func encodeCommitted(err error) []byte {
	if err != nil {
		return []byte(`{"lost":1}`)
	}
	return []byte(`{"committed":1}`)
}

// decodeCommitted trusts only an explicit committed: a Worker bound to
// another script's class (ledger-front) may meet another version of it,
// and no receipt may be handed out on an answer it cannot read.
func decodeCommitted(b []byte) error {
	r, err := read(b)
	switch {
	case err == nil && r.flag(mLost):
		return intake.ErrLostClaim
	case err != nil || !r.flag(mCommitted):
		return errors.New("ledger: commit: an answer that says neither committed nor lost")
	}
	return nil
}

// A record's state as the wire numbers it, fixed since the first
// version: a Worker and an object of different versions meet in a
// rolling deploy. A claim Begin took goes as wireClaimed, with the key's
// order id for a takeover.
const (
	wireAbsent  = 0
	wireHeld    = 1
	wireStored  = 2
	wireClaimed = 3
	wireOpen    = 4
)

// wireStates reads the wire's numbers, and stateWires writes them, but
// for a claim Begin took (wireState).
var (
	wireStates = [...]intake.State{wireAbsent: intake.Absent, wireHeld: intake.Held, wireStored: intake.Stored,
		wireClaimed: intake.Held, wireOpen: intake.Open}
	stateWires = [...]int64{intake.Absent: wireAbsent, intake.Held: wireHeld, intake.Stored: wireStored, intake.Open: wireOpen}
)

// wireState is rec's state as the wire numbers it.
func wireState(rec intake.Record) int64 {
	if rec.Holds() {
		return wireClaimed
	}
	return stateWires[rec.State]
}

// encodeRecord is a record as the object answers it.
func encodeRecord(rec intake.Record) []byte {
	var d doc
	d.member(mState)
	d.b = strconv.AppendInt(d.b, wireState(rec), 10)
	d.str(mFingerprint, rec.Fingerprint)
	if rec.Body != nil {
		d.member(mReceipt)
		d.b = jsjson.AppendString(d.b, string(rec.Body))
		d.flag(mRejected, rec.Rejected)
	}
	d.time(mExpires, rec.Expires)
	d.str(mOrderID, rec.OrderID)
	d.time(mAcceptedAt, rec.AcceptedAt)
	d.order(rec.Order, rec.HasOrder)
	d.int(mAttempts, int64(rec.Attempts))
	d.giveUp(rec.GiveUp, rec.NextAttempt)
	if rec.WrittenPhase != intake.PhaseAbsent {
		d.str(mPhase, rec.WrittenPhase.String())
	}
	return d.bytes()
}

// decodeRecord refuses an answer it cannot read, rather than guess: a
// Stored record must carry its receipt, an Open one its order id.
func decodeRecord(b []byte) (intake.Record, error) {
	r, err := read(b)
	state := r.o.Get(mState)
	if err != nil || state.Kind != jsjson.Number || state.Num != float64(int(state.Num)) ||
		state.Num < 0 || state.Num >= float64(len(wireStates)) {
		return intake.Record{}, errNotRecord
	}
	wire := int(state.Num)
	rec := intake.Record{State: wireStates[wire], Fingerprint: r.str(mFingerprint),
		Expires: r.time(mExpires), OrderID: r.str(mOrderID), AcceptedAt: r.time(mAcceptedAt),
		Attempts: int(r.num(mAttempts)), NextAttempt: r.time(mNextAttempt), GiveUp: r.giveUp()}
	rec.WrittenPhase, _ = intake.ParsePhase(r.str(mPhase))
	if v := r.o.Get(mReceipt); v.Kind == jsjson.String {
		rec.Body, rec.Rejected = []byte(v.Str), r.flag(mRejected)
	}
	rec.Order, rec.HasOrder = r.order()
	switch {
	case rec.State == intake.Stored && rec.Body == nil, rec.State == intake.Open && rec.OrderID == "":
		return intake.Record{}, errNotRecord
	case wire == wireClaimed && rec.OrderID != "":
		rec.Took = intake.EventTakeOver
	case wire == wireClaimed:
		rec.Took = intake.EventClaim
	}
	return rec, nil
}
