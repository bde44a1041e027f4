package intake

import (
	"cmp"
	"context"
	"errors"
	"time"
)

// Fallback is a read-only source of receipts stored before a migration.
type Fallback interface {
	Lookup(ctx context.Context, key Key) (Record, error)
}

// fallback reports whether the Fallback is to be consulted now.
func (s *Service) fallback() bool {
	return s.opts.Fallback != nil && s.opts.Now().Before(s.opts.FallbackUntil)
}

// beforeSending is a migration's steps between a client's claim and its
// gateway call (done when they answered the submission): the key is
// looked up in the Fallback (adopt); a new order (NewOrder: the claim
// that took the key by took, neither replayed from the Fallback nor
// taken over) asks the limit, since a replay must not count; and the
// claim is renewed (renew), firm: until the Fallback has
// been asked, the Store's own order id is not the key's, and a request
// that died would have left it behind for the settler; and the reads of
// KV may have outlasted the claim's lease.
func (s *Service) beforeSending(ctx context.Context, sub *submission, claim *Claim, took Event) (out Outcome, done bool, err error) {
	if out, done, err := s.adopt(ctx, sub, claim); done {
		return out, true, err
	}
	if s.opts.Limit != nil && NewOrder(took, *claim) {
		if err := s.admit(ctx, sub); err != nil {
			s.release(ctx, sub.key, *claim)
			return Outcome{}, true, err
		}
	}
	if err := s.renew(ctx, sub.key, claim); err != nil {
		return Outcome{}, true, err
	}
	return Outcome{}, false, nil
}

// tentative is the stage of a claim whose order id may not be the key's,
// since a migration's Fallback may hold another: StageTentative over a
// Store that keeps such claims apart (Lifecycle.Tentative), StageFirm over
// one that does not.
func (s *Service) tentative() Stage {
	if s.life.Tentative {
		return StageTentative
	}
	return StageFirm
}

// renew has the Store hold key for claim again, for a new lease, firm (a
// tentative claim becomes the key's), after reads of the Fallback, which
// may have outlasted the last (the runtime paused the isolate, or a read
// hung): Begin again with its own token, before the claim's order id may
// reach the gateway. If the lease ended and the key was left open
// meanwhile, the claim takes it over, with its order id; if another
// request holds it, ErrInProgress. If Begin fails the claim is released,
// and a claim left tentative frees its key when its lease ends. Only a
// Store that tells its claims by token (Lifecycle.Tentative) renews one:
// the others, whose claims the Service never makes tentative, hold the
// key as they did.
func (s *Service) renew(ctx context.Context, key Key, claim *Claim) error {
	if !s.life.Tentative {
		return nil
	}
	if claim.Stage == StageTentative {
		claim.Stage = StageFirm
	}
	// If the lease ran out, and another request left the key open
	// meanwhile, the claim takes it over (begin): its order id may be at
	// the OMS, and is the key's.
	taken, rec, err := s.begin(ctx, key, *claim)
	switch {
	case err != nil:
		s.release(ctx, key, *claim)
		return storageUnavailable(err)
	case !rec.Holds():
		return ErrInProgress // the lease ran out and another request holds the key
	}
	*claim = taken
	return nil
}

// adopt looks the claimed key up in the Fallback (done when it answered
// the submission). A receipt found there is committed under claim and
// replayed; a claim there, a request still in flight in KV mode, is a
// request in progress; an order id kept there for the same order is the
// claim's from now on; nothing lets the new order go ahead.
//
// An answer may come back once the claim's lease has ended, and the key
// was free meanwhile: nothing here acts on it unless the claim still
// holds the key. A commit of a tentative claim whose lease ended is
// refused; adoptOrderID goes ahead only once its claim took over the key
// it released open; and renew holds the key again before any call.
func (s *Service) adopt(ctx context.Context, sub *submission, claim *Claim) (out Outcome, done bool, err error) {
	rec, err := s.opts.Fallback.Lookup(ctx, sub.key)
	switch {
	case err != nil:
		s.release(ctx, sub.key, *claim)
		return Outcome{}, true, storageUnavailable(err)
	case rec.State == Held:
		s.release(ctx, sub.key, *claim)
		return Outcome{}, true, ErrInProgress
	case rec.State == Open && claim.Stage != StageSent:
		// Step decides, as over the Store's own record: the same order
		// takes KV's open key over, another order is refused.
		move, err := Step(rec, *claim, s.opts.Now())
		if err != nil || move.Event != EventTakeOver {
			s.release(ctx, sub.key, *claim)
			return Outcome{}, true, cmp.Or(err, refused(rec, sub))
		}
		return s.adoptOrderID(ctx, sub, claim, rec)
	case rec.State != Stored:
		return Outcome{}, false, nil
	}
	if _, err := s.commitFallbacks(ctx, sub.key, *claim, rec, rec.Fingerprint); err != nil {
		return Outcome{}, true, err
	}
	out, err = s.replay(rec, sub)
	return out, true, err
}

// commitFallbacks commits old, an outcome the Fallback stores for key,
// under claim as the key's outcome for the order whose fingerprint is fp,
// and returns it as the Store now holds it. A failure releases the claim,
// unless another request took the key over (ErrInProgress): its outcome
// is the key's then.
func (s *Service) commitFallbacks(ctx context.Context, key Key, claim Claim, old Record, fp string) (Record, error) {
	result := Result{Body: old.Body, Rejected: old.Rejected, Fingerprint: fp, TTL: s.opts.ResultTTL}
	now := s.opts.Now()
	err := s.commit(ctx, key, claim, result, now, false)
	if err != nil && !errors.Is(err, ErrInProgress) {
		s.release(ctx, key, claim)
	}
	return storedAs(result, claim, now), err
}

// adoptOrderID makes the order id the Fallback kept for the key (open) the
// Store's own before any gateway call: the claim is released open with it,
// and claimed again, which takes it over. Were it carried only in memory,
// a request that died after the gateway call would leave the Store's own,
// different order id for the next one.
func (s *Service) adoptOrderID(ctx context.Context, sub *submission, claim *Claim, open Record) (Outcome, bool, error) {
	adopted := TakeOver(*claim, Record{OrderID: open.OrderID, AcceptedAt: open.AcceptedAt, Attempts: open.Attempts})
	adopted.KeepUntil = later(claim.KeepUntil, s.keepUntil(open.AcceptedAt))
	if err := ReleaseTwice(ctx, s.store, sub.key, adopted); err != nil {
		// The claim may still hold the key, with the Store's own order id,
		// which never reached the gateway: release it as it was.
		s.release(ctx, sub.key, *claim)
		return Outcome{}, true, storageUnavailable(err)
	}
	// Tentative again until it has taken the key over: the key may be
	// free, if the claim's lease ended while it read KV and its release
	// changed nothing, and what KV showed may be stale by then.
	adopted.Token, adopted.Stage = s.opts.NewID(), s.tentative()
	taken, rec, err := s.begin(ctx, sub.key, adopted)
	switch {
	case err != nil:
		return Outcome{}, true, storageUnavailable(err)
	case rec.Took == EventTakeOver && rec.OrderID != adopted.OrderID:
		// Another request took the key over in between and left it open
		// with another order id: the key is given back as it was, and the
		// retry reads KV again.
		s.release(ctx, sub.key, GiveBack(taken, rec))
		return Outcome{}, true, ErrInProgress
	case rec.Took != EventTakeOver:
		// The key was free, or another request holds it: a claim that
		// holds the key goes.
		if rec.Holds() {
			s.release(ctx, sub.key, taken)
		}
		return Outcome{}, true, ErrInProgress
	}
	*claim = taken
	return Outcome{}, false, nil
}

// Adopt makes key's order, left open in the Fallback by the Worker before
// a migration (KV mode: its outcome unknown, its client perhaps never to
// return), the Store's: claimed with the Fallback's order id, time and
// order, and released open, due at once, for the Store's own settler (the
// ledger's alarm). It returns whether it adopted the key; a key the Store
// has already, or that the Fallback holds no open order for, is left
// alone. The Fallback is read, and written only to delete a claim left
// beside an outcome it stores: a key it keeps open is adopted once, and
// found in the Store from then on.
//
// It returns an error wrapping ErrStorageUnavailable when storage fails.
func (s *Service) Adopt(ctx context.Context, key Key) (bool, error) {
	if !s.fallback() {
		return false, nil
	}
	return s.adoptOpen(ctx, key, s.opts.Now())
}

// dropClaimBesideOutcome deletes the Fallback's claim on key, whose
// outcome the Fallback stores: a claim left beside it (its delete failed,
// or a settler's stale read wrote it again after the commit) may outlive
// the outcome, and would open the key again once the outcome expires, for
// the next sweep to adopt and settle a second time. KV mode's settler
// deletes such a claim (kv.Store.Begin); during a migration the adoption
// sweep stands in for it. A failed delete is left to the next sweep.
func (s *Service) dropClaimBesideOutcome(ctx context.Context, key Key) {
	if old, ok := s.opts.Fallback.(FallbackAdmin); ok {
		_ = old.DropClaim(ctx, key)
	}
}

// isAdoptable reports whether old, the Fallback's record of a key, is one
// an adoption takes: open, with its order.
func isAdoptable(old Record) bool {
	return old.State == Open && old.HasOrder && old.Fingerprint != ""
}

// outlasted reports whether a claim made at claimedAt may have lost its
// key by now: its lease may have ended (DueSlack allows for the clocks of
// the isolate and the Store). What the Fallback told it since is then not
// to be acted on: a purge, or another request, may have changed the key
// while nothing held it.
func (s *Service) outlasted(claimedAt time.Time) bool {
	return !s.opts.Now().Before(claimedAt.Add(s.opts.PendingTTL - DueSlack))
}

// adoptOpen adopts key as Adopt does, leaving it open in the Store due at
// due.
func (s *Service) adoptOpen(ctx context.Context, key Key, due time.Time) (bool, error) {
	old, err := s.opts.Fallback.Lookup(ctx, key)
	switch {
	case err != nil:
		return false, storageUnavailable(err)
	case old.State == Stored:
		s.dropClaimBesideOutcome(ctx, key)
		return false, nil
	case !isAdoptable(old):
		return false, nil
	}
	// A key the Store has seen is its own, adopted or retried: the sweep,
	// which lists it again until KV's claim expires, must not claim it
	// each time, holding it from its clients and its settler meanwhile.
	if cur, err := s.store.Lookup(ctx, key); err != nil {
		return false, storageUnavailable(err)
	} else if cur.State != Absent {
		return false, nil
	}
	// Kept a RESULT_TTL from now at least: KV mode keeps a key it gave up
	// on that long past its give-up, beyond its acceptance's KeepUntil,
	// which may have passed; a row kept only until then would expire at
	// once and strand the key in KV. And a RESULT_TTL past KV's due time
	// (the call or the give-up's check it awaits), as KV keeps it
	// (Unanswered): a row that expired first would leave KV's claim for
	// the next sweep to adopt, and settle or report, once more.
	//
	// Tentative until it is released open: a claim left behind (its
	// release failed, or its invocation died) frees the key at its
	// lease's end instead of leaving it due for the settler, which would
	// place an order a purge meanwhile erased. KV keeps its own claim, and
	// the next sweep adopts the key again.
	claimedAt := s.opts.Now()
	claim := Claim{Token: s.opts.NewID(), Fingerprint: old.Fingerprint, Order: old.Order, OrderID: old.OrderID,
		AcceptedAt: old.AcceptedAt, Lease: s.opts.PendingTTL, Stage: s.tentative(), By: RoleAdopter,
		KeepUntil: later(later(s.keepUntil(old.AcceptedAt), claimedAt.Add(s.opts.ResultTTL)), old.NextAttempt.Add(s.opts.ResultTTL))}
	// A key the Store has open already (adopted before, or by a client's
	// retry) is its settler's, as it was (claimFree gives it back).
	if _, claimed, err := s.claimFree(ctx, key, claim); err != nil {
		return false, storageUnavailable(err)
	} else if !claimed {
		return false, nil
	}
	// Read again, now that the claim holds the key: an operator's purge
	// between the first read and the claim deleted the Fallback's claim
	// and the Store's outcome, and the key is free, not to be adopted.
	// A purge from now on finds the claim and waits, as long as the claim
	// holds the key: a read answered once it may have freed it (outlasted)
	// proves nothing, and the next sweep adopts the key if KV still holds
	// it open.
	again, err := s.opts.Fallback.Lookup(ctx, key)
	if err != nil || again.State != Open || again.OrderID != old.OrderID || s.outlasted(claimedAt) {
		s.release(ctx, key, claim)
		if err != nil {
			return false, storageUnavailable(err)
		}
		return false, nil
	}
	// Not Unresolved, even if the old Worker gave up on it: the Store's
	// settler asks once more and reports it itself. A release that fails
	// adopted nothing: the claim, tentative, frees the key at its lease's
	// end, and the next sweep adopts it.
	claim.Stage, claim.Attempts, claim.NextAttempt = StageSent, old.Attempts, due
	if err := s.release(ctx, key, claim); err != nil {
		return false, storageUnavailable(err)
	}
	// A release that answered once the claim's lease may have ended may
	// have found the key freed, and changed nothing: not adopted, as far
	// as anyone can tell, and the next sweep adopts it if KV still holds
	// it open.
	return !s.outlasted(claimedAt), nil
}
