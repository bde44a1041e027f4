//go:build js && wasm

package kv

import (
	"context"
	"fmt"
	"syscall/js"

	"github.com/edge-orders/edge-orders/workers"
)

// Workers is a Store over a Workers KV namespace binding (env.ORDERS).
type Workers struct {
	ns js.Value
}

// NewWorkers wraps the KV namespace binding ns.
func NewWorkers(ns js.Value) *Workers {
	return &Workers{ns: ns}
}

// Get implements Store with one getWithMetadata call. KV answers a missing key
// with a null value, which becomes ErrNotFound, never a string.
func (w *Workers) Get(ctx context.Context, key string) (Entry, error) {
	if err := CheckKey(key); err != nil {
		return Entry{}, err
	}
	res, err := workers.CallAwait(ctx, w.ns, "getWithMetadata", key)
	if err != nil {
		return Entry{}, fmt.Errorf("kv: get %q: %w", key, err)
	}
	value := res.Get("value")
	if value.Type() != js.TypeString {
		return Entry{}, ErrNotFound
	}
	e := Entry{Value: value.String()}
	if meta := res.Get("metadata"); meta.Type() != js.TypeNull && meta.Type() != js.TypeUndefined {
		e.Metadata = []byte(js.Global().Get("JSON").Call("stringify", meta).String())
	}
	return e, nil
}

// Put implements Store.
func (w *Workers) Put(ctx context.Context, key string, e Entry, opts PutOptions) error {
	if err := checkPut(key, e, opts); err != nil {
		return err
	}
	jsOpts := js.Global().Get("Object").New()
	if opts.TTL > 0 {
		jsOpts.Set("expirationTtl", int(opts.TTL.Seconds()))
	}
	if e.Metadata != nil {
		meta, err := workers.Call(js.Global().Get("JSON"), "parse", string(e.Metadata))
		if err != nil {
			return fmt.Errorf("%w: metadata: %v", ErrInvalid, err)
		}
		jsOpts.Set("metadata", meta)
	}
	if _, err := workers.CallAwait(ctx, w.ns, "put", key, e.Value, jsOpts); err != nil {
		return fmt.Errorf("kv: put %q: %w", key, err)
	}
	return nil
}

// Delete implements Store.
func (w *Workers) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if _, err := workers.CallAwait(ctx, w.ns, "delete", key); err != nil {
		return fmt.Errorf("kv: delete %q: %w", key, err)
	}
	return nil
}
