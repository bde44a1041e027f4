package intake

import (
	"context"
	"errors"
	"time"
)

// ReportRetryDelay is how long after a report of an unresolved key failed
// (Options.ReportUnresolved) the settler tries the key again: soon, since
// someone is not being paged, but not in a loop against a pager that is
// down.
const ReportRetryDelay = 15 * time.Second

// Settlement is what one Settle did.
type Settlement struct {
	// Final is true when the key needs no more settling: its outcome is
	// stored (now or before), it is gone, or it is Unresolved.
	Final bool
	// Unresolved is true when the settler gave up on the key, now or before.
	Unresolved bool
	// NextAttempt is when to call Settle again, when not Final: after the
	// backoff, or once the claim that holds the key now ends.
	NextAttempt time.Time
	// Attempts is how many gateway calls for the key ended without an
	// answer stored so far.
	Attempts int
	// Result says what this call did.
	Result SettleResult
	// AcceptedAt is when the key's order was accepted (its first claim's
	// time), once this call took the key: the settling began a gateway
	// call after it.
	AcceptedAt time.Time
}

// SettleResult is what one Settle did with its key.
type SettleResult uint8

const (
	// SettleIdle: there was nothing to settle: the key's outcome was
	// final or unresolved already, it is gone, or it holds no order.
	SettleIdle SettleResult = iota
	// SettleBusy: another request, or another settler, holds the key: its
	// outcome is theirs.
	SettleBusy
	// SettleAccepted: the gateway accepted the order, and the receipt is
	// stored.
	SettleAccepted
	// SettleRejected: the gateway rejected the order, and the rejection
	// is stored.
	SettleRejected
	// SettleUnknown: the gateway's answer is unknown again; the key is due
	// at NextAttempt.
	SettleUnknown
	// SettleGaveUp: the last call's answer was unknown too: the key is
	// Unresolved from now on.
	SettleGaveUp
)

// Settle calls the gateway once more for key's order if its outcome is
// unknown, with no client involved: the same order id and order that every
// earlier call carried, so the call is the status query (the gateway
// answers a repeated order id with its original outcome). A final answer
// is stored exactly as a client's retry would store it. The settler takes
// the key's claim like any request, so it never calls the gateway for a key
// at the same time as a client's retry: everywhere over the ledger, within
// the instance over KV.
//
// Once the order is SettleMaxAge old, the gateway is called one last time;
// if its answer is still unknown, the key is left Unresolved, kept for
// another ResultTTL and reported to OnUnresolved: the settler stops, and a
// client's retry still calls the gateway with the same order id. Over a
// Store whose reads lag (Lifecycle.ReadsLag), the report waits for one
// more attempt, due once reads have caught up, that still finds no
// outcome and whose call fails too.
//
// A key that is not due yet (its NextAttempt is later) is another chain's:
// the Store says Open, and the call is Final for its caller, so that one
// chain of messages settles a key.
//
// It returns an error wrapping ErrStorageUnavailable when storage fails;
// the key is then as it was, and Settle may be called again, unless
// NextAttempt is set: the gateway answered, the answer could not be
// stored, and the key is open again, due at NextAttempt.
func (s *Service) Settle(ctx context.Context, key Key) (st Settlement, err error) {
	if s.opts.ObserveSettle != nil {
		var done func(Settlement, error)
		ctx, done = s.opts.ObserveSettle(ctx, key)
		defer func() {
			if p := recover(); p != nil {
				// Observed as the failure it is, then passed on to the
				// caller that recovers it (the key stays due).
				done(Settlement{}, ErrSettlePanicked)
				panic(p)
			}
			done(st, err)
		}()
	}
	return s.settle(ctx, key)
}

// ErrSettlePanicked is what Options.ObserveSettle is told of a settle
// attempt that panicked; the panic itself goes on to Settle's caller.
var ErrSettlePanicked = errors.New("intake: the settle attempt panicked")

// settle is Settle.
func (s *Service) settle(ctx context.Context, key Key) (Settlement, error) {
	now := s.opts.Now()
	cacheKey := key.String()
	entry, ok := s.inFlight.add(cacheKey, now, s.opts.PendingTTL)
	if !ok {
		// A request of this instance is on it; if it ends unknown again, it
		// is due for the settler anyway.
		return Settlement{NextAttempt: now.Add(FirstSettleDelay), Result: SettleBusy}, nil
	}
	defer s.inFlight.remove(cacheKey, entry)
	if _, ok := s.receipts.get(cacheKey, now, false); ok {
		// This instance stored or read the outcome within the cache's
		// minute, in which a read of KV may still miss it.
		return Settlement{Final: true}, nil
	}

	// The claim keeps the key at least as long as any earlier claim could
	// have (the key was accepted before now): a Store that cannot tell how
	// long the key was kept (KV) must not write it back shorter.
	claim := Claim{Token: s.opts.NewID(), Lease: s.opts.PendingTTL, By: RoleSettler, KeepUntil: s.keepUntil(now)}
	claim, rec, err := s.begin(ctx, key, claim)
	switch {
	case err != nil:
		return Settlement{}, storageUnavailable(err)
	case rec.Took == EventTakeOver:
		// The settler's claim holds the open key: it settles it.
	case rec.State == Held:
		return Settlement{NextAttempt: DueAfterHolder(rec, s.opts.PendingTTL, now), Attempts: rec.Attempts, Result: SettleBusy}, nil
	case rec.State == Open:
		// Not due (Step), or kept without its order by an older version:
		// another chain's, or its client's retry's.
		return Settlement{Final: true, Unresolved: rec.GiveUp.Unresolved(), Attempts: rec.Attempts}, nil
	default:
		return Settlement{Final: true}, nil
	}
	// Past SettleMaxAge the gateway is called one last time before the
	// settler gives up: the OMS answers a repeated order id with its first
	// outcome, so an order it has is never reported unresolved. A call
	// that fails proves nothing about what another request stored: over a
	// Store whose reads lag, the give-up is checked again once they have
	// caught up (leaveOpen), and that check calls once more.
	by := bySettler
	if !now.Before(claim.AcceptedAt.Add(s.opts.SettleMaxAge)) {
		by = bySettlerLastTime
		switch st, done, err := s.settleFromFallback(ctx, key, &claim); {
		case done:
			return st, err
		case err != nil:
			// KV's copy is out of reach: the call goes out all the same,
			// but the give-up waits for a read of KV, after the backoff.
			by = bySettler
		}
	}
	_, err = s.place(ctx, key, claim, by)
	var open *Unsettled
	var rejection *Rejection
	switch {
	case errors.As(err, &open) && open.GiveUp == GivenUp:
		return Settlement{Final: true, Unresolved: true, Attempts: open.Attempts, Result: SettleGaveUp, AcceptedAt: claim.AcceptedAt}, nil
	case errors.As(err, &open):
		return Settlement{NextAttempt: open.NextAttempt, Attempts: open.Attempts, Unresolved: open.Unresolved(), Result: SettleUnknown, AcceptedAt: claim.AcceptedAt}, nil
	case errors.Is(err, ErrInProgress):
		// The claim's lease ran out during the call and a client took the
		// key over: its outcome is the key's.
		return Settlement{NextAttempt: s.opts.Now().Add(s.opts.PendingTTL), Attempts: claim.Attempts, Result: SettleBusy, AcceptedAt: claim.AcceptedAt}, nil
	case errors.Is(err, ErrStorageUnavailable):
		// An answer that could not be stored left the key open, due again
		// (keep): the error stands, and the next attempt is told, so that
		// the chain of messages goes on. Retried sooner, the message would
		// find the key not due, and end the chain.
		var left *unstored
		if errors.As(err, &left) {
			return Settlement{NextAttempt: left.open.NextAttempt, Attempts: left.open.Attempts, Unresolved: left.open.Unresolved(),
				Result: SettleUnknown, AcceptedAt: claim.AcceptedAt}, err
		}
		return Settlement{}, err
	case errors.As(err, &rejection):
		return Settlement{Final: true, Attempts: claim.Attempts, Result: SettleRejected, AcceptedAt: claim.AcceptedAt}, nil
	}
	return Settlement{Final: true, Attempts: claim.Attempts, Result: SettleAccepted, AcceptedAt: claim.AcceptedAt}, nil
}

// settleFromFallback, before the settler's last call during a migration,
// stores what the Fallback (KV) holds for claim's order id as the key's
// outcome: a request whose read of KV lagged behind KV mode's receipt
// placed the order again here, under the same order id, and KV's outcome
// is the one its client was given. Without this the settler would report
// unresolved an order KV knows was accepted, whenever the OMS is still
// down at the give-up. done is false when the Fallback holds no outcome
// of that order id, is not consulted, or cannot be read (err): the
// settler goes on, once its claim is renewed (renew), since the read may
// have outlasted its lease.
func (s *Service) settleFromFallback(ctx context.Context, key Key, claim *Claim) (Settlement, bool, error) {
	if !s.fallback() {
		return Settlement{}, false, nil
	}
	old, err := s.opts.Fallback.Lookup(ctx, key)
	busy := Settlement{NextAttempt: s.opts.Now().Add(s.opts.PendingTTL), Attempts: claim.Attempts, Result: SettleBusy, AcceptedAt: claim.AcceptedAt}
	if err != nil || old.State != Stored || ForAnotherOrder(old.Fingerprint, claim.Fingerprint) || OrderIDOf(old) != claim.OrderID {
		switch rerr := s.renew(ctx, key, claim); {
		case errors.Is(rerr, ErrInProgress):
			return busy, true, nil
		case rerr != nil:
			return Settlement{}, true, rerr
		case err != nil:
			return Settlement{}, false, storageUnavailable(err)
		}
		return Settlement{}, false, nil
	}
	switch _, err := s.commitFallbacks(ctx, key, *claim, old, claim.Fingerprint); {
	case errors.Is(err, ErrInProgress):
		return busy, true, nil
	case err != nil:
		return Settlement{}, true, err
	}
	r := SettleAccepted
	if old.Rejected {
		r = SettleRejected
	}
	return Settlement{Final: true, Attempts: claim.Attempts, Result: r, AcceptedAt: claim.AcceptedAt}, true, nil
}
