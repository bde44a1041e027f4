//go:build js && wasm

package ledger

import (
	"context"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/workers"
)

// Client is an intake.Store over the ledger's Durable Object namespace
// binding (env.LEDGER): each call is one RPC to the object ObjectName
// picks.
type Client struct {
	adapter
	ns     workers.DurableObjectNamespace
	shards int
}

// NewClient wraps the Durable Object namespace binding ns, spreading each
// client's keys over shards objects.
func NewClient(ns workers.DurableObjectNamespace, shards int) *Client {
	c := &Client{ns: ns, shards: shards}
	c.adapter = adapter{calls: c}
	return c
}

// call invokes method on key's object with one JSON argument, and
// returns its JSON answer, retrying it once (retryOnce) on a new stub, on
// top of the retries the runtime makes itself.
func (c *Client) call(ctx context.Context, key intake.Key, method string, arg []byte) (res []byte, err error) {
	err = retryOnce(func() error {
		res, err = c.callObject(ctx, ObjectName(key, c.shards), method, arg)
		return err
	})
	if err != nil {
		return nil, errs.Prefix("ledger: "+method, err)
	}
	return res, nil
}

// callObject calls method on the object name, in one call of the binding.
func (c *Client) callObject(ctx context.Context, name, method string, arg []byte) ([]byte, error) {
	result, err := c.ns.Call(ctx, name, method, arg)
	switch {
	case err != nil:
		return nil, err
	case len(result) == 0:
		return nil, errNotRecord
	}
	return result, nil
}

func (c *Client) claim(ctx context.Context, key intake.Key, cl intake.Claim) (intake.Record, error) {
	res, err := c.call(ctx, key, "claim", encodeClaim(key, cl))
	if err != nil {
		return intake.Record{}, err
	}
	return decodeRecord(res)
}

func (c *Client) commit(ctx context.Context, key intake.Key, cl intake.Claim, r intake.Result) error {
	res, err := c.call(ctx, key, "commit", encodeCommit(key, cl, r))
	if err != nil {
		return err
	}
	return decodeCommitted(res)
}

func (c *Client) release(ctx context.Context, key intake.Key, cl intake.Claim) error {
	_, err := c.call(ctx, key, "release", encodeClaim(key, cl))
	return err
}

func (c *Client) lookup(ctx context.Context, key intake.Key) (intake.Record, error) {
	res, err := c.call(ctx, key, "lookup", encodeKey(key))
	if err != nil {
		return intake.Record{}, err
	}
	return decodeRecord(res)
}
