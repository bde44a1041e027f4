package intake

import "context"

type callerKey struct{}

// WithCaller returns ctx carrying how to read the caller's address, which
// the rate limit counts against when the Worker runs open. addr is called
// only then: reading a request header costs a crossing to JavaScript that
// most requests need not pay.
func WithCaller(ctx context.Context, addr func() string) context.Context {
	return context.WithValue(ctx, callerKey{}, addr)
}

// admit asks Options.Limit whether key's client, or the caller, may place
// a new order.
func (s *Service) admit(ctx context.Context, key Key) error {
	who := key.Client
	if who == "" {
		var addr string
		if read, ok := ctx.Value(callerKey{}).(func() string); ok {
			addr = read()
		}
		who = "addr:" + addr
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
