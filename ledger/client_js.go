//go:build js && wasm

package ledger

import (
	"context"
	"errors"
	"syscall/js"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/workers"
)

// Client is an intake.Store over the ledger's Durable Object namespace
// binding (env.LEDGER): each call is one RPC to the object ObjectName
// picks.
type Client struct {
	adapter
	ns     js.Value
	shards int
}

// NewClient wraps the Durable Object namespace binding ns, spreading each
// client's keys over shards objects.
func NewClient(ns js.Value, shards int) *Client {
	c := &Client{ns: ns, shards: shards}
	c.adapter = adapter{calls: c}
	return c
}

// call invokes method on key's object. Every ledger method is idempotent
// for a claim's token, so an error the runtime marks retryable is retried
// once, on a new stub as Cloudflare advises (on top of the retries the
// runtime makes itself), unless it also says the object is overloaded:
// retrying then only adds load.
func (c *Client) call(ctx context.Context, key intake.Key, method string, args ...any) (js.Value, error) {
	args = append([]any{key.String()}, args...)
	res, err := c.callObject(ctx, ObjectName(key, c.shards), method, args)
	var jsErr *workers.Error
	if errors.As(err, &jsErr) && jsErr.Retryable && !jsErr.Overloaded {
		res, err = c.callObject(ctx, ObjectName(key, c.shards), method, args)
	}
	if err != nil {
		return js.Undefined(), errs.Prefix("ledger: "+method, err)
	}
	return res, nil
}

// callObject calls method on the object name through a stub of its own:
// a stub belongs to the request that made it, so none is kept. The result
// is the caller's to release.
func (c *Client) callObject(ctx context.Context, name, method string, args []any) (js.Value, error) {
	stub, err := workers.Call(c.ns, "getByName", name)
	if err != nil {
		return js.Undefined(), err
	}
	defer workers.Release(stub)
	return workers.CallAwait(ctx, stub, method, args...)
}

func (c *Client) claim(ctx context.Context, key intake.Key, cl intake.Claim) (intake.Record, error) {
	res, err := c.call(ctx, key, "claim", cl.Token, cl.Fingerprint, cl.Lease.Milliseconds(),
		cl.OrderID, cl.AcceptedAt.UnixMilli(), cl.Keep.Milliseconds())
	if err != nil {
		return intake.Record{}, err
	}
	defer workers.Release(res)
	return recordFromJS(res)
}

// commit trusts only an explicit {committed: true}: a Worker bound to
// another script's class (ledger-front) may meet another version of it,
// and no receipt may be handed out on an answer it cannot read.
func (c *Client) commit(ctx context.Context, key intake.Key, cl intake.Claim, r intake.Result) error {
	res, err := c.call(ctx, key, "commit", cl.Token, string(r.Body), r.Fingerprint, r.TTL.Milliseconds(), r.Rejected)
	defer workers.Release(res)
	switch {
	case err != nil:
		return err
	case res.Type() == js.TypeObject && res.Get("lost").Equal(js.ValueOf(true)):
		return intake.ErrLostClaim
	case res.Type() != js.TypeObject || !res.Get("committed").Equal(js.ValueOf(true)):
		return errors.New("ledger: commit: an answer that says neither committed nor lost")
	}
	return nil
}

func (c *Client) release(ctx context.Context, key intake.Key, cl intake.Claim) error {
	res, err := c.call(ctx, key, "release", cl.Token, cl.Sent, cl.OrderID, cl.AcceptedAt.UnixMilli())
	workers.Release(res)
	return err
}

func (c *Client) lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	res, err := c.call(ctx, key, "lookup")
	if err != nil {
		return intake.Record{}, err
	}
	defer workers.Release(res)
	return recordFromJS(res)
}
