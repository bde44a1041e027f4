package kv

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
)

// maxListCalls bounds the list calls of one page of an operator's
// listing: each is one KV operation of the 1,000 an invocation may make,
// and reads a page of at most listPage names.
const maxListCalls = 10

// cursorPrefix marks the cursors the listings hand out, so that one from
// elsewhere is refused rather than passed on to KV; each names the list
// it goes on with (encodeCursor).
const cursorPrefix = "k"

// List implements intake.AdminStore from the pending:<key> list and the
// metadata beside each name, with no read per key: a claim's order kept
// in its value (a symbol too long for the metadata) is left out, and a
// claim left beside a stored outcome (a failed delete, or
// KV_CLAIM_AFTER_RECEIPT=expire) is listed as its metadata says until
// the settler's sweep deletes it: Lookup says what is stored. The list
// lags behind writes, as KV's does. Each list call asks for no more names
// than the page still has room for, so a page ends where a KV page ends.
func (k *Store) List(ctx context.Context, q intake.ListQuery) (intake.ListPage, error) {
	lister, ok := k.ns.(Lister)
	if !ok {
		return intake.ListPage{}, errors.New("kv: the namespace cannot list its keys")
	}
	clients := make(map[string]bool, len(q.Clients))
	scoped := false
	for _, c := range q.Clients {
		clients[c] = true
		scoped = scoped || c != ""
	}
	prefix := pendingPrefix
	if len(q.Clients) == 1 && scoped {
		prefix += q.Clients[0] + ":"
	}
	cursor, err := decodeCursor(q.Cursor, prefix)
	if err != nil {
		return intake.ListPage{}, err
	}
	var page intake.ListPage
	for calls := 0; calls < maxListCalls && len(page.Keys) < q.Limit; calls++ {
		names, next, err := lister.List(ctx, prefix, cursor, q.Limit-len(page.Keys))
		if err != nil {
			return intake.ListPage{}, errs.Prefix("kv: list", err)
		}
		for _, l := range names {
			key, ok := nameKey(strings.TrimPrefix(l.Name, pendingPrefix), decodeMetadata(l.Metadata).client, scoped)
			if !ok || !clients[key.Client] {
				continue
			}
			rec := k.claimRecord(Entry{Value: pendingValue, Metadata: l.Metadata})
			if intake.AttentionOf(rec)&q.States == 0 {
				continue
			}
			page.Keys = append(page.Keys, intake.Listed{Key: key, Record: rec})
		}
		if cursor = next; cursor == "" {
			return page, nil
		}
	}
	page.Cursor = encodeCursor(prefix, cursor)
	return page, nil
}

// encodeCursor wraps cursor, KV's own, of the list of the names that
// start with prefix.
func encodeCursor(prefix, cursor string) string {
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(prefix+"\n"+cursor))
}

// decodeCursor reads a cursor encodeCursor made for the list of prefix:
// KV's own. One made for another list (the other listing's, or one of
// another client's keys) is ErrBadCursor: KV would go on from a name of
// that list, and the page would skip or repeat what this one holds.
func decodeCursor(cursor, prefix string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	rest, ok := strings.CutPrefix(cursor, cursorPrefix)
	b, err := base64.RawURLEncoding.DecodeString(rest)
	kvCursor, same := strings.CutPrefix(string(b), prefix+"\n")
	if !ok || err != nil || !same || kvCursor == "" {
		return "", intake.ErrBadCursor
	}
	return kvCursor, nil
}

// nameKey names the key of pending:<name>: its metadata names the client
// of a claim made with a gateway; otherwise, with clients (scoped), the
// client id is the name up to its first ':', which no client id holds.
func nameKey(name, client string, scoped bool) (intake.Key, bool) {
	switch {
	case client != "":
		id, ok := strings.CutPrefix(name, client+":")
		return intake.Key{Client: client, ID: id}, ok
	case scoped:
		c, id, ok := strings.Cut(name, ":")
		return intake.Key{Client: c, ID: id}, ok
	}
	return intake.Key{ID: name}, true
}

// Purge implements intake.AdminStore: if result:<key> is there (or the
// TypeScript reference's name of the key, readBoth, which a purge reads
// whatever form the operator named the key in), it deletes pending:<key>
// and the reference's claim, then every outcome of the key, its own and
// the reference's, so that none is found once the other is gone, and no
// claim holds the key. In that order, a purge that fails midway leaves an
// outcome stored, never an open claim without it, which the settler would
// take for an unknown outcome. Deletes take up to 60 s to be seen in
// every location, as every KV write does. A claim beside the outcome whose
// lease has not ended is a request in flight whose read missed the
// outcome: deleting it would free the key for another while it calls the
// OMS, so the purge leaves everything and returns the claim, Held, for
// as long as it holds the key as every read sees it (claimRecordAt). (A
// claim without a lease, the reference's or the stand-in's, is one whose
// delete failed: it goes.)
func (k *Store) Purge(ctx context.Context, key intake.Key, orderID string) (intake.Record, error) {
	key.Quoted = true
	stored, pending, others, err := k.readBoth(ctx, key)
	if err != nil {
		return intake.Record{}, err
	}
	rec := k.record(stored, pending)
	if rec.State != intake.Stored {
		return rec, nil
	}
	if pending != nil {
		m := decodeMetadata(pending.Metadata)
		if claim := claimRecordAt(m, pending.Value, k.now()); claim.State == intake.Held && !m.leaseUntil.IsZero() {
			return claim, nil
		}
	}
	if orderID != "" && intake.OrderIDOf(rec) != orderID {
		return rec, nil
	}
	if err := k.ns.Delete(ctx, pendingPrefix+key.String()); err != nil {
		return intake.Record{}, errs.Prefix("kv: purge: deleting the claim", err)
	}
	for _, name := range others {
		if err := k.ns.Delete(ctx, name); err != nil {
			return intake.Record{}, errs.Prefix("kv: purge: deleting the outcome", err)
		}
	}
	return rec, nil
}

// DropClaim implements intake.FallbackAdmin: it deletes pending:<key>,
// whatever it holds.
func (k *Store) DropClaim(ctx context.Context, key intake.Key) error {
	if err := k.ns.Delete(ctx, pendingPrefix+key.String()); err != nil {
		return errs.Prefix("kv: deleting the claim", err)
	}
	return nil
}
