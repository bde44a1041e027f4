package intake

import "context"

// Lookup returns key's stored receipt without a body to check it against
// and without changing anything: a *Rejection when the stored outcome is
// one, ErrInProgress while a request holds the key, an *Unsettled when an
// attempt ended without the gateway's answer (with when the settler calls
// next, or matching ErrUnresolved once it gave up), ErrNotFound when
// nothing is stored, and an error wrapping ErrStorageUnavailable when
// storage fails.
func (s *Service) Lookup(ctx context.Context, key Key) (Outcome, error) {
	now := s.opts.Now()
	if rec, ok := s.receipts.get(key.String(), now); ok {
		return replayed(rec)
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
		return Outcome{}, unsettled(rec)
	case rec.State != Stored:
		return Outcome{}, ErrNotFound
	}
	s.receipts.put(key.String(), rec, now)
	return replayed(rec)
}
