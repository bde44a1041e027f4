// Package kv is a small key-value store interface shaped like a Workers KV namespace.
package kv

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
)

// Limits that Workers KV enforces and every Namespace in this package enforces too,
// so that code tested against MemoryNamespace fails the same way it would on real KV.
const (
	// MaxKeyBytes is the longest key KV accepts, in bytes.
	MaxKeyBytes = 512
	// MinTTL is the shortest expiration TTL KV accepts.
	MinTTL = 60 * time.Second
	// MaxMetadataBytes is the largest serialized metadata KV accepts.
	MaxMetadataBytes = 1024
	// MaxValueBytes is the largest value KV accepts.
	MaxValueBytes = 25 << 20
	// MaxListKeys is the most keys one list call returns, and the largest
	// limit it takes.
	MaxListKeys = 1000
)

var (
	// ErrNotFound is returned by Get when no live value is stored under the key.
	ErrNotFound = errors.New("kv: key not found")
	// ErrInvalid is returned when KV would refuse the call's arguments: an empty key,
	// "." or "..", a key over MaxKeyBytes, a TTL under MinTTL, or metadata or a value
	// over its limit.
	ErrInvalid = errors.New("kv: invalid argument")
	// ErrRateLimited is returned by a write that KV refused with a 429:
	// KV takes one write a second per key.
	ErrRateLimited = errors.New("kv: too many writes to one key (429)")
)

// Entry is a value with the metadata stored beside it.
type Entry struct {
	Value string
	// Metadata is the JSON document stored with the value, or nil when there is none.
	Metadata []byte
}

// PutOptions tunes a Put; the zero value stores the entry without expiration.
type PutOptions struct {
	// TTL makes the entry expire this long after the Put; zero means never.
	// KV rounds it down to whole seconds and refuses anything under MinTTL.
	TTL time.Duration
}

// Namespace is the subset of a Workers KV namespace the order store needs.
//
// Like KV it offers no atomicity: two writers of one key both succeed and the
// last one wins, and a Get followed by a Put can race with another caller.
type Namespace interface {
	// Get returns the entry stored under key, or ErrNotFound.
	Get(ctx context.Context, key string) (Entry, error)
	// Put stores e under key, replacing what was there.
	Put(ctx context.Context, key string, e Entry, opts PutOptions) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// CheckKey returns an error wrapping ErrInvalid if KV would refuse key.
func CheckKey(key string) error {
	switch {
	case key == "", key == ".", key == "..":
		return errs.Detail(ErrInvalid, "key "+strconv.Quote(key)+" is not allowed")
	case len(key) > MaxKeyBytes:
		return errs.Detail(ErrInvalid, overLimit("key", len(key), MaxKeyBytes))
	}
	return nil
}

// CheckTTL returns an error wrapping ErrInvalid if KV would refuse ttl as an
// expiration TTL: anything under MinTTL. Zero means no expiration.
func CheckTTL(ttl time.Duration) error {
	if ttl < 0 || (ttl > 0 && ttl < MinTTL) {
		return errs.Wrap(ErrInvalid, strconv.FormatInt(int64(ttl/time.Second), 10)+" seconds is under KV's minimum expiration TTL of "+
			strconv.FormatInt(int64(MinTTL/time.Second), 10)+" seconds ("+ErrInvalid.Error()+")")
	}
	return nil
}

// CheckListLimit returns an error wrapping ErrInvalid for a list limit
// outside 1 to MaxListKeys: KV never returns more keys a call.
func CheckListLimit(limit int) error {
	if limit < 1 || limit > MaxListKeys {
		return errs.Detail(ErrInvalid, "a list limit of "+strconv.Itoa(limit)+" is outside 1 to "+strconv.Itoa(MaxListKeys))
	}
	return nil
}

// checkPut returns an error wrapping ErrInvalid if KV would refuse the Put.
func checkPut(key string, e Entry, opts PutOptions) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := CheckTTL(opts.TTL); err != nil {
		return err
	}
	switch {
	case e.Metadata != nil && !jsjson.Valid(e.Metadata):
		return errs.Detail(ErrInvalid, "metadata is not a JSON document")
	case len(e.Metadata) > MaxMetadataBytes:
		return errs.Detail(ErrInvalid, overLimit("metadata", len(e.Metadata), MaxMetadataBytes))
	case len(e.Value) > MaxValueBytes:
		return errs.Detail(ErrInvalid, overLimit("value", len(e.Value), MaxValueBytes))
	}
	return nil
}

// overLimit says that what is n bytes, over limit.
func overLimit(what string, n, limit int) string {
	return what + " is " + strconv.Itoa(n) + " bytes, over the " + strconv.Itoa(limit) + "-byte limit"
}

// Listed is one key of a List page, with the metadata stored beside it.
type Listed struct {
	Name     string
	Metadata []byte
}

// Lister lists a namespace's keys, as Workers KV's list does: in key
// order, with their metadata, a page at a time. Like KV's it may lag
// behind writes. The in-memory namespace and the binding implement it.
type Lister interface {
	// List returns up to limit keys that start with prefix, after the
	// key cursor names ("" for the first page), and the cursor of the next
	// page: "" when this one is the last.
	List(ctx context.Context, prefix, cursor string, limit int) (keys []Listed, next string, err error)
}

// ManyGetter reads several keys at once, in one round trip: the binding
// implements it, and Store's lookup of a key's receipt and claim uses it
// where it can.
type ManyGetter interface {
	// GetMany returns the entry of each key, nil for one not found.
	GetMany(ctx context.Context, keys ...string) ([]*Entry, error)
}

// GetMany is ns's GetMany where it has one (ManyGetter), else each key's
// Get in turn: the entry of each key, nil for one not found, or the first
// error, as one call of the binding's fails whole.
func GetMany(ctx context.Context, ns Namespace, keys ...string) ([]*Entry, error) {
	if many, ok := ns.(ManyGetter); ok {
		return many.GetMany(ctx, keys...)
	}
	entries := make([]*Entry, len(keys))
	for i, key := range keys {
		e, err := ns.Get(ctx, key)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, err
		default:
			entries[i] = &e
		}
	}
	return entries, nil
}
