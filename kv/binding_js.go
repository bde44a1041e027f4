//go:build js && wasm

package kv

import (
	"context"
	"strconv"
	"syscall/js"

	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/workers"
)

// Binding is a Namespace over a Workers KV namespace binding (env.ORDERS).
type Binding struct {
	ns js.Value
}

// NewBinding wraps the KV namespace binding ns.
func NewBinding(ns js.Value) *Binding {
	return &Binding{ns: ns}
}

// Get implements Namespace with one getWithMetadata call. KV answers a missing key
// with a null value, which becomes ErrNotFound, never a string.
//
// Metadata crosses as one JSON.stringify call: KV hands it over as an
// object, and reading its members one by one would take more crossings.
func (n *Binding) Get(ctx context.Context, key string) (Entry, error) {
	if err := CheckKey(key); err != nil {
		return Entry{}, err
	}
	res, err := workers.CallAwait(ctx, n.ns, "getWithMetadata", key)
	if err != nil {
		return Entry{}, errs.Prefix("kv: get "+strconv.Quote(key), err)
	}
	defer workers.Release(res)
	value, ok := workers.StringField(res, "value")
	if !ok {
		return Entry{}, ErrNotFound
	}
	e := Entry{Value: value}
	meta := res.Get("metadata")
	defer workers.Release(meta)
	if meta.Type() != js.TypeNull && meta.Type() != js.TypeUndefined {
		e.Metadata = []byte(workers.StringifyJSON(meta))
	}
	return e, nil
}

// Put implements Namespace. Metadata crosses as one JSON.parse call, for the
// same reason as in Get.
func (n *Binding) Put(ctx context.Context, key string, e Entry, opts PutOptions) error {
	if err := checkPut(key, e, opts); err != nil {
		return err
	}
	var options []any
	if opts.TTL > 0 {
		options = append(options, "expirationTtl", int(opts.TTL.Seconds()))
	}
	if e.Metadata != nil {
		meta, err := workers.ParseJSON(string(e.Metadata))
		if err != nil {
			return errs.Detail(ErrInvalid, "metadata: "+err.Error())
		}
		defer workers.Release(meta)
		options = append(options, "metadata", meta)
	}
	jsOpts := workers.Object(options...)
	defer workers.Release(jsOpts)
	res, err := workers.CallAwait(ctx, n.ns, "put", key, e.Value, jsOpts)
	if err != nil {
		return errs.Prefix("kv: put "+strconv.Quote(key), err)
	}
	workers.Release(res)
	return nil
}

// Delete implements Namespace.
func (n *Binding) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	res, err := workers.CallAwait(ctx, n.ns, "delete", key)
	if err != nil {
		return errs.Prefix("kv: delete "+strconv.Quote(key), err)
	}
	workers.Release(res)
	return nil
}

// List implements Lister with one list call per page. Only the sweep of
// overdue keys lists, every few minutes, so the page is read member by
// member.
func (n *Binding) List(ctx context.Context, prefix, cursor string, limit int) ([]Listed, string, error) {
	fields := []any{"prefix", prefix, "limit", limit}
	if cursor != "" {
		fields = append(fields, "cursor", cursor)
	}
	opts := workers.Object(fields...)
	defer workers.Release(opts)
	res, err := workers.CallAwait(ctx, n.ns, "list", opts)
	if err != nil {
		return nil, "", errs.Prefix("kv: list "+strconv.Quote(prefix), err)
	}
	defer workers.Release(res)
	keys := res.Get("keys")
	defer workers.Release(keys)
	page := make([]Listed, keys.Length())
	for i := range page {
		k := keys.Index(i)
		page[i].Name, _ = workers.StringField(k, "name")
		if meta := k.Get("metadata"); meta.Type() != js.TypeUndefined && meta.Type() != js.TypeNull {
			page[i].Metadata = []byte(workers.StringifyJSON(meta))
			workers.Release(meta)
		}
		workers.Release(k)
	}
	next := ""
	if !res.Get("list_complete").Truthy() {
		next, _ = workers.StringField(res, "cursor")
	}
	return page, next, nil
}
