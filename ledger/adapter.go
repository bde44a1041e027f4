package ledger

import (
	"context"
	"errors"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/workers"
)

// calls reaches one ledger object's methods: in memory (Memory) or over RPC
// (Client).
type calls interface {
	claim(ctx context.Context, key intake.Key, c intake.Claim) (intake.Record, error)
	commit(ctx context.Context, key intake.Key, c intake.Claim, r intake.Result) error
	release(ctx context.Context, key intake.Key, c intake.Claim) error
	lookup(ctx context.Context, key intake.Key) (intake.Record, error)
}

// adapter is the intake.Store over calls, with what every way of reaching
// the object shares.
type adapter struct{ calls calls }

// Begin implements intake.Store. A claim whose answer was lost may still
// have been taken, and would block the key for its whole lease: on an
// error Begin releases it, which removes only a claim with this token
// (unless the object said it is overloaded: then nothing was taken, and
// another call only adds load). A claim the rate limit refuses is
// released too.
func (s adapter) Begin(ctx context.Context, key intake.Key, c intake.Claim) (intake.Record, error) {
	rec, err := s.calls.claim(ctx, key, c)
	if err != nil {
		var jsErr *workers.Error
		if !errors.As(err, &jsErr) || !jsErr.Overloaded {
			err = s.releaseAfter(ctx, key, c, err)
		}
		return intake.Record{}, err
	}
	if rec.State == intake.Claimed && c.Admit != nil {
		if err := c.Admit(ctx); err != nil {
			return intake.Record{}, s.releaseAfter(ctx, key, c, err)
		}
	}
	return rec, nil
}

// releaseAfter releases c after err, trying once more if the release
// fails (a claim left behind blocks its key for its lease), and returns err
// with the release's own failure, if any, said too.
func (s adapter) releaseAfter(ctx context.Context, key intake.Key, c intake.Claim, err error) error {
	ctx = context.WithoutCancel(ctx)
	rerr := s.calls.release(ctx, key, c)
	if rerr != nil {
		rerr = s.calls.release(ctx, key, c)
	}
	if rerr != nil {
		return errs.Wrap(err, err.Error()+" (and releasing the claim: "+rerr.Error()+")")
	}
	return err
}

// Commit implements intake.Store.
func (s adapter) Commit(ctx context.Context, key intake.Key, c intake.Claim, r intake.Result) error {
	return s.calls.commit(ctx, key, c, r)
}

// Release implements intake.Store.
func (s adapter) Release(ctx context.Context, key intake.Key, c intake.Claim) error {
	return s.calls.release(ctx, key, c)
}

// Lookup implements intake.Store.
func (s adapter) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	return s.calls.lookup(ctx, key)
}
