package kv

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
)

// deadLetterPrefix starts a dead letter's KV key:
// deadletter:<key><deadLetterSeparator><letter id>, or deadletter:<key>
// for a letter an older version recorded without an id.
const deadLetterPrefix = "deadletter:"

// deadLetterSeparator ends the key in a letter's name: a byte no key holds
// (a client id or an Idempotency-Key is printable ASCII), so that no two
// keys' letters ever share a name.
const deadLetterSeparator = "\x7f"

// AcknowledgementKept is how long an acknowledged letter's mark is kept:
// the longest Cloudflare Queues keeps a message (14 days), so that a
// delivery of the letter's message after its acknowledgement finds the
// mark and is not listed again.
const AcknowledgementKept = 14 * 24 * time.Hour

// maxLetterPages bounds the list calls that look for one key's letters.
const maxLetterPages = 10

// DeadLetterStore keeps the dead letters in KV (intake.DeadLetters), one
// KV key each, named by the letter's key and id, with no TTL: a letter
// stays until an operator acknowledges it, and an acknowledgement rewrites
// that one name only, so a letter recorded meanwhile, or missed by a stale
// read, is never touched. What a listing shows is in the metadata, so a
// page is one list call and no read.
type DeadLetterStore struct {
	ns interface {
		Namespace
		Lister
	}
	// Now stamps acknowledgements; nil means time.Now.
	Now func() time.Time
}

// NewDeadLetterStore returns the dead letters kept in ns.
func NewDeadLetterStore(ns interface {
	Namespace
	Lister
}) *DeadLetterStore {
	return &DeadLetterStore{ns: ns}
}

// The dead letter's metadata members.
const (
	dlClient       = "client"
	dlKey          = "key"
	dlID           = "id"
	dlOrderID      = "orderId"
	dlAttempts     = "attempts"
	dlUnresolved   = "unresolved"
	dlReceived     = "received"
	dlAcknowledged = "acknowledged"
)

// deadLetterName is the KV key of key's letter id.
func deadLetterName(key intake.Key, id string) string {
	if id == "" {
		return deadLetterPrefix + key.String()
	}
	return deadLetterPrefix + key.String() + deadLetterSeparator + id
}

// Record implements intake.DeadLetters: it reads the letter's name first,
// so that a delivery after its acknowledgement finds the mark. A delivery
// whose read misses an acknowledgement KV has not yet spread there (60 s
// or more, as every KV read) lists the letter again.
func (s *DeadLetterStore) Record(ctx context.Context, d intake.DeadLetter) error {
	name := deadLetterName(d.Key, d.ID)
	e, err := s.ns.Get(ctx, name)
	switch {
	case err == nil:
		if was, ok := decodeDeadLetter(e.Metadata); ok && was.Key == d.Key && !was.Acknowledged.IsZero() {
			return intake.ErrLetterAcknowledged
		}
	case !errors.Is(err, ErrNotFound):
		return errs.Prefix("kv: reading a dead letter", err)
	}
	if err := s.ns.Put(ctx, name, Entry{Value: "1", Metadata: encodeDeadLetter(d)}, PutOptions{}); err != nil {
		return errs.Prefix("kv: recording a dead letter", err)
	}
	return nil
}

// List implements intake.DeadLetters, in key order; a page may hold fewer
// letters than limit, none even, where acknowledged ones were.
func (s *DeadLetterStore) List(ctx context.Context, cursor string, limit int) ([]intake.DeadLetter, string, error) {
	from, err := decodeCursor(cursor, deadLetterPrefix)
	if err != nil {
		return nil, "", err
	}
	names, next, err := s.ns.List(ctx, deadLetterPrefix, from, limit)
	if err != nil {
		return nil, "", errs.Prefix("kv: listing the dead letters", err)
	}
	letters := make([]intake.DeadLetter, 0, len(names))
	for _, l := range names {
		if d, ok := decodeDeadLetter(l.Metadata); ok && d.Acknowledged.IsZero() {
			letters = append(letters, d)
		}
	}
	if next != "" {
		next = encodeCursor(deadLetterPrefix, next)
	}
	return letters, next, nil
}

// Letters implements intake.DeadLetters from the list of the names that
// start with the key's and the separator, as KV's list lags behind
// writes, and a read of the name an older version gave a letter without
// an id. The separator ends the prefix: without it, the list would meet
// the letters of every longer key that starts with this one first (1,
// then 10000 … 19999), and might give up before it reached the key's.
func (s *DeadLetterStore) Letters(ctx context.Context, key intake.Key) ([]intake.DeadLetter, error) {
	var letters []intake.DeadLetter
	switch e, err := s.ns.Get(ctx, deadLetterName(key, "")); {
	case err == nil:
		if d, ok := decodeDeadLetter(e.Metadata); ok && d.Key == key && d.ID == "" && d.Acknowledged.IsZero() {
			letters = append(letters, d)
		}
	case !errors.Is(err, ErrNotFound):
		return nil, errs.Prefix("kv: reading a key's dead letter", err)
	}
	cursor := ""
	for range maxLetterPages {
		names, next, err := s.ns.List(ctx, deadLetterName(key, "")+deadLetterSeparator, cursor, MaxListKeys)
		if err != nil {
			return nil, errs.Prefix("kv: listing a key's dead letters", err)
		}
		for _, l := range names {
			if d, ok := decodeDeadLetter(l.Metadata); ok && d.Key == key && d.Acknowledged.IsZero() && l.Name == deadLetterName(key, d.ID) {
				letters = append(letters, d)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return letters, nil
}

// Acknowledge implements intake.DeadLetters: it marks the one letter it
// names as acknowledged, a write to that letter's name alone, kept for
// AcknowledgementKept.
func (s *DeadLetterStore) Acknowledge(ctx context.Context, key intake.Key, id string) (intake.DeadLetter, error) {
	var d intake.DeadLetter
	if id == "" {
		letters, err := s.Letters(ctx, key)
		switch {
		case err != nil:
			return intake.DeadLetter{}, err
		case len(letters) == 0:
			return intake.DeadLetter{}, intake.ErrNotFound
		case len(letters) > 1:
			return intake.DeadLetter{}, intake.ErrOtherLetter
		}
		d = letters[0]
	} else {
		e, err := s.ns.Get(ctx, deadLetterName(key, id))
		if err != nil && !errors.Is(err, ErrNotFound) {
			return intake.DeadLetter{}, errs.Prefix("kv: reading a dead letter", err)
		}
		var ok bool
		if err == nil {
			d, ok = decodeDeadLetter(e.Metadata)
			ok = ok && d.Key == key && d.ID == id
		}
		if !ok {
			others, err := s.Letters(ctx, key)
			switch {
			case err != nil:
				return intake.DeadLetter{}, err
			case len(others) > 0:
				return intake.DeadLetter{}, intake.ErrOtherLetter
			}
			return intake.DeadLetter{}, intake.ErrNotFound
		}
		if !d.Acknowledged.IsZero() {
			return d, nil
		}
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	d.Acknowledged = now()
	if err := s.ns.Put(ctx, deadLetterName(key, d.ID), Entry{Value: "1", Metadata: encodeDeadLetter(d)}, PutOptions{TTL: AcknowledgementKept}); err != nil {
		return intake.DeadLetter{}, errs.Prefix("kv: acknowledging a dead letter", err)
	}
	return d, nil
}

// encodeDeadLetter is d's metadata.
func encodeDeadLetter(d intake.DeadLetter) []byte {
	b := jsjson.AppendString(append([]byte(nil), `{"`+dlClient+`":`...), d.Key.Client)
	b = jsjson.AppendString(append(b, `,"`+dlKey+`":`...), d.Key.ID)
	if d.ID != "" {
		b = jsjson.AppendString(append(b, `,"`+dlID+`":`...), d.ID)
	}
	b = jsjson.AppendString(append(b, `,"`+dlOrderID+`":`...), d.OrderID)
	b = strconv.AppendInt(append(b, `,"`+dlAttempts+`":`...), int64(d.Attempts), 10)
	if d.Unresolved {
		b = append(b, `,"`+dlUnresolved+`":"true"`...)
	}
	b = strconv.AppendInt(append(b, `,"`+dlReceived+`":`...), d.Received.UnixMilli(), 10)
	if !d.Acknowledged.IsZero() {
		b = strconv.AppendInt(append(b, `,"`+dlAcknowledged+`":`...), d.Acknowledged.UnixMilli(), 10)
	}
	return append(b, '}')
}

// decodeDeadLetter reads a dead letter's metadata.
func decodeDeadLetter(metadata []byte) (intake.DeadLetter, bool) {
	o, err := jsjson.Parse(metadata, dlClient, dlKey, dlID, dlOrderID, dlAttempts, dlUnresolved, dlReceived, dlAcknowledged)
	if err != nil || !o.IsObject() || o.Get(dlKey).Kind != jsjson.String {
		return intake.DeadLetter{}, false
	}
	d := intake.DeadLetter{
		Key:        intake.Key{Client: o.Get(dlClient).Str, ID: o.Get(dlKey).Str},
		ID:         o.Get(dlID).Str,
		OrderID:    o.Get(dlOrderID).Str,
		Attempts:   int(o.Get(dlAttempts).Num),
		Unresolved: o.Get(dlUnresolved).Str == "true",
		Received:   time.UnixMilli(int64(o.Get(dlReceived).Num)).UTC(),
	}
	if a := o.Get(dlAcknowledged); a.Kind == jsjson.Number {
		d.Acknowledged = time.UnixMilli(int64(a.Num)).UTC()
	}
	return d, true
}

var _ intake.DeadLetters = (*DeadLetterStore)(nil)
