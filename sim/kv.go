package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
)

// KV's weaknesses, as the platform documents them (docs/reliability.md,
// The simulator's KV).
const (
	// locations is how many of Cloudflare's locations the isolates live
	// in: each caches what it reads of a key apart from the others.
	locations = 2
	// cacheTTL is how long a location keeps what it read of a key, a
	// value or "not found", and serves it to every read there: KV's
	// cacheTtl, 60 s by default and at least.
	cacheTTL = 60 * time.Second
	// maxCacheLife is how long a location may keep serving one read's
	// version, its cache entry renewed stale now and then (visibility
	// "takes longer in locations which have recently read a previous
	// version"); maxLandLate is how late a write may become visible to a
	// location that reads it afresh. A read is then at most staleMost
	// stale.
	maxCacheLife = 5 * time.Minute
	maxLandLate  = 4 * time.Minute
	staleMost    = maxCacheLife + maxLandLate
	// listLagMost is how far back a lagging list may look, now and then:
	// most lag within a minute.
	listLagMost = 3 * cacheTTL
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
// every key, written to the central store, and each location's cache of
// what it read, which a read there is served from. Nothing is atomic:
// each call yields before it takes effect and after. It implements
// kv.Namespace, kv.ManyGetter and kv.Lister.
type namespace struct {
	w    *world
	keys map[string][]version
	// caches is, per location, what it read of each key.
	caches [locations]map[string]cached
	// writes counts the writes made, so that a read and a write at one
	// instant of the virtual clock are still ordered; reads the reads.
	writes, reads int
	// observe is told of every write, once made: the checker's
	// observeKVWrite.
	observe func(key string, e *kv.Entry, expires time.Time)
}

// What a run counts of the model's staleness, each with its realised
// rate: of reads, of writes, of cache entries that ended stale, of lists.
const (
	kvServedCached  = "kv read served from its location's cache"
	kvStaleRead     = "kv stale read"
	kvStaleUnder10s = "kv stale read, its write under 10 s old"
	kvStale10to60s  = "kv stale read, its write 10 to 60 s old"
	kvStale60to180s = "kv stale read, its write 60 to 180 s old"
	kvStaleOver180s = "kv stale read, its write over 180 s old"
	kvCachedAbsent  = "kv cached not-found served over a live value"
	kvRenewedStale  = "kv location kept a stale version past its cache entry"
	kvLandedLate    = "kv write visible late in its own location"
	kvListLagged    = "kv list lagged"
	kvListLagPast   = "kv list lagged past a minute"
)

// tally gives the counts of reads their chances: every read.
func (n *namespace) tally() {
	if n.reads == 0 {
		return
	}
	for _, what := range []string{kvServedCached, kvStaleRead, kvStaleUnder10s, kvStale10to60s, kvStale60to180s, kvStaleOver180s, kvCachedAbsent} {
		n.w.chances[what] = n.reads
	}
}

// version is one write of a key: an entry, or a delete (nil).
type version struct {
	entry   *kv.Entry
	at      time.Time
	expires time.Time // zero: never
	// visible is when a location that reads the key afresh sees it:
	// at, or later for a write that lands late.
	visible time.Time
	by      *actor // nil: the history's set-up
	seq     int    // the namespace's writes before it
}

// cached is what a location read of a key, which it serves to every read
// there until the entry ends.
type cached struct {
	seq   int       // the version read; -1: the key had none visible
	at    time.Time // when the location read it
	until time.Time // when the entry ends
}

// miss is a read of a key that returned an older version than its latest:
// the writes it missed, and who read, where and what. The checker's
// allowances over KV name such a miss, the event KV's documentation
// allows.
type miss struct {
	at     time.Time
	reader *actor
	missed []version // the versions after the one read, oldest first
	// loc is the location read from; readSeq the namespace's writes
	// before the read; got the seq of the version returned, -1 for none
	// (not found); cached whether the location served it from what it
	// had read before (a cached "not found" too).
	loc     int
	readSeq int
	got     int
	cached  bool
	// entry is what the read returned; nil for none.
	entry *kv.Entry
}

func newNamespace(w *world) *namespace {
	n := &namespace{w: w, keys: make(map[string][]version), observe: w.observeKVWrite}
	for i := range n.caches {
		n.caches[i] = make(map[string]cached)
	}
	return n
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

// locationOf is the location a reads from: its isolate's; the driver's
// and the alarm's (which read no KV) the first.
func locationOf(a *actor) int {
	if a == nil || a.inst == nil {
		return 0
	}
	return a.inst.loc
}

// read is what a read of key returns in the running actor's location: what
// the location's cache holds, while its entry lasts; else the latest
// version visible there, which the location then caches for cacheTTL. An
// entry that ends holding an old version is now and then renewed with it,
// up to maxCacheLife. A read that returns an older version than the
// latest is recorded as a miss of the writes after it.
func (n *namespace) read(key string) *kv.Entry {
	w := n.w
	vs := n.keys[key]
	now := w.now()
	if w.direct {
		if len(vs) == 0 {
			return nil
		}
		return vs[len(vs)-1].live(now) // the checks: no staleness
	}
	a := w.sched.running
	if a != nil {
		if a.reads == nil {
			a.reads, a.readAt = make(map[string]int), make(map[string]time.Time)
		}
		a.reads[key], a.readAt[key] = n.writes, now
	}
	n.reads++
	loc := locationOf(a)
	c, hit := n.caches[loc][key]
	i := indexOf(vs, c.seq)
	if hit && c.seq >= 0 && i < 0 {
		hit = false // pruned: older than any read may be
	}
	fresh := visibleAt(vs, now)
	if hit && !now.Before(c.until) {
		hit = false
		// Visibility "takes longer in locations which have recently read
		// a previous version": now and then the entry is renewed with it,
		// for as many periods as have passed.
		for i < fresh && c.until.Add(cacheTTL).Sub(c.at) <= maxCacheLife {
			w.chances[kvRenewedStale]++
			if !w.coin(w.staleOdds+1, kvRenewedStale) {
				break
			}
			w.count(kvRenewedStale)
			if c.until = c.until.Add(cacheTTL); now.Before(c.until) {
				hit = true
				break
			}
		}
	}
	if hit {
		w.count(kvServedCached)
	} else {
		i = fresh
		c = cached{seq: -1, at: now, until: now.Add(cacheTTL)}
		if i >= 0 {
			c.seq = vs[i].seq
		}
	}
	n.caches[loc][key] = c
	var got *kv.Entry
	if i >= 0 {
		got = vs[i].live(now)
	}
	w.checkWrittenPhase(key, got, now)
	read := kvRead{reader: a, at: now, got: got}
	if i < len(vs)-1 {
		n.missed(key, vs, i, loc, hit, got)
		read.missed = slices.Clone(vs[i+1:])
	}
	if a != nil {
		if w.readLog == nil {
			w.readLog = make(map[string][]kvRead)
		}
		w.readLog[key] = append(w.readLog[key], read)
	}
	return got
}

// kvRead is one read of a KV key: who read it and when, what it got, and
// the versions after it that it missed (none for a fresh read).
type kvRead struct {
	reader *actor
	at     time.Time
	got    *kv.Entry
	missed []version
}

// lastRead is reader's (an origin's) last read of kvKey at or before
// until; nil if it made none.
func (w *world) lastRead(kvKey string, reader *actor, until time.Time) *kvRead {
	reads := w.readLog[kvKey]
	for i := len(reads) - 1; i >= 0; i-- {
		if r := &reads[i]; r.reader.origin() == reader && !r.at.After(until) {
			return r
		}
	}
	return nil
}

// checkWrittenPhase checks a claim a Worker read from KV at now: the
// phase written beside its flags agrees with them (intake.CheckWrittenPhase).
func (w *world) checkWrittenPhase(kvKey string, e *kv.Entry, now time.Time) {
	name, ok := strings.CutPrefix(kvKey, "pending:")
	if !ok || e == nil {
		return
	}
	if err := intake.CheckWrittenPhase(w.decodeClaim(name, e, now)); err != nil {
		w.violate("%s, read by %s: %v", kvKey, actorName(w.sched.running), err)
	}
}

// missed records a read in loc of key that returned vs[i] (none, -1), not
// its latest version, and counts it by how long the first write it missed
// had been made.
func (n *namespace) missed(key string, vs []version, i, loc int, hit bool, got *kv.Entry) {
	w := n.w
	now := w.now()
	m := miss{at: now, reader: w.sched.running, missed: slices.Clone(vs[i+1:]), loc: loc, readSeq: n.writes, got: -1, cached: hit, entry: got}
	if i >= 0 {
		m.got = vs[i].seq
	}
	w.misses[key] = append(w.misses[key], m)
	w.count(kvStaleRead)
	age := now.Sub(m.missed[0].at)
	switch {
	case age < 10*time.Second:
		w.count(kvStaleUnder10s)
	case age < cacheTTL:
		w.count(kvStale10to60s)
	case age < 3*cacheTTL:
		w.count(kvStale60to180s)
	default:
		w.count(kvStaleOver180s)
	}
	if hit && got == nil && vs[len(vs)-1].live(now) != nil {
		w.count(kvCachedAbsent)
	}
	if name, ok := keyNameOf(key); ok {
		last := m.missed[len(m.missed)-1]
		w.kvEvent(name, fmt.Sprintf("%s read %s stale at %s in location %d, missing its write at %s by %s",
			actorName(m.reader), key, now.Format("15:04:05.000"), loc, last.at.Format("15:04:05.000"), actorName(last.by)))
	}
}

// indexOf is the index in vs of the version seq, -1 if none is.
func indexOf(vs []version, seq int) int {
	for i := len(vs) - 1; i >= 0 && vs[i].seq >= seq; i-- {
		if vs[i].seq == seq {
			return i
		}
	}
	return -1
}

// visibleAt is the index of the latest version of vs a location that
// reads it afresh sees at now; -1 if none.
func visibleAt(vs []version, now time.Time) int {
	i := len(vs) - 1
	for i >= 0 && vs[i].visible.After(now) {
		i--
	}
	return i
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
		if name, ok := strings.CutPrefix(key, "pending:"); ok && write {
			w.breakChainOf(name, breakClaimWrite, "%s was told its %s of the claim failed", w.sched.running.name, op)
		}
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
		if name, ok := strings.CutPrefix(key, "pending:"); ok {
			w.breakChainOf(name, breakClaimWrite, "%s was told its %s of the claim failed, which landed", w.sched.running.name, op)
		}
		return errKVFault
	}
	return nil
}

// write makes e (nil: a delete) key's latest version. Its location sees
// it at once, in place of what it had cached, and every other location
// once its cache entry ends; but now and then, at the history's stale
// odds, a write lands late: no location sees it for a while, not even
// its own, which serves what it had cached meanwhile.
func (n *namespace) write(key string, e *kv.Entry, ttl time.Duration) {
	w := n.w
	if name, ok := keyNameOf(key); ok && !w.direct {
		before := w.peekKV(name)
		defer func() {
			op := "kv put " + key
			if e == nil {
				op = "kv delete " + key
			}
			w.checkRefines(name, before, w.peekKV(name), op)
		}()
	}
	v := version{entry: e, at: w.now(), by: w.sched.running, seq: n.writes}
	v.visible = v.at
	n.writes++
	if w.direct {
		v.by = nil
	}
	if ttl > 0 {
		v.expires = v.at.Add(ttl.Truncate(time.Second))
	}
	if !w.direct {
		w.chances[kvLandedLate]++
		if w.coin(w.staleOdds+1, kvLandedLate) {
			w.count(kvLandedLate)
			late := []time.Duration{time.Second, 5 * time.Second, 20 * time.Second, 50 * time.Second}[w.uniform(4, "kv write lands how late")]
			if w.coin(3, "kv write lands minutes late") {
				late = []time.Duration{2 * time.Minute, maxLandLate}[w.choose(2, "kv write lands how many minutes late")]
			}
			v.visible = v.at.Add(late)
		} else {
			n.caches[locationOf(v.by)][key] = cached{seq: v.seq, at: v.at, until: v.at.Add(cacheTTL)}
		}
	}
	vs := append(n.keys[key], v)
	// No read is served a version older than the one current staleMost
	// ago: the versions before it are dropped, so that a long history's
	// memory is its last minutes', not every write's.
	n.keys[key] = vs[max(currentAt(vs, v.at.Add(-staleMost)), 0):]
	n.observe(key, e, v.expires)
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
// history's stale odds a list looks back up to a minute, now and then up
// to listLagMost, and each key changed since then shows as it was or as
// it is, key by key; now and then a page is empty with more to come.
func (n *namespace) List(ctx context.Context, prefix, cursor string, limit int) ([]kv.Listed, string, error) {
	var page []kv.Listed
	var next string
	err := n.call(ctx, "list", prefix, false, func() error {
		w := n.w
		now := w.now()
		if !w.direct {
			w.chances[kvListLagged]++
		}
		lagging := !w.direct && w.coin(w.staleOdds, kvListLagged)
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
		window := cacheTTL
		if lagging {
			w.count(kvListLagged)
			w.chances[kvListLagPast]++
			if w.coin(3, kvListLagPast) {
				w.count(kvListLagPast)
				window = listLagMost
			}
		}
		at := now.Add(-window)
		for _, name := range names {
			vs := n.keys[name]
			e := vs[len(vs)-1].live(now)
			if lagging && vs[len(vs)-1].at.After(at) && w.choose(2, "kv list key lags") == 1 {
				e = asOf(vs, at.Add(time.Duration(w.choose(4, "kv list lag"))*window/4))
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
