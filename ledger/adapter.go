package ledger

import (
	"context"
	"errors"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/workers"
)

// calls reaches one ledger object's methods: in memory (MemoryStore) or over RPC
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
// released too, and if that release fails the refusal becomes a storage
// error: the claim stays and its settler places the order, so its client
// must not be told it was refused. Only a new claim asks the rate limit:
// taking over an Open key is the same order again, as in KV mode.
func (s adapter) Begin(ctx context.Context, key intake.Key, c intake.Claim) (intake.Record, error) {
	rec, err := s.calls.claim(ctx, key, c)
	if err != nil {
		if !overloaded(err) {
			err = s.releaseAfter(ctx, key, c, err)
		}
		return intake.Record{}, err
	}
	if c.Admit != nil && intake.NewOrder(rec.Took, c) {
		if err := c.Admit(ctx); err != nil {
			if rerr := intake.ReleaseTwice(ctx, s, key, c); rerr != nil && c.Stage != intake.StageTentative {
				// The claim stays, due for the settler once its lease
				// ends: its client must not be told the order was refused.
				return intake.Record{}, errors.New("ledger: a claim the rate limit refused could not be released: " + rerr.Error())
			}
			return intake.Record{}, err
		}
	}
	return rec, nil
}

// retryOnce makes call, and makes it once more if it failed with an error
// the runtime marks retryable, as Cloudflare advises, unless the error
// also says the object is overloaded: retrying then only adds load. Every
// ledger method is idempotent for its claim's token (a purge for its own),
// and the first try may have taken effect: Claim answers a claim it finds
// its own as it answered the first try. Client makes every call through
// it, and MemoryStore every call that can fail (RoundTrip), so that tests
// and the simulator meet the retries production makes.
//
// A resend the object answers overloaded says nothing of the first try,
// which may have taken effect: the first's error stands, so that Begin
// releases what it may have claimed.
func retryOnce(call func() error) error {
	err := call()
	if !retryable(err) {
		return err
	}
	if again := call(); again == nil || !overloaded(again) {
		return again
	}
	return resentOverloaded{err}
}

// resentOverloaded is a first try's error whose resend the object
// answered overloaded: the first's error stands (errors.As finds it), and
// no call follows (intake.ReleaseTwice).
type resentOverloaded struct{ error }

func (e resentOverloaded) Unwrap() error { return e.error }
func (resentOverloaded) NoResend() bool  { return true }

// retryable reports whether err is one the runtime marks retryable, and
// not overloaded.
func retryable(err error) bool {
	var jsErr *workers.Error
	return errors.As(err, &jsErr) && jsErr.Retryable && !jsErr.Overloaded
}

// overloaded reports whether err says the object is overloaded: nothing
// was done, and another call only adds load.
func overloaded(err error) bool {
	var jsErr *workers.Error
	return errors.As(err, &jsErr) && jsErr.Overloaded
}

// releaseAfter releases c after err, trying once more if the release
// fails (a claim left behind blocks its key for its lease), and returns err
// with the release's own failure, if any, said too.
func (s adapter) releaseAfter(ctx context.Context, key intake.Key, c intake.Claim, err error) error {
	if rerr := intake.ReleaseTwice(ctx, s, key, c); rerr != nil {
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

// Lifecycle implements intake.Store. A claim carries the order's
// fingerprint, so an invalid body is refused before anything is stored;
// Commit replaces the claim with the outcome in the same row, so there is
// no claim left to release; a row keeps a tentative claim apart; and a
// row knows when it expires.
func (adapter) Lifecycle() intake.Lifecycle {
	return intake.Lifecycle{ValidateFirst: true, Tentative: true, TellsExpiry: true, SettlesItself: true}
}

// Lookup implements intake.Store.
func (s adapter) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	return s.calls.lookup(ctx, key)
}

// local reaches an Object in the caller's own call stack: the Durable
// Object's alarm handler, which settles keys of its own object. Each call
// is one synchronous step, as over RPC.
type local struct{ obj *Object }

// NewLocal returns an intake.Store over obj, for code running inside the
// object: the settler in its alarm.
func NewLocal(obj *Object) intake.Store { return adapter{calls: local{obj}} }

func (l local) claim(_ context.Context, key intake.Key, c intake.Claim) (intake.Record, error) {
	return l.obj.Claim(key, c)
}

func (l local) commit(_ context.Context, key intake.Key, c intake.Claim, r intake.Result) error {
	return l.obj.Commit(key, c, r)
}

func (l local) release(_ context.Context, key intake.Key, c intake.Claim) error {
	return l.obj.Release(key, c)
}

func (l local) lookup(_ context.Context, key intake.Key) (intake.Record, error) {
	return l.obj.Lookup(key), nil
}
