package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/kv"
)

// KV's weaknesses, as the platform documents them.
const (
	// staleWindow is how long a read may miss a write, in the location
	// that made it or any other, as Cloudflare documents it: 60 s "or
	// more". A stale read goes back as far as staleMost now and then
	// (2^-staleBeyondOdds of them).
	staleWindow     = 60 * time.Second
	staleMost       = 3 * staleWindow
	staleBeyondOdds = 5
	// writeEvery is how often one key takes a write.
	writeEvery = time.Second
	// maxOpsPerInvocation is how many KV operations one invocation may make.
	maxOpsPerInvocation = 1000
)

var (
	errKVFault     = errors.New("sim: KV call failed")
	errKVRateLimit = fmt.Errorf("sim: KV PUT failed: 429 too many requests to one key: %w", kv.ErrRateLimited)
)

// namespace is Workers KV as the simulator sees it: every version of
// every key, so that a read may return any value the key held within
// staleWindow, as KV's caches do. Nothing is atomic: each call yields
// before it takes effect and after. It implements kv.Namespace,
// kv.ManyGetter and kv.Lister.
type namespace struct {
	w    *world
	keys map[string][]version
	// writes counts the writes made, so that a read and a write at one
	// instant of the virtual clock are still ordered.
	writes int
}

// version is one write of a key: an entry, or a delete (nil).
type version struct {
	entry   *kv.Entry
	at      time.Time
	expires time.Time // zero: never
	by      *actor    // nil: the history's set-up
	seq     int       // the namespace's writes before it
}

// miss is a read of a key that returned an older version than its latest:
// the writes it missed, and who read. The checker's allowances over KV
// name such a miss, the event KV's documentation allows.
type miss struct {
	at     time.Time
	reader *actor
	missed []version // the versions after the one read, oldest first
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

// read is what a read of key returns: the latest version, or, at the
// history's stale odds, an older one the key held within staleWindow (now
// and then staleMost), as KV's caches serve; a stale read is recorded as
// a miss of the writes after it.
func (n *namespace) read(key string) *kv.Entry {
	w := n.w
	vs := n.keys[key]
	now := w.now()
	if a := w.sched.running; a != nil && !w.direct {
		if a.reads == nil {
			a.reads, a.readAt = make(map[string]int), make(map[string]time.Time)
		}
		a.reads[key], a.readAt[key] = n.writes, w.now()
	}
	latest := len(vs) - 1
	if latest < 0 {
		return nil
	}
	if w.direct || latest == currentAt(vs, now.Add(-staleMost)) {
		return vs[latest].live(now) // no older version is still served
	}
	w.chances["kv stale read"]++
	if !w.coin(w.staleOdds, "kv stale") {
		return vs[latest].live(now)
	}
	window := staleWindow
	if w.coin(staleBeyondOdds, "kv stale past a minute") {
		window = staleMost
	}
	first := currentAt(vs, now.Add(-window))
	if latest == first {
		return vs[latest].live(now)
	}
	// 1 is the version before the latest, latest-first the one current a
	// window ago, or nothing if the key had none then.
	back := 1 + w.choose(latest-first, "kv stale version")
	w.count("kv stale read")
	if window > staleWindow {
		w.count("kv stale read past a minute")
	}
	i := latest - back
	m := miss{at: now, reader: w.sched.running, missed: slices.Clone(vs[i+1:])}
	w.misses[key] = append(w.misses[key], m)
	if name, ok := keyNameOf(key); ok {
		last := m.missed[len(m.missed)-1]
		w.kvEvent(name, fmt.Sprintf("%s read %s stale at %s, missing its write at %s by %s",
			actorName(m.reader), key, now.Format("15:04:05.000"), last.at.Format("15:04:05.000"), actorName(last.by)))
	}
	if i < 0 {
		return nil
	}
	return vs[i].live(now)
}

// call carries one KV call: it counts against the invocation, yields on
// the way there and back, and may fail before it takes effect or, for a
// write, after.
//
// A write to a key within writeEvery of its last is refused with a 429,
// always: KV's documented limit, which faults or not a release that
// closely follows its claim meets.
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
	if write {
		if vs := n.keys[key]; len(vs) > 0 && w.now().Sub(vs[len(vs)-1].at) < writeEvery {
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
	v := version{entry: e, at: n.w.now(), by: n.w.sched.running, seq: n.writes}
	n.writes++
	if n.w.direct {
		v.by = nil
	}
	if ttl > 0 {
		v.expires = v.at.Add(ttl.Truncate(time.Second))
	}
	vs := append(n.keys[key], v)
	// A read or a lagging list sees a key as it was at most staleMost
	// ago: the versions before the one current then are dropped, so that
	// a long history's memory is its last minutes', not every write's.
	n.keys[key] = vs[max(currentAt(vs, v.at.Add(-staleMost)), 0):]
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

// GetMany implements kv.ManyGetter: one round trip, each key read on its
// own, as KV's caches hold each key apart, and an operation per key, as
// the binding's reads at once are (Promise.all of gets).
func (n *namespace) GetMany(ctx context.Context, keys ...string) ([]*kv.Entry, error) {
	got := make([]*kv.Entry, len(keys))
	for _, key := range keys[1:] {
		n.w.countOp("get", key)
	}
	err := n.call(ctx, "get", keys[0], false, func() error {
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

// List implements kv.Lister, as KV's list lags behind writes: at the
// history's stale odds a list looks back up to staleWindow, and each key
// changed since then shows as it was or as it is, key by key; now and
// then a page is empty with more to come.
func (n *namespace) List(ctx context.Context, prefix, cursor string, limit int) ([]kv.Listed, string, error) {
	var page []kv.Listed
	var next string
	err := n.call(ctx, "list", prefix, false, func() error {
		w := n.w
		now := w.now()
		lagging := !w.direct && w.coin(w.staleOdds, "kv list lag")
		var names []string
		for name := range n.keys {
			if strings.HasPrefix(name, prefix) && name > cursor {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		if lagging && len(names) > 0 && w.coin(3, "kv list empty page") {
			w.count("kv list page empty with more to come")
			next = max(cursor, prefix)
			return nil
		}
		if lagging {
			w.count("kv list lagged")
		}
		at := now.Add(-staleWindow)
		for _, name := range names {
			vs := n.keys[name]
			e := vs[len(vs)-1].live(now)
			if lagging && vs[len(vs)-1].at.After(at) && w.choose(2, "kv list key lags") == 1 {
				e = asOf(vs, at.Add(time.Duration(w.choose(4, "kv list lag"))*staleWindow/4))
			}
			if e == nil {
				continue
			}
			if len(page) == limit {
				next = page[limit-1].Name
				break
			}
			page = append(page, kv.Listed{Name: name, Metadata: e.Metadata})
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

// keyNameOf is the scoped key a KV key of the layout holds.
func keyNameOf(kvKey string) (keyName, bool) {
	if name, ok := strings.CutPrefix(kvKey, "pending:"); ok {
		return name, true
	}
	return strings.CutPrefix(kvKey, "result:")
}

func actorName(a *actor) string {
	if a == nil {
		return "the set-up"
	}
	return a.name
}
