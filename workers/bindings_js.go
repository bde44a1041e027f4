//go:build js && wasm

package workers

import (
	"context"
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/internal/errs"
)

// The bindings, typed, one per kind the Worker uses, each next to its
// JavaScript half in bridge.mjs. A binding is a handle: JavaScript keeps
// the object, and each method is one binding call whose arguments and
// answer cross as frames. Env's accessors take the binding's name as
// wrangler.toml declares it, and report whether the environment has it.

// KV is a Workers KV namespace binding.
type KV struct{ h Handle }

// KV returns the KV namespace binding name.
func (e Env) KV(name string) (KV, bool) {
	h, ok := e.binding(name)
	return KV{h}, ok
}

// KVValue is what KV.Get read for one key.
type KVValue struct {
	Found bool
	Value string
	// Metadata is the JSON text of the metadata stored beside the value;
	// nil for none.
	Metadata []byte
}

// Get reads every key at once (getWithMetadata under Promise.all), in one
// binding call. A missing key is a KVValue that is not Found, never a
// string.
func (kv KV) Get(ctx context.Context, keys ...string) ([]KVValue, error) {
	frame := outFrame{}
	for _, key := range keys {
		frame = frame.Str(key)
	}
	answer, err := callBinding(ctx, "kvGet", frame, kv.h)
	if err != nil {
		return nil, err
	}
	f := readFrame(answer)
	values := make([]KVValue, len(keys))
	for i := range values {
		values[i] = KVValue{Found: f.Flag(), Value: f.Str(), Metadata: f.Bytes()}
		if len(values[i].Metadata) == 0 {
			values[i].Metadata = nil
		}
	}
	return values, f.Err
}

// Put writes value and its metadata (JSON text, nil for none) under key,
// expiring after ttl (whole seconds; zero never).
func (kv KV) Put(ctx context.Context, key, value string, metadata []byte, ttl time.Duration) error {
	seconds := ""
	if ttl > 0 {
		seconds = strconv.Itoa(int(ttl / time.Second))
	}
	_, err := callBinding(ctx, "kvPut", outFrame{}.Str(key).Str(value).Bytes(metadata).Str(seconds), kv.h)
	return err
}

// Delete deletes key; a missing key is no error.
func (kv KV) Delete(ctx context.Context, key string) error {
	_, err := callBinding(ctx, "kvDelete", outFrame{}.Str(key), kv.h)
	return err
}

// KVKey is one key of a KV list page, with its metadata's JSON text (nil
// for none).
type KVKey struct {
	Name     string
	Metadata []byte
}

// List returns up to limit keys that start with prefix, from cursor (""
// for the first page), and the next page's cursor: "" after the last.
func (kv KV) List(ctx context.Context, prefix, cursor string, limit int) (keys []KVKey, next string, err error) {
	answer, err := callBinding(ctx, "kvList", outFrame{}.Str(prefix).Str(cursor).Int(int64(limit)), kv.h)
	if err != nil {
		return nil, "", err
	}
	f := readFrame(answer)
	next = f.Str()
	for f.More() {
		k := KVKey{Name: f.Str()}
		if meta := f.Bytes(); len(meta) > 0 {
			k.Metadata = meta
		}
		keys = append(keys, k)
	}
	return keys, next, f.Err
}

// RateLimiter is a Rate Limiting binding ([[ratelimits]]).
type RateLimiter struct{ h Handle }

// RateLimiter returns the rate limiting binding name.
func (e Env) RateLimiter(name string) (RateLimiter, bool) {
	h, ok := e.binding(name)
	return RateLimiter{h}, ok
}

// Limit counts one event against key's budget and reports whether it was
// within it.
func (l RateLimiter) Limit(ctx context.Context, key string) (bool, error) {
	answer, err := callBinding(ctx, "rateLimit", outFrame{}.Str(key), l.h)
	if err != nil {
		return false, errs.Prefix("rate limit", err)
	}
	return readFrame(answer).Flag(), nil
}

// DurableObjectNamespace is a Durable Object namespace binding.
type DurableObjectNamespace struct{ h Handle }

// DurableObjectNamespace returns the Durable Object namespace binding name.
func (e Env) DurableObjectNamespace(name string) (DurableObjectNamespace, bool) {
	h, ok := e.binding(name)
	return DurableObjectNamespace{h}, ok
}

// Call calls method on the object named name over RPC, through a stub of
// its own (a stub belongs to the request that made it, so none is kept),
// with one argument and one answer, each bytes. An error the runtime
// raised is an *Error, which says whether it may be retried.
func (ns DurableObjectNamespace) Call(ctx context.Context, name, method string, arg []byte) ([]byte, error) {
	answer, err := callBinding(ctx, "rpc", outFrame{}.Str(name).Str(method).Bytes(arg), ns.h)
	if err != nil {
		return nil, err
	}
	f := readFrame(answer)
	result := f.Bytes()
	return result, f.Err
}

// Queue returns the queue producer binding name.
func (e Env) Queue(name string) (Queue, bool) {
	h, ok := e.binding(name)
	return Queue{h}, ok
}

// Fetcher sends HTTP requests: a service binding (another Worker's
// fetch), or the global fetch, which reaches the network.
type Fetcher struct{ h Handle }

// Fetcher returns the service binding name.
func (e Env) Fetcher(name string) (Fetcher, bool) {
	h, ok := e.binding(name)
	return Fetcher{h}, ok
}

// GlobalFetcher is the global scope's fetch, which reaches the network.
func GlobalFetcher() Fetcher { return Fetcher{0} }

// AnalyticsEngineDataset is a Workers Analytics Engine dataset binding
// ([[analytics_engine_datasets]]).
type AnalyticsEngineDataset struct{ h Handle }

// AnalyticsEngineDataset returns the Analytics Engine dataset binding name.
func (e Env) AnalyticsEngineDataset(name string) (AnalyticsEngineDataset, bool) {
	h, ok := e.binding(name)
	return AnalyticsEngineDataset{h}, ok
}

// WriteDataPoint writes one data point (writeDataPoint({indexes, blobs,
// doubles})) and returns at once: the runtime sends it after the event,
// with nothing to await. It is one synchronous bridge call, its fields one
// frame, and no call back into Go. The error is what writeDataPoint threw:
// a point over Analytics Engine's limits (one index of at most 96 bytes,
// 20 blobs, 20 doubles), or past an invocation's 250 points.
func (d AnalyticsEngineDataset) WriteDataPoint(indexes, blobs []string, doubles []float64) error {
	// Not callSync: a point answers nothing, and reading an empty answer
	// would be one more crossing.
	if n := jsBridge.Call("writeDataPoint", int(d.h), send(pointFrame(indexes, blobs, doubles))).Int(); n < 0 {
		return errorFrom(receive(-1 - n))
	}
	return nil
}

// pointFrame is a data point as bridge.mjs reads it: [indexes count,
// indexes..., blobs count, blobs..., doubles...].
func pointFrame(indexes, blobs []string, doubles []float64) outFrame {
	frame := outFrame{}.Int(int64(len(indexes)))
	for _, s := range indexes {
		frame = frame.Str(s)
	}
	frame = frame.Int(int64(len(blobs)))
	for _, s := range blobs {
		frame = frame.Str(s)
	}
	for _, x := range doubles {
		frame = frame.Float(x)
	}
	return frame
}
