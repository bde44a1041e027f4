//go:build js && wasm

package ledger

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/workers"
)

// Client is an intake.Store over the ledger's Durable Object namespace
// binding (env.LEDGER): each call is one RPC to the object ObjectName
// picks.
type Client struct {
	ns     js.Value
	shards int
}

// NewClient wraps the Durable Object namespace binding ns, spreading each
// client's keys over shards objects.
func NewClient(ns js.Value, shards int) *Client {
	return &Client{ns: ns, shards: shards}
}

// call invokes method on key's object. Every ledger method is idempotent
// for a claim's token, so an error the runtime marks retryable is retried
// once, unless it also says the object is overloaded: retrying then only
// adds load.
func (c *Client) call(ctx context.Context, key intake.Key, method string, args ...any) (js.Value, error) {
	args = append([]any{key.String()}, args...)
	// A stub belongs to the request that made it, so none is kept.
	stub := c.ns.Call("getByName", ObjectName(key, c.shards))
	res, err := workers.CallAwait(ctx, stub, method, args...)
	var jsErr *workers.Error
	if errors.As(err, &jsErr) && jsErr.Retryable && !jsErr.Overloaded {
		res, err = workers.CallAwait(ctx, stub, method, args...)
	}
	if err != nil {
		return js.Undefined(), fmt.Errorf("ledger: %s: %w", method, err)
	}
	return res, nil
}

// Begin implements intake.Store. A claim whose answer was lost may still
// have been taken, and would block the key for its whole lease: on an
// error Begin releases it, which removes only a claim with this token.
func (c *Client) Begin(ctx context.Context, key intake.Key, cl intake.Claim) (intake.Record, error) {
	res, err := c.call(ctx, key, "claim", cl.Token, cl.Fingerprint, cl.Lease.Milliseconds())
	if err != nil {
		if rerr := c.Release(context.WithoutCancel(ctx), key, cl); rerr != nil {
			err = fmt.Errorf("%w (and its release: %v)", err, rerr)
		}
		return intake.Record{}, err
	}
	rec := recordFromJS(res)
	if rec.State == intake.Claimed && cl.Admit != nil {
		if err := cl.Admit(ctx); err != nil {
			c.Release(context.WithoutCancel(ctx), key, cl)
			return intake.Record{}, err
		}
	}
	return rec, nil
}

// Commit implements intake.Store.
func (c *Client) Commit(ctx context.Context, key intake.Key, cl intake.Claim, r intake.Receipt) error {
	res, err := c.call(ctx, key, "commit", cl.Token, string(r.Body), r.Fingerprint, r.TTL.Milliseconds())
	if err != nil {
		return err
	}
	if res.Get("lost").Truthy() {
		return intake.ErrLostClaim
	}
	return nil
}

// Release implements intake.Store.
func (c *Client) Release(ctx context.Context, key intake.Key, cl intake.Claim) error {
	_, err := c.call(ctx, key, "release", cl.Token)
	return err
}

// Lookup implements intake.Store.
func (c *Client) Lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	res, err := c.call(ctx, key, "lookup")
	if err != nil {
		return intake.Record{}, err
	}
	return recordFromJS(res), nil
}
