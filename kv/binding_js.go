//go:build js && wasm

package kv

import (
	"context"
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/workers"
)

// Binding is a Namespace over a Workers KV namespace binding (env.ORDERS),
// which JavaScript keeps and Go names by its handle. Each method is one
// binding call: its arguments and its answer cross as frames, metadata as
// its JSON text.
type Binding struct {
	ns workers.Handle
}

// NewBinding wraps the KV namespace binding ns.
func NewBinding(ns workers.Handle) *Binding {
	return &Binding{ns: ns}
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

// GetMany implements ManyGetter: every key read at once in JavaScript
// (Promise.all), in one binding call; nil for a key that is not found.
func (n *Binding) GetMany(ctx context.Context, keys ...string) ([]*Entry, error) {
	frame := workers.Frame{}
	for _, key := range keys {
		if err := CheckKey(key); err != nil {
			return nil, err
		}
		frame = frame.Str(key)
	}
	answer, err := workers.Call(ctx, "kvGet", frame, n.ns)
	if err != nil {
		return nil, errs.Prefix("kv: get "+strconv.Quote(keys[0]), err)
	}
	f := workers.ReadFields(answer)
	entries := make([]*Entry, len(keys))
	for i := range keys {
		found, value, meta := f.Flag(), f.Str(), f.Bytes()
		if found {
			e := &Entry{Value: value}
			if len(meta) > 0 {
				e.Metadata = meta
			}
			entries[i] = e
		}
	}
	return entries, f.Err
}

// Put implements Namespace.
func (n *Binding) Put(ctx context.Context, key string, e Entry, opts PutOptions) error {
	if err := checkPut(key, e, opts); err != nil {
		return err
	}
	ttl := ""
	if opts.TTL > 0 {
		ttl = strconv.Itoa(int(opts.TTL / time.Second))
	}
	frame := workers.Frame{}.Str(key).Str(e.Value).Bytes(e.Metadata).Str(ttl)
	if _, err := workers.Call(ctx, "kvPut", frame, n.ns); err != nil {
		return errs.Prefix("kv: put "+strconv.Quote(key), err)
	}
	return nil
}

// Delete implements Namespace.
func (n *Binding) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if _, err := workers.Call(ctx, "kvDelete", workers.Frame{}.Str(key), n.ns); err != nil {
		return errs.Prefix("kv: delete "+strconv.Quote(key), err)
	}
	return nil
}

// List implements Lister with one list call per page.
func (n *Binding) List(ctx context.Context, prefix, cursor string, limit int) ([]Listed, string, error) {
	frame := workers.Frame{}.Str(prefix).Str(cursor).Int(int64(limit))
	answer, err := workers.Call(ctx, "kvList", frame, n.ns)
	if err != nil {
		return nil, "", errs.Prefix("kv: list "+strconv.Quote(prefix), err)
	}
	f := workers.ReadFields(answer)
	next := f.Str()
	var page []Listed
	for f.More() {
		l := Listed{Name: f.Str()}
		if meta := f.Bytes(); len(meta) > 0 {
			l.Metadata = meta
		}
		page = append(page, l)
	}
	return page, next, f.Err
}
