package kv

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/jsjson"
)

// deadLetterPrefix names a dead letter's KV key: deadletter:<key>.
const deadLetterPrefix = "deadletter:"

// DeadLetterStore keeps the dead letters in KV (intake.DeadLetters), one
// key each, deadletter:<key>, with no TTL: a letter stays until an
// operator acknowledges it. What a listing shows is in the metadata, so a
// page is one list call and no read.
type DeadLetterStore struct {
	ns interface {
		Namespace
		Lister
	}
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
	dlClient     = "client"
	dlKey        = "key"
	dlOrderID    = "orderId"
	dlAttempts   = "attempts"
	dlUnresolved = "unresolved"
	dlReceived   = "received"
)

// Record implements intake.DeadLetters.
func (s *DeadLetterStore) Record(ctx context.Context, d intake.DeadLetter) error {
	b := jsjson.AppendString(append([]byte(nil), `{"`+dlClient+`":`...), d.Key.Client)
	b = jsjson.AppendString(append(b, `,"`+dlKey+`":`...), d.Key.ID)
	b = jsjson.AppendString(append(b, `,"`+dlOrderID+`":`...), d.OrderID)
	b = strconv.AppendInt(append(b, `,"`+dlAttempts+`":`...), int64(d.Attempts), 10)
	if d.Unresolved {
		b = append(b, `,"`+dlUnresolved+`":"true"`...)
	}
	b = strconv.AppendInt(append(b, `,"`+dlReceived+`":`...), d.Received.UnixMilli(), 10)
	b = append(b, '}')
	if err := s.ns.Put(ctx, deadLetterPrefix+d.Key.String(), Entry{Value: "1", Metadata: b}, PutOptions{}); err != nil {
		return errs.Prefix("kv: recording a dead letter", err)
	}
	return nil
}

// List implements intake.DeadLetters, in key order.
func (s *DeadLetterStore) List(ctx context.Context, cursor string, limit int) ([]intake.DeadLetter, string, error) {
	from, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	names, next, err := s.ns.List(ctx, deadLetterPrefix, from, limit)
	if err != nil {
		return nil, "", errs.Prefix("kv: listing the dead letters", err)
	}
	letters := make([]intake.DeadLetter, 0, len(names))
	for _, l := range names {
		if d, ok := decodeDeadLetter(l.Metadata); ok {
			letters = append(letters, d)
		}
	}
	if next != "" {
		next = cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(next))
	}
	return letters, next, nil
}

// Acknowledge implements intake.DeadLetters.
func (s *DeadLetterStore) Acknowledge(ctx context.Context, key intake.Key) (intake.DeadLetter, error) {
	name := deadLetterPrefix + key.String()
	e, err := s.ns.Get(ctx, name)
	switch {
	case errors.Is(err, ErrNotFound):
		return intake.DeadLetter{}, intake.ErrNotFound
	case err != nil:
		return intake.DeadLetter{}, errs.Prefix("kv: reading a dead letter", err)
	}
	d, ok := decodeDeadLetter(e.Metadata)
	if !ok || d.Key != key {
		d = intake.DeadLetter{Key: key}
	}
	if err := s.ns.Delete(ctx, name); err != nil {
		return intake.DeadLetter{}, errs.Prefix("kv: acknowledging a dead letter", err)
	}
	return d, nil
}

// decodeDeadLetter reads a dead letter's metadata.
func decodeDeadLetter(metadata []byte) (intake.DeadLetter, bool) {
	o, err := jsjson.Parse(metadata, dlClient, dlKey, dlOrderID, dlAttempts, dlUnresolved, dlReceived)
	if err != nil || !o.IsObject() || o.Get(dlKey).Kind != jsjson.String {
		return intake.DeadLetter{}, false
	}
	return intake.DeadLetter{
		Key:        intake.Key{Client: o.Get(dlClient).Str, ID: o.Get(dlKey).Str},
		OrderID:    o.Get(dlOrderID).Str,
		Attempts:   int(o.Get(dlAttempts).Num),
		Unresolved: o.Get(dlUnresolved).Str == "true",
		Received:   time.UnixMilli(int64(o.Get(dlReceived).Num)).UTC(),
	}, true
}

var _ intake.DeadLetters = (*DeadLetterStore)(nil)
