package intake

import (
	"context"
	"errors"
	"time"
)

// Lookup returns key's stored receipt without a body to check it against
// and without changing anything, with when it expires where the Store
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
	rec, err := s.store.Lookup(ctx, key)
	if err == nil && rec.State == Absent && s.fallback() {
		rec, err = s.opts.Fallback.Lookup(ctx, key)
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
	s.cacheRead(key.String(), rec, now)
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
