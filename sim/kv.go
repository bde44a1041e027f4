package sim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/kv"
)

// KV's weaknesses, as the platform documents them.
const (
	// staleWindow is how long a read may miss a write, in the location
	// that made it or any other.
	staleWindow = 60 * time.Second
	// writeEvery is how often one key takes a write.
	writeEvery = time.Second
	// maxOpsPerInvocation is how many KV operations one invocation may make.
	maxOpsPerInvocation = 1000
)

var (
	errKVFault     = errors.New("sim: KV call failed")
	errKVRateLimit = errors.New("sim: KV PUT failed: 429 too many requests to one key")
)

// namespace is Workers KV as the simulator sees it: every version of
// every key, so that a read may return any value the key held within
// staleWindow, as KV's caches do. Nothing is atomic: each call yields
// before it takes effect and after. It implements kv.Namespace,
// kv.ManyGetter and kv.Lister.
type namespace struct {
	w    *world
	keys map[string][]version
}

// version is one write of a key: an entry, or a delete (nil).
type version struct {
	entry   *kv.Entry
	at      time.Time
	expires time.Time // zero: never
}

func newNamespace(w *world) *namespace {
	return &namespace{w: w, keys: make(map[string][]version)}
}

// live is e if it has not expired at now.
func (v version) live(now time.Time) *kv.Entry {
	if v.entry == nil || (!v.expires.IsZero() && !now.Before(v.expires)) {
		return nil
	}
	return v.entry
}

// latest is what key holds now, with no staleness: what the simulator's
// checks read.
func (n *namespace) latest(key string) *kv.Entry {
	vs := n.keys[key]
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1].live(n.w.now())
}

// read is what a read of key returns: the latest version, or, when the
// history has stale reads, any version the key held within staleWindow.
func (n *namespace) read(key string) *kv.Entry {
	vs := n.keys[key]
	now := n.w.now()
	// first is the version that was current staleWindow ago (-1: none).
	first := currentAt(vs, now.Add(-staleWindow))
	choices := len(vs) - 1 - first // versions older than the latest a read may see
	if choices == 0 || !n.w.staleReads || n.w.direct {
		if len(vs) == 0 {
			return nil
		}
		return vs[len(vs)-1].live(now)
	}
	back := n.w.choose(choices+1, "kv stale")
	if back == 0 {
		return vs[len(vs)-1].live(now)
	}
	n.w.count("kv stale read")
	if i := len(vs) - 1 - back; i >= 0 {
		return vs[i].live(now)
	}
	return nil
}

// call carries one KV call: it counts against the invocation, yields on
// the way there and back, and may fail before it takes effect or, for a
// write, after.
func (n *namespace) call(ctx context.Context, op, key string, write bool, apply func() error) error {
	w := n.w
	if w.direct {
		return apply()
	}
	w.countOp(op, key)
	w.sched.yield()
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.fault("kv " + op + " fails before") {
		return errKVFault
	}
	if write && w.faults() {
		if vs := n.keys[key]; len(vs) > 0 && w.now().Sub(vs[len(vs)-1].at) < writeEvery && w.choose(2, "kv rate") == 1 {
			w.count("kv write rate-limited")
			return errKVRateLimit
		}
	}
	if err := apply(); err != nil {
		return err
	}
	w.sched.yield()
	if write && w.fault("kv "+op+" fails after") {
		return errKVFault
	}
	return nil
}

func (n *namespace) write(key string, e *kv.Entry, ttl time.Duration) {
	v := version{entry: e, at: n.w.now()}
	if ttl > 0 {
		v.expires = v.at.Add(ttl.Truncate(time.Second))
	}
	vs := append(n.keys[key], v)
	// A read or a lagging list sees a key as it was at most staleWindow
	// ago: the versions before the one current then are dropped, so that
	// a long history's memory is its last minute's, not every write's.
	n.keys[key] = vs[max(currentAt(vs, v.at.Add(-staleWindow)), 0):]
	n.w.observeKVWrite(key, e, v.expires)
}

// Get implements kv.Namespace.
func (n *namespace) Get(ctx context.Context, key string) (kv.Entry, error) {
	var got *kv.Entry
	err := n.call(ctx, "get", key, false, func() error {
		if err := kv.CheckKey(key); err != nil {
			return err
		}
		got = n.read(key)
		return nil
	})
	switch {
	case err != nil:
		return kv.Entry{}, err
	case got == nil:
		return kv.Entry{}, kv.ErrNotFound
	}
	return *got, nil
}

// GetMany implements kv.ManyGetter: one operation, each key read on its
// own, as KV's caches hold each key apart.
func (n *namespace) GetMany(ctx context.Context, keys ...string) ([]*kv.Entry, error) {
	got := make([]*kv.Entry, len(keys))
	err := n.call(ctx, "get", strings.Join(keys, " "), false, func() error {
		for i, key := range keys {
			if err := kv.CheckKey(key); err != nil {
				return err
			}
			if e := n.read(key); e != nil {
				c := *e
				got[i] = &c
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// Put implements kv.Namespace, with KV's limits.
func (n *namespace) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	return n.call(ctx, "put", key, true, func() error {
		if err := kv.CheckKey(key); err != nil {
			return err
		}
		if err := kv.CheckTTL(opts.TTL); err != nil {
			return err
		}
		if len(e.Metadata) > kv.MaxMetadataBytes {
			return kv.ErrInvalid
		}
		e.Metadata = slices.Clone(e.Metadata)
		n.write(key, &e, opts.TTL)
		return nil
	})
}

// Delete implements kv.Namespace.
func (n *namespace) Delete(ctx context.Context, key string) error {
	return n.call(ctx, "delete", key, true, func() error {
		if err := kv.CheckKey(key); err != nil {
			return err
		}
		n.write(key, nil, 0)
		return nil
	})
}

// List implements kv.Lister: the keys as they stood at one moment up to
// staleWindow ago, as KV's list lags behind writes.
func (n *namespace) List(ctx context.Context, prefix, cursor string, limit int) ([]kv.Listed, string, error) {
	var page []kv.Listed
	var next string
	err := n.call(ctx, "list", prefix, false, func() error {
		at := n.w.now()
		if n.w.staleReads && !n.w.direct {
			if lag := n.w.choose(3, "kv list lag"); lag > 0 {
				n.w.count("kv list lagged")
				at = at.Add(-time.Duration(lag) * staleWindow / 2)
			}
		}
		var names []string
		for name, vs := range n.keys {
			if strings.HasPrefix(name, prefix) && name > cursor && asOf(vs, at) != nil {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		if len(names) > limit {
			names = names[:limit]
			next = names[limit-1]
		}
		for _, name := range names {
			page = append(page, kv.Listed{Name: name, Metadata: asOf(n.keys[name], at).Metadata})
		}
		return nil
	})
	return page, next, err
}

// asOf is the live entry vs held at at.
func asOf(vs []version, at time.Time) *kv.Entry {
	if i := currentAt(vs, at); i >= 0 {
		return vs[i].live(at)
	}
	return nil
}

// currentAt is the index of the version of vs current at at: the last
// written no later than at; -1 if none was.
func currentAt(vs []version, at time.Time) int {
	i := len(vs) - 1
	for i >= 0 && vs[i].at.After(at) {
		i--
	}
	return i
}
