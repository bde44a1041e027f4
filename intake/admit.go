package intake

import "context"

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
