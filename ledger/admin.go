package ledger

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/jsjson"
	"github.com/edge-orders/edge-orders/internal/uuid"
)

// What an operator's listing costs an object: it reads at most
// maxListScan rows without an outcome per call, scanBatch at a time, and
// a listing calls at most maxListCalls objects per page.
const (
	scanBatch    = 256
	maxListScan  = 4 * scanBatch
	maxListCalls = 32
)

// List returns client's keys after the key after, in key order, whose
// state at now is in states: at most limit, read from at most maxListScan
// rows without an outcome. next is the last key it read when more rows
// may follow, "" when none do.
func (o *Object) List(client, after string, states intake.Attention, limit int) (keys []intake.Listed, next string) {
	now := o.now()
	o.listRowsRead = 0
	for scanned := 0; scanned < maxListScan; {
		rows, read := o.rows.scan(after, scanBatch)
		o.listRowsRead += read
		for _, r := range rows {
			after = r.key
			scanned++
			if r.client != client {
				continue // MemoryStore's one object holds every client's rows
			}
			rec := r.record(now)
			if intake.AttentionOf(rec)&states == 0 {
				continue
			}
			keys = append(keys, intake.Listed{Key: keyOf(r), Record: rec})
			if len(keys) == limit {
				return keys, after
			}
		}
		if len(rows) < scanBatch {
			return keys, ""
		}
	}
	return keys, after
}

// Purge deletes key's row if its outcome is stored, and returns what it
// found; a claim or an open key stays as it is. A purge with the token of
// the object's last purge of key, within repurgeWindow, returns what that
// one purged: the same call retried after its answer was lost reports the
// purge it made, not a key that was never there. "" is no token.
func (o *Object) Purge(key intake.Key, token, orderID string) intake.Record {
	now := o.now()
	// The token first: each call's own tombstone, so that no other
	// purge's hides it, and a retry that comes after a new receipt was
	// committed under the key reports its own purge and deletes nothing.
	slot := token + ":" + key.String() // a token has no colon
	if token != "" {
		if last, ok := o.rows.purged(slot); ok && now.Before(last.until) {
			return last.rec
		}
	}
	rec := intake.Record{State: intake.Absent}
	if r, ok := o.rows.get(key.String()); ok {
		rec = r.record(now)
	}
	if rec.State == intake.Stored && (orderID == "" || intake.OrderIDOf(rec) == orderID) {
		o.rows.delete(key.String())
	}
	// A tombstone, in the object's storage, so that the retry finds it in
	// whatever isolate it comes to; it holds what the purge found, purged
	// or not, so the sweep deletes it as soon as its window ends.
	if token != "" {
		p := purged{key: slot, token: token, rec: rec, until: now.Add(repurgeWindow)}
		o.rows.putPurged(p)
		o.sweepBy(p.until)
	}
	return rec
}

// repurgeWindow is how long a purge's answer is kept for its retry: a
// round trip retried at once, with room to spare.
const repurgeWindow = time.Minute

// purged is a purge's tombstone: its name (the call's token and the key,
// so that no other purge's hides it), the token, what the purge found,
// purged or not, and until when a retry with the token gets it.
type purged struct {
	key   string // token:key
	token string
	rec   intake.Record
	until time.Time
}

// sweepBy has the object sweep at at, or sooner.
func (o *Object) sweepBy(at time.Time) {
	if next := o.rows.nextSweep(); !next.IsZero() && !at.Before(next) {
		return
	}
	o.rows.setNextSweep(at)
	o.scheduleAlarm(at)
}

// keyOf names r's key.
func keyOf(r row) intake.Key {
	id := r.key
	if r.client != "" {
		id = r.key[len(r.client)+1:]
	}
	return intake.Key{Client: r.client, ID: id}
}

// scan returns up to limit rows without an outcome after the key after,
// in key order. A map has no index: it reads every row.
func (t *memTable) scan(after string, limit int) ([]row, int) {
	var rows []row
	for _, r := range t.rows {
		if r.key > after && r.receipt == nil {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.key, b.key) })
	return rows[:min(len(rows), limit)], len(t.rows)
}

// ListRowsRead is how many rows the object's last List read.
func (o *Object) ListRowsRead() int { return o.listRowsRead }

// List implements intake.AdminStore over the one object.
func (m *MemoryStore) List(ctx context.Context, q intake.ListQuery) (intake.ListPage, error) {
	return listShards(ctx, q, 1, func(ctx context.Context, client string, _ int, after string, limit int) (keys []intake.Listed, next string, err error) {
		err = m.do(ctx, "list", func() { keys, next = m.obj.List(client, after, q.States, limit) })
		return keys, next, err
	})
}

// Purge implements intake.AdminStore.
func (m *MemoryStore) Purge(ctx context.Context, key intake.Key, orderID string) (rec intake.Record, err error) {
	token := uuid.New() // one for the call and its retry, as Client's
	err = m.do(ctx, "purge", m.watched(key, "purge", func() { rec = m.obj.Purge(key, token, orderID) }))
	return rec, err
}

// listOne lists one object: client's shard n, from after.
type listOne func(ctx context.Context, client string, n int, after string, limit int) ([]intake.Listed, string, error)

// listShards fills a page of q from each client's shards objects in turn,
// calling at most maxListCalls of them. Its cursor names the object and
// the key to go on from: client, shard and key, base64url-encoded.
func listShards(ctx context.Context, q intake.ListQuery, shards int, one listOne) (intake.ListPage, error) {
	ci, n, after, err := decodeListCursor(q.Cursor, q.Clients, shards)
	if err != nil {
		return intake.ListPage{}, err
	}
	var page intake.ListPage
	for calls := 0; ci < len(q.Clients) && calls < maxListCalls && len(page.Keys) < q.Limit; calls++ {
		keys, next, err := one(ctx, q.Clients[ci], n, after, q.Limit-len(page.Keys))
		if err != nil {
			return intake.ListPage{}, err
		}
		page.Keys = append(page.Keys, keys...)
		if after = next; after == "" {
			if n++; n == shards {
				ci, n = ci+1, 0
			}
		}
	}
	if ci < len(q.Clients) {
		page.Cursor = encodeListCursor(q.Clients[ci], n, after)
	}
	return page, nil
}

// encodeListCursor names where a listing goes on.
func encodeListCursor(client string, n int, after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(client + "\n" + strconv.Itoa(n) + "\n" + after))
}

// decodeListCursor reads a cursor encodeListCursor wrote for one of
// clients and a shard under shards: the client's index, the shard and the
// key to go on from. "" is the first page.
func decodeListCursor(cursor string, clients []string, shards int) (ci, n int, after string, err error) {
	if cursor == "" {
		return 0, 0, "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, 0, "", intake.ErrBadCursor
	}
	parts := strings.SplitN(string(b), "\n", 3)
	if len(parts) != 3 {
		return 0, 0, "", intake.ErrBadCursor
	}
	n, err = strconv.Atoi(parts[1])
	if err != nil || n < 0 || n >= shards {
		return 0, 0, "", intake.ErrBadCursor
	}
	for i, c := range clients {
		if c == parts[0] {
			return i, n, parts[2], nil
		}
	}
	return 0, 0, "", intake.ErrBadCursor
}

// shardName is the name of client's shard n (ObjectName).
func shardName(client string, n int) string {
	if client == "" {
		client = "open"
	}
	return client + "/" + strconv.Itoa(n)
}

// The list call's members: the request's, and its answer's.
const (
	mAfter    = "after"
	mStates   = "states"
	mLimit    = "limit"
	mNext     = "next"
	mRows     = "rows"
	mRowsRead = "rowsRead"
)

// encodeList is a list call's argument.
func encodeList(client, after string, states intake.Attention, limit int) []byte {
	var d doc
	d.member(mClient)
	d.b = jsjson.AppendString(d.b, client)
	d.str(mAfter, after)
	d.int(mStates, int64(states))
	d.int(mLimit, int64(limit))
	return d.bytes()
}

func decodeList(b []byte) (client, after string, states intake.Attention, limit int, err error) {
	o, err := jsjson.Parse(b, mClient, mAfter, mStates, mLimit)
	if err != nil || !o.IsObject() {
		return "", "", 0, 0, errNotRecord
	}
	num := func(name string) float64 {
		if v := o.Get(name); v.Kind == jsjson.Number {
			return v.Num
		}
		return 0
	}
	limit = int(num(mLimit))
	if limit < 1 || limit > intake.MaxListLimit {
		limit = intake.DefaultListLimit
	}
	return o.Get(mClient).Str, o.Get(mAfter).Str, intake.Attention(num(mStates)), limit, nil
}

// encodeListed is a list call's answer: the key to go on from, the rows
// it read, for those who measure it, and its keys, one a line, each its
// key's document and its record's, a tab between (both are JSON, whose
// strings escape every control character).
func encodeListed(keys []intake.Listed, next string, read int) []byte {
	var rows []byte
	for i, l := range keys {
		if i > 0 {
			rows = append(rows, '\n')
		}
		rows = append(rows, encodeKey(l.Key)...)
		rows = append(rows, '\t')
		rows = append(rows, encodeRecord(l.Record)...)
	}
	var d doc
	d.str(mNext, next)
	d.str(mRows, string(rows))
	d.int(mRowsRead, int64(read))
	return d.bytes()
}

func decodeListed(b []byte) (keys []intake.Listed, next string, err error) {
	o, err := jsjson.Parse(b, mNext, mRows)
	if err != nil || !o.IsObject() {
		return nil, "", errNotRecord
	}
	rows := o.Get(mRows).Str
	if rows == "" {
		return nil, o.Get(mNext).Str, nil
	}
	for _, line := range strings.Split(rows, "\n") {
		k, r, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, "", errNotRecord
		}
		key, err := decodeKey([]byte(k))
		if err != nil {
			return nil, "", err
		}
		rec, err := decodeRecord([]byte(r))
		if err != nil {
			return nil, "", err
		}
		keys = append(keys, intake.Listed{Key: key, Record: rec})
	}
	return keys, o.Get(mNext).Str, nil
}

// serveAdmin runs the object's admin methods, list and purge, with their
// JSON argument; ok is false for any other method.
func serveAdmin(o *Object, method string, arg []byte) (res []byte, ok bool, err error) {
	switch method {
	case "list":
		client, after, states, limit, err := decodeList(arg)
		if err != nil {
			return nil, true, err
		}
		keys, next := o.List(client, after, states, limit)
		return encodeListed(keys, next, o.ListRowsRead()), true, nil
	case "purge":
		key, token, orderID, err := decodePurge(arg)
		if err != nil {
			return nil, true, err
		}
		return encodeRecord(o.Purge(key, token, orderID)), true, nil
	}
	return nil, false, nil
}
