//go:build js && wasm

package kv

import (
	"context"
	"strconv"
	"strings"

	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/workers"
)

// Binding is a Namespace over a Workers KV namespace binding (env.ORDERS):
// KV's limits checked first, as KV would refuse the call, and its answers
// read as entries; each method is one call of the binding.
type Binding struct {
	kv workers.KV
}

// NewBinding wraps the KV namespace binding kv.
func NewBinding(kv workers.KV) *Binding {
	return &Binding{kv: kv}
}

// Get implements Namespace with getWithMetadata. KV answers a missing key
// with a null value, which becomes ErrNotFound, never a string.
func (n *Binding) Get(ctx context.Context, key string) (Entry, error) {
	entries, err := n.GetMany(ctx, key)
	if err != nil {
		return Entry{}, err
	}
	if entries[0] == nil {
		return Entry{}, ErrNotFound
	}
	return *entries[0], nil
}

// GetMany implements ManyGetter: every key read at once, in one call; nil
// for a key that is not found.
func (n *Binding) GetMany(ctx context.Context, keys ...string) ([]*Entry, error) {
	for _, key := range keys {
		if err := CheckKey(key); err != nil {
			return nil, err
		}
	}
	values, err := n.kv.Get(ctx, keys...)
	if err != nil {
		return nil, errs.Prefix("kv: get "+strconv.Quote(keys[0]), err)
	}
	entries := make([]*Entry, len(keys))
	for i, v := range values {
		if v.Found {
			entries[i] = &Entry{Value: v.Value, Metadata: v.Metadata}
		}
	}
	return entries, nil
}

// Put implements Namespace.
func (n *Binding) Put(ctx context.Context, key string, e Entry, opts PutOptions) error {
	if err := checkPut(key, e, opts); err != nil {
		return err
	}
	if err := n.kv.Put(ctx, key, e.Value, e.Metadata, opts.TTL); err != nil {
		return writeError("kv: put "+strconv.Quote(key), err)
	}
	return nil
}

// Delete implements Namespace.
func (n *Binding) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := n.kv.Delete(ctx, key); err != nil {
		return writeError("kv: delete "+strconv.Quote(key), err)
	}
	return nil
}

// List implements Lister with one list call per page.
func (n *Binding) List(ctx context.Context, prefix, cursor string, limit int) ([]Listed, string, error) {
	if err := CheckListLimit(limit); err != nil {
		return nil, "", err
	}
	keys, next, err := n.kv.List(ctx, prefix, cursor, limit)
	if err != nil {
		return nil, "", errs.Prefix("kv: list "+strconv.Quote(prefix), err)
	}
	page := make([]Listed, len(keys))
	for i, k := range keys {
		page[i] = Listed{Name: k.Name, Metadata: k.Metadata}
	}
	return page, next, nil
}

// writeError is a failed write's error, prefixed; one KV refused with a
// 429 ("KV PUT failed: 429 Too Many Requests") unwraps to ErrRateLimited.
func writeError(prefix string, err error) error {
	if strings.Contains(err.Error(), "429") {
		return errs.Wrap(ErrRateLimited, prefix+": "+err.Error())
	}
	return errs.Prefix(prefix, err)
}
