package intake

import (
	"bytes"
	"context"
	"errors"
	"time"
)

// Lookup returns key's stored receipt without a body to check it against
// and without changing anything (but, during a migration, copying a
// receipt found only in the Fallback, as a retry would), with when it
// expires where the Store
// tells it (Outcome.Expires, Rejection.Expires): a *Rejection when the
// stored outcome is one, ErrInProgress while a request holds the key, an *Unsettled when an
// attempt ended without the gateway's answer (with when the settler calls
// next, or matching ErrUnresolved once it gave up), ErrNotFound when
// nothing is stored, and an error wrapping ErrStorageUnavailable when
// storage fails.
func (s *Service) Lookup(ctx context.Context, key Key) (Outcome, error) {
	now := s.opts.Now()
	if rec, ok := s.receipts.get(key.String(), now, false); ok {
		return s.lookedUp(rec)
	}
	mark := s.receipts.mark()
	rec, err := s.store.Lookup(ctx, key)
	if err == nil && rec.State == Absent && s.fallback() {
		if rec, err = s.opts.Fallback.Lookup(ctx, key); err == nil && rec.State == Stored {
			rec = s.copyFromFallback(ctx, key, rec)
		}
	}
	switch {
	case err != nil:
		return Outcome{}, storageUnavailable(err)
	case rec.State == Held:
		return Outcome{}, ErrInProgress
	case rec.State == Open:
		u := unsettled(rec)
		if !s.settles {
			u.NextAttempt = time.Time{} // no settler is due: a retry stores it
		}
		return Outcome{}, u
	case rec.State != Stored:
		return Outcome{}, ErrNotFound
	}
	s.cacheRead(key.String(), rec, now, mark)
	return s.lookedUp(rec)
}

// lookedUp is Lookup's answer for a stored outcome: the replay, with when
// it expires if the Store tells it. A Store that does not (KV) may still
// have set Expires on a record cached at Commit, which must not show.
func (s *Service) lookedUp(rec Record) (Outcome, error) {
	out, err := replayed(rec)
	if !s.life.TellsExpiry {
		return out, err
	}
	out.Expires = rec.Expires
	var rejection *Rejection
	if errors.As(err, &rejection) {
		rejection.Expires = rec.Expires
	}
	return out, err
}

// copyFromFallback copies rec, a receipt found only in the Fallback
// during a migration, into the Store, as a client's retry does: from then
// on it is kept RESULT_TTL and the Store says until when, so that a
// lookup of it says when it expires as every other does. The copy is the
// same receipt; if it cannot be made (another request holds the key, or
// storage fails) rec is answered as it was found, without its expiry; if
// the Fallback no longer holds it once the claim does (a purge came
// between), what it holds now is.
func (s *Service) copyFromFallback(ctx context.Context, key Key, rec Record) Record {
	if !s.life.TellsExpiry {
		return rec
	}
	claim := Claim{Token: s.opts.NewID(), Fingerprint: rec.Fingerprint, Lease: s.opts.PendingTTL, Stage: s.tentative()}
	if _, claimed, _ := s.claimFree(ctx, key, claim); !claimed {
		return rec
	}
	// Read again, now that the claim holds the key: an operator's purge
	// since the first read erased the receipt, which must not come back.
	// A purge from now on finds the claim and waits.
	if again, err := s.opts.Fallback.Lookup(ctx, key); err != nil || again.State != Stored || !bytes.Equal(again.Body, rec.Body) {
		s.release(ctx, key, claim)
		if err != nil {
			return rec
		}
		return again
	}
	stored, err := s.commitFallbacks(ctx, key, claim, rec, rec.Fingerprint)
	if err != nil {
		return rec
	}
	return stored
}
