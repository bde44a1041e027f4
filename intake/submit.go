package intake

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/panichook"
	"github.com/edge-orders/edge-orders/order"
)

// Polling while a duplicate waits for the request that holds its key: the
// first look soon, since most requests take tens of milliseconds, then
// doubling up to a cap.
const (
	firstPoll = 20 * time.Millisecond
	maxPoll   = 320 * time.Millisecond
)

// Submit places the order in body under key, at most once per key.
//
// It returns the stored receipt if one exists for the same order;
// ErrKeyReused when the key's receipt or claim is for a different order;
// ErrInProgress while another request holds the key past the Wait; an error
// wrapping order.ErrInvalid for a body that is not a valid order (the key
// stays as it was); ErrRateLimited when Options.Limit refuses a new order; a
// *Rejection when the OMS refused the order, now or before; an *Unsettled
// when the gateway's answer is unknown (the settler then calls again by
// itself); and an error wrapping ErrStorageUnavailable when storage fails.
// On every error no receipt was handed out, and a retry under the same key
// places the order at most once.
//
// caller is the caller's address, which Options.Limit counts a new order
// against when key has no Client (the open Worker); for a client's key it
// is ignored, so a caller that authenticated its client need not look the
// address up and passes "". It is a parameter rather than a value in ctx
// so that every call site says whom a new order counts against, and
// rather than a field of Key because keys are stored and compared, while
// a retry of the same order may come from another address.
func (s *Service) Submit(ctx context.Context, key Key, body []byte, caller string) (Outcome, error) {
	sub := submission{key: key, body: body, caller: caller}
	// The body is parsed before anything is stored, so that the claim's one
	// write carries the order. An invalid body is refused at once with
	// the Store's Lifecycle.ValidateFirst or a gateway (whose claims must
	// never be overwritten by one for no order); otherwise it claims and
	// releases the key as the reference does, and its claim carries no
	// order.
	if err := sub.parse(); err != nil && (s.life.ValidateFirst || s.settles) {
		return Outcome{}, err
	}
	// The wait ends at the deadline or once the sleeps add up to Wait,
	// whichever comes first: in a Worker the clock only moves with I/O.
	// The clock is read once, and then once per poll: on js/wasm each
	// reading is a call into JavaScript.
	now := s.opts.Now()
	deadline := now.Add(s.opts.Wait)
	var slept time.Duration
	for delay := firstPoll; ; delay = min(2*delay, maxPoll) {
		out, err := s.attempt(ctx, &sub, now)
		if !errors.Is(err, ErrInProgress) {
			return out, err
		}
		if slept+delay > s.opts.Wait || !now.Add(delay).Before(deadline) || s.opts.Sleep(ctx, delay) != nil {
			return s.inProgress(ctx, &sub, err)
		}
		slept += delay
		now = s.opts.Now()
	}
}

// errInFlight is ErrInProgress because a request of this instance holds the
// key, which the Store has not been asked about.
var errInFlight = errs.Wrap(ErrInProgress, ErrInProgress.Error()+" in this instance")

// inProgress answers a submission whose wait ran out with err. If only
// this instance's in-flight set held the key, the Store is asked once: the
// request holding it may have been abandoned by the runtime after another
// request stored the outcome, and a 409 must not hide a stored receipt.
func (s *Service) inProgress(ctx context.Context, sub *submission, err error) (Outcome, error) {
	if !errors.Is(err, errInFlight) {
		return Outcome{}, err
	}
	mark := s.receipts.mark()
	rec, lerr := s.store.Lookup(ctx, sub.key)
	if lerr != nil || rec.State != Stored {
		return Outcome{}, ErrInProgress
	}
	s.cacheRead(sub.key.String(), rec, s.opts.Now(), mark)
	return s.replay(rec, sub)
}

// submission is one Submit call's request, parsed, and its fingerprint
// hashed, at most once however many times the request polls.
type submission struct {
	key      Key
	body     []byte
	caller   string // the caller's address, for the open Worker's limit
	order    order.Order
	fp       string // the order's fingerprint, once parsed
	parsed   bool
	parseErr error
}

// parse parses the body once, and returns the same error every time.
func (sub *submission) parse() error {
	if sub.parsed || sub.parseErr != nil {
		return sub.parseErr
	}
	o, err := order.Parse(sub.body)
	if err != nil {
		sub.parseErr = err
		return err
	}
	sub.order, sub.fp, sub.parsed = o, o.Fingerprint(), true
	return nil
}

// attempt runs the lifecycle once, starting at now; ErrInProgress means
// another request holds the key now.
func (s *Service) attempt(ctx context.Context, sub *submission, now time.Time) (Outcome, error) {
	cacheKey := sub.key.String()
	if rec, ok := s.receipts.get(cacheKey, now, true); ok {
		return s.replay(rec, sub)
	}
	// Only one request per key and instance goes on to the Store; the
	// others find its outcome in memory on their next poll. The check does
	// not block, so no request's goroutine is ever woken by another
	// request; an entry older than the claim lease, left by a request the
	// runtime abandoned, is taken over like an expired claim, and each
	// request removes only its own entry.
	entry, ok := s.inFlight.add(cacheKey, now, s.opts.PendingTTL)
	if !ok {
		return Outcome{}, errInFlight
	}
	defer s.inFlight.remove(cacheKey, entry)

	claim, err := s.newClaim(sub, now)
	if err != nil {
		return Outcome{}, err
	}
	// A new order asks the limit; the same order again, taken over from
	// memory, does not. During a migration (decided once per attempt) the
	// claim is tentative instead, and beforeSending asks the Fallback,
	// then the limit, then makes the claim firm (fallback.go).
	migrating := s.fallback()
	switch {
	case claim.Stage == StageSent:
	case migrating:
		claim.Stage = s.tentative()
	case s.opts.Limit != nil && sub.parsed:
		// A body that is no order places none: it spends no budget (over
		// KV's stand-in it claims and releases the key, and is told 422).
		claim.Admit = func(ctx context.Context) error { return s.admit(ctx, sub) }
	}
	mark := s.receipts.mark()
	claim, rec, err := s.begin(ctx, sub.key, claim)
	claim.Admit = nil
	switch {
	case errors.Is(err, ErrRateLimited) && s.life.Tentative && s.outlasted(now):
		// Over a Store that writes its claim before the limit is asked
		// (the ledger; KV asks first), the limit's answer, or the refused
		// claim's release, came once the claim may have lost the key (its
		// lease ended): the settler may have taken it over and placed the
		// order. A refusal is told only while nothing but the refused
		// claim could place it.
		return Outcome{}, storageUnavailable(errors.New("the rate limit answered after the claim's lease"))
	case errors.Is(err, ErrRateLimited) || errors.Is(err, ErrStorageUnavailable):
		return Outcome{}, err
	case err != nil:
		if claim.Placeable() && !migrating {
			// A claim whose write failed may have landed (a Begin that
			// wrote nothing says ErrStorageUnavailable, answered above),
			// and a Store may leave it open (KV does): a retry in this
			// isolate keeps its order id and time, whatever a stale read
			// says, for openedTTL after Begin's last write, which may have
			// waited out KV's write limit. Not during a migration, whose
			// Fallback may hold the key's order id.
			now = s.opts.Now()
			s.opened.put(cacheKey, claim, now)
		}
		if errors.Is(err, ErrGivenBack) {
			// The key it wrote back as its read found it may be due, that
			// read stale, and the due time's chain of messages ended since
			// (the give-up's check gave up). A message now settles a key
			// that is due, and ends at once on one that is not.
			s.schedule(ctx, sub.key, s.opts.Now())
		}
		return Outcome{}, storageUnavailable(err)
	case rec.Holds():
		// The claim is ours: from here on every way out commits or
		// releases it.
	case rec.State == Stored:
		s.cacheRead(cacheKey, rec, now, mark)
		return s.replay(rec, sub)
	default:
		// Held by another request, or open and left alone (Step).
		return Outcome{}, refused(rec, sub)
	}

	panichook.At(panichook.Claimed, cacheKey)
	if err := sub.parse(); err != nil {
		s.release(ctx, sub.key, claim)
		return Outcome{}, err
	}
	// The order's own: a claim that took over an Open key an older
	// version stored without its order carries none from it.
	claim.Fingerprint = sub.fp
	claim.Order = sub.order
	switch {
	case migrating:
		if out, done, err := s.beforeSending(ctx, sub, &claim, rec.Took); done {
			return out, err
		}
	case s.outlasted(now):
		// Begin, or the rate limit's answer within it, came back once the
		// claim's lease may have ended: the claim holds the key again, or
		// another does, before its order id reaches the gateway.
		if err := s.renew(ctx, sub.key, &claim); err != nil {
			return Outcome{}, err
		}
	}
	return s.place(ctx, sub.key, claim, byClient)
}

// begin has the Store's Begin decide what claim does to key, and returns
// the claim as it then holds the key: one that took an open key over
// carries the key's order id, time and order, which an earlier attempt
// may have sent to the gateway, and so are the key's for good
// (TakeOver). Every driver begins through it.
func (s *Service) begin(ctx context.Context, key Key, claim Claim) (Claim, Record, error) {
	rec, err := s.store.Begin(ctx, key, claim)
	if rec.Took == EventTakeOver {
		// Also when its write failed: what the key holds is the same
		// (Store.Begin), and what a client's attempt remembers (opened).
		claim = TakeOver(claim, rec)
	}
	return claim, rec, err
}

// claimFree is begin for a driver that acts only on a free key (a copy
// or an adoption from the Fallback): an open key its claim took over is
// given back as it was, and claimed says whether the claim holds key.
func (s *Service) claimFree(ctx context.Context, key Key, claim Claim) (rec Record, claimed bool, err error) {
	taken, rec, err := s.begin(ctx, key, claim)
	if err == nil && rec.Took == EventTakeOver {
		s.release(ctx, key, GiveBack(taken, rec))
	}
	return rec, err == nil && rec.Took == EventClaim, err
}

// placer is who calls the gateway: a client's request, the settler, or
// the settler for the last time, once SettleMaxAge has passed.
type placer uint8

const (
	byClient placer = iota
	bySettler
	bySettlerLastTime
)

// newClaim is a new claim for sub at now: a fresh token, the order's id
// (OrderIDFor) and the time, stored with it, so every gateway call for
// the key carries them. If this instance left the key open moments ago,
// the claim keeps that claim's time and attempts too, whatever a stale
// read of the Store says, another order under the key is ErrKeyReused,
// and a body that is not an order gets its parse error. Over a Store
// whose reads are exact (the ledger) the instance keeps no such memory
// (Service.opened).
func (s *Service) newClaim(sub *submission, now time.Time) (Claim, error) {
	claim := Claim{Token: s.opts.NewID(), AcceptedAt: now, Lease: s.opts.PendingTTL, KeepUntil: s.keepUntil(now)}
	if sub.parsed {
		claim.Fingerprint, claim.Order, claim.OrderID = sub.fp, sub.order, OrderIDFor(sub.key, sub.fp)
	} else {
		claim.OrderID = s.opts.NewID() // never sent: the body is not an order
	}
	if opened, ok := s.opened.get(sub.key.String(), now); ok {
		// The key as this instance left it, which a stale read may show
		// free: Step decides as it would over the Store's record. A body
		// that is not an order, or another order, leaves it alone (its
		// claim would be written over the open key, and its release
		// would delete it); the same order takes it over.
		rec := Record{State: Open, OrderID: opened.OrderID, AcceptedAt: opened.AcceptedAt, Fingerprint: opened.Fingerprint,
			Order: opened.Order, HasOrder: opened.Fingerprint != "", Attempts: opened.Attempts, GiveUp: opened.GiveUp,
			NextAttempt: opened.NextAttempt}
		move, err := Step(rec, claim, now)
		if err != nil {
			return Claim{}, err
		}
		if move.Event != EventTakeOver {
			return Claim{}, refused(rec, sub)
		}
		claim = move.Claim
	}
	return claim, nil
}

// refused is what a client's submission is told of a key Step left it
// without, as rec shows it (held, or open): a body that is not an order
// its parse error, another order ErrKeyReused, and the same order
// ErrInProgress, since another request holds the key.
func refused(rec Record, sub *submission) error {
	switch {
	case rec.State == Open && sub.parseErr != nil:
		return sub.parseErr
	case ForAnotherOrder(rec.Fingerprint, sub.fp):
		return ErrKeyReused
	}
	return ErrInProgress
}

// place passes the claimed order to the gateway and stores its outcome. An
// unknown outcome releases the claim with its order id kept, so a retry
// may come at once and calls the gateway again with the same order id, and
// the settler is due after a backoff (told to Options.Schedule unless the
// settler itself is placing). So does an answer that could not be stored:
// the order may be live at the OMS, and nobody but the settler may ask
// again.
//
// With a gateway, a client's answer does not wait for the commit: once
// the gateway has answered for good, the outcome is answered at once and
// committed after the response (Options.Defer). The claim holds everything
// the receipt is made of, so if the commit fails, or never runs, the key
// is due for the settler, and the OMS, which answers a repeated order id
// with its original outcome, has it store the same bytes. Until the commit
// lands, a retry in this instance replays from memory, one elsewhere waits
// for the claim as for any held key, and a lookup says in progress; once
// it has failed, a retry anywhere stores the same bytes (or the settler
// does). The stand-in, which accepts whatever it is asked again, does the
// same over a Store that settles itself; over KV it commits before it
// answers: it has no settler there, and its claim only a lease, so a
// receipt whose write and release both failed after the answer would be
// stored nowhere. So does a retry of a key the settler gave up on: its
// claim, left behind, leaves the key given up on, due for nothing.
func (s *Service) place(ctx context.Context, key Key, claim Claim, by placer) (Outcome, error) {
	receipt := order.Receipt{OrderID: claim.OrderID, Status: order.StatusAccepted, Order: claim.Order, AcceptedAt: claim.AcceptedAt}
	claim.Stage = StageSent
	claim.KeepUntil = later(claim.KeepUntil, s.keepUntil(claim.AcceptedAt))
	err := s.opts.Gateway.Place(ctx, claim.placement(key))
	var rejection *Rejection
	switch {
	case errors.As(err, &rejection):
		receipt.Status, receipt.Reason = order.StatusRejected, order.TruncateReason(rejection.Reason)
	case err != nil:
		return Outcome{}, s.leaveOpen(ctx, key, claim, err, by)
	}
	result := Result{Body: receipt.JSON(), Rejected: receipt.Status == order.StatusRejected,
		Fingerprint: claim.Fingerprint, TTL: s.opts.ResultTTL}
	if by == byClient && s.settledWithoutClient && claim.GiveUp != GivenUp {
		now := s.opts.Now()
		s.receipts.putUnstored(key.String(), storedAs(result, claim, now), now)
		s.opts.Defer(ctx, func(ctx context.Context) {
			defer func() {
				if p := recover(); p != nil {
					// Failed as a commit that returned an error fails
					// (keep): a retry here replays it no more.
					s.receipts.forget(key.String())
					panic(p)
				}
			}()
			s.keep(context.WithoutCancel(ctx), key, claim, result, by, true)
		})
	} else {
		if by == byClient {
			// The stand-in's answer is decided: a client gone meanwhile
			// does not abandon its commit (in production the cancelled
			// invocation ends, and with it the answer, which then never
			// named a receipt).
			ctx = context.WithoutCancel(ctx)
		}
		if err := s.keep(ctx, key, claim, result, by, false); err != nil {
			return Outcome{}, err
		}
	}
	if result.Rejected {
		return Outcome{}, &Rejection{Reason: receipt.Reason, OrderID: receipt.OrderID}
	}
	return Outcome{Receipt: result.Body, OrderID: receipt.OrderID}, nil
}

// keep commits the gateway's final answer, result, under claim, after the
// response or before it. If that fails the key is left open, due for the
// settler: the OMS answered, so even the settler's last call does not give
// up on it. A key given up on before, whose client's retry the OMS
// answered, awaits the give-up's check instead, which calls the OMS once
// more and stores its answer (given up on, it would be due for nothing,
// and a Store keeps a give-up no claim's release undoes: the ledger), as
// does a key that awaited the check already, whose check is due again
// once reads have caught up, as the settler's last call's is. Should the
// check's call fail too, the order is paged again, under the same
// dedup_key: one incident. An operator's resolve of a key given up on
// that could not be stored fails, and leaves the key as it was.
func (s *Service) keep(ctx context.Context, key Key, claim Claim, result Result, by placer, afterResponse bool) error {
	if err := s.commit(ctx, key, claim, result, s.opts.Now(), afterResponse); err != nil {
		if !errors.Is(err, ErrInProgress) {
			// A retry here no longer replays the answer from memory: it
			// finds the key open and stores the same bytes, as a retry
			// anywhere does, instead of leaving the receipt unstored.
			s.receipts.forget(key.String())
			if claim.GiveUp == AwaitingCheck || claim.GiveUp == GivenUp && by == byClient {
				claim.GiveUp = AwaitingCheck
				claim.NextAttempt = CheckDue(claim.Attempts+1, s.life.ReadsLag, s.opts.Now())
			}
			return &unstored{err: err, open: s.leaveOpen(ctx, key, claim, err, min(by, bySettler))}
		}
		return err
	}
	s.opened.forget(key.String())
	return nil
}

// unstored is an answer keep could not store: the storage failure, which
// is all errors.Is and As see (a client is told 503, not unknown), and
// the key it left open, whose due time the settler's next message needs
// (Settle).
type unstored struct {
	err  error
	open *Unsettled
}

func (u *unstored) Error() string { return u.err.Error() }
func (u *unstored) Unwrap() error { return u.err }

// leaveOpen releases claim after a gateway call that ended without an
// answer stored (cause): the key stays Open with its order id and one more
// attempt, due for the settler after the backoff (told to
// Options.Schedule the first time), and this instance remembers it.
func (s *Service) leaveOpen(ctx context.Context, key Key, claim Claim, cause error, by placer) *Unsettled {
	now := s.opts.Now()
	was := claim.GiveUp // awaiting the give-up's check, if the settler's last call
	claim, report := Unanswered(claim, by == bySettlerLastTime, s.settles, s.life.ReadsLag, s.opts.ResultTTL, now)
	if report && s.opts.ReportUnresolved != nil {
		if err := s.opts.ReportUnresolved(ctx, key, claim.placement(key), claim.Attempts); err != nil {
			// Not reported: the key stays as it came, due again soon for
			// the last call and the report.
			claim.GiveUp, report = was, false
			claim.NextAttempt = s.opts.Now().Add(ReportRetryDelay)
		}
	}
	// Remembered before the release, which awaits: a commit that failed
	// has just dropped the answer from the receipt cache (keep), and a
	// retry in this instance that ran in between, finding neither, could
	// read the key stale and mint another acceptedAt. And remembered again
	// once the release has landed, which may be a second or two later
	// (it waits out KV's write limit): a read may miss that write for
	// openedTTL after it.
	s.opened.put(key.String(), claim, now)
	s.release(ctx, key, claim)
	s.opened.put(key.String(), claim, s.opts.Now())
	if report && s.opts.OnUnresolved != nil {
		s.opts.OnUnresolved(ctx, key, claim.placement(key), claim.Attempts)
	}
	// A client's unknown outcome schedules the settler for the due time it
	// wrote; the settler's own attempts are scheduled by their caller. A
	// message that comes before its key is due was sent for an earlier due
	// time, and ends there (Settle), so one chain settles a key. So does a
	// retry of a key awaiting the give-up's check, which leaves the due
	// time it read (or, once that has passed, the backoff's): that read
	// may be stale, and the time's chain ended
	// (the check gave up since). When it was not, two messages come for
	// the time: the one that finds the other's claim is sent again for
	// its lease's end, and ends then, the key final or due at another
	// time. A chain whose message is lost is found by the Store's due
	// time.
	if by == byClient && claim.GiveUp != GivenUp {
		s.schedule(ctx, key, claim.NextAttempt)
	}
	return &Unsettled{OrderID: claim.OrderID, Attempts: claim.Attempts, NextAttempt: claim.NextAttempt,
		GiveUp: claim.GiveUp, Cause: cause.Error()}
}

// schedule tells Options.Schedule, if set, that key is due for the
// settler at at. A failure is reported, and the key waits for the sweep
// of overdue keys: the Store's record says when it is due
// (docs/operating.md, The settler).
func (s *Service) schedule(ctx context.Context, key Key, at time.Time) {
	if s.opts.Schedule == nil || at.IsZero() {
		return // no settler, or nothing is due
	}
	if err := s.opts.Schedule(context.WithoutCancel(ctx), key, at); err != nil {
		s.opts.OnReleaseError(key, errs.Prefix("scheduling the settler", err))
	}
}

// commit stores result under claim and caches it as stored no later than
// at (its expiry in the cache then comes no later than in storage), kept
// as every Store keeps it: result.TTL from then, and at least until the
// claim's KeepUntil. The cache's entry lasts from when the write returned:
// KV may serve a read stale for cacheTTL after the write lands, and a
// write may take seconds (it waits out KV's write limit). A purge of the
// key in this instance meanwhile (the commit after the response runs
// outside the in-flight set) may have erased it: then it is not cached.
// A claim the Store's Lifecycle releases after the
// commit is released after the response: at once when the response has
// gone (afterResponse), otherwise through Options.Defer.
// ErrInProgress means another request took the key over after claim's
// lease ran out: its outcome is the key's. Any other failure wraps
// ErrStorageUnavailable, and the caller releases the claim: without a
// stored outcome a retry places the order, under the same order id once
// it may have reached the gateway.
func (s *Service) commit(ctx context.Context, key Key, claim Claim, result Result, at time.Time, afterResponse bool) error {
	mark := s.receipts.mark()
	if err := s.store.Commit(ctx, key, claim, result); err != nil {
		if errors.Is(err, ErrLostClaim) {
			return ErrInProgress
		}
		return storageUnavailable(err)
	}
	s.receipts.putSince(key.String(), storedAs(result, claim, at), s.opts.Now(), mark)
	if s.life.ReleaseAfterCommit {
		claim.Stage = StageStored // the claim goes, beside its outcome
		if afterResponse {
			s.release(ctx, key, claim)
		} else {
			s.opts.Defer(ctx, func(ctx context.Context) { s.release(ctx, key, claim) })
		}
	}
	return nil
}

// storedAs is result as a Store holds it once committed at under claim:
// kept result.TTL from then, and at least until the claim's KeepUntil.
func storedAs(result Result, claim Claim, at time.Time) Record {
	return Record{State: Stored, Body: result.Body, Rejected: result.Rejected,
		Fingerprint: result.Fingerprint, Expires: later(at.Add(result.TTL), claim.KeepUntil)}
}

// replay answers with a stored outcome if the submission is the order it
// was stored for. Receipts stored without a fingerprint, as the TypeScript
// reference stores them, replay whatever the body.
func (s *Service) replay(rec Record, sub *submission) (Outcome, error) {
	if rec.Fingerprint != "" {
		if err := sub.parse(); err != nil {
			return Outcome{}, err
		}
		if ForAnotherOrder(rec.Fingerprint, sub.fp) {
			return Outcome{}, ErrKeyReused
		}
	}
	return replayed(rec)
}

// replayed is a stored outcome as an earlier request's: a receipt, or the
// rejection it records.
func replayed(rec Record) (Outcome, error) {
	id, _, reason := order.ReceiptFields(rec.Body)
	if rec.Rejected {
		return Outcome{}, &Rejection{Reason: reason, OrderID: id, Replayed: true, AcceptedAt: order.ReceiptAcceptedAt(rec.Body)}
	}
	return Outcome{Receipt: rec.Body, Replayed: true, OrderID: id}, nil
}

// keepUntil is how long a key whose order was accepted at acceptedAt keeps
// its order id: for as long as the settler may call the gateway, and a
// receipt's TTL after that. The stand-in's answer is never unknown: a key
// keeps it as long as its receipt would be kept when the answer precedes
// the commit, and for the claim's lease (zero) when it follows it.
func (s *Service) keepUntil(acceptedAt time.Time) time.Time {
	switch {
	case s.settles:
		return acceptedAt.Add(s.opts.SettleMaxAge + s.opts.ResultTTL)
	case s.settledWithoutClient:
		return acceptedAt.Add(s.opts.ResultTTL)
	}
	return time.Time{}
}

// release ends claim through ReleaseTwice, reporting a failure to
// OnReleaseError, and returns it for a caller whose answer depends on it.
// A claim that may have reached the gateway leaves the key Open, and due
// for the settler when the Store says (DueAt).
func (s *Service) release(ctx context.Context, key Key, claim Claim) error {
	err := ReleaseTwice(ctx, s.store, key, claim)
	if err != nil {
		s.opts.OnReleaseError(key, err)
	}
	return err
}

// ReleaseTwice calls store.Release, and once more if that fails: a claim
// left behind blocks its key for the whole lease, and Release is idempotent
// for its claim. Not when the error says no call may follow it
// (NoResend: a Durable Object that is overloaded, which another call
// only loads more). It ignores ctx's cancellation, so that a request
// abandoned midway still frees its key. Every Store and the Service
// release through it.
func ReleaseTwice(ctx context.Context, store interface {
	Release(context.Context, Key, Claim) error
}, key Key, claim Claim) error {
	ctx = context.WithoutCancel(ctx)
	err := store.Release(ctx, key, claim)
	if err != nil && !noResend(err) {
		err = store.Release(ctx, key, claim)
	}
	return err
}

// noResend reports whether err, or an error it wraps, says no call may
// follow it (a NoResend method that says so). It unwraps by hand, as
// errors.As would: TinyGo's errors.As into an interface matches any
// error, and the method call then traps.
func noResend(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case interface{ NoResend() bool }:
		return e.NoResend()
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(e.Unwrap(), noResend)
	}
	return noResend(errors.Unwrap(err))
}

// admit asks Options.Limit whether sub's client, or for the open Worker
// its caller's address, may place a new order.
func (s *Service) admit(ctx context.Context, sub *submission) error {
	who := sub.key.Client
	if who == "" {
		who = "addr:" + sub.caller
	}
	ok, err := s.opts.Limit(ctx, who)
	switch {
	case err != nil:
		return storageUnavailable(err)
	case !ok:
		return ErrRateLimited
	}
	return nil
}

// storageUnavailable is err as ErrStorageUnavailable, its text kept as the
// detail; an err that says so already (a Store's) stays as it is.
func storageUnavailable(err error) error {
	if errors.Is(err, ErrStorageUnavailable) {
		return err
	}
	return errs.Detail(ErrStorageUnavailable, err.Error())
}
