// Package settlequeue carries KV mode's settler over Cloudflare Queues: a
// message per key whose outcome is unknown, sent with the backoff as its
// delay, a consumer that settles the key and sends the next message, and a
// sweep that settles the keys whose message was lost.
package settlequeue

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/jsjson"
)

// MaxDelay is the longest delay Queues accepts for a message (12 hours);
// a key due later is sent a message that carries its due time, and only
// sends itself again until then.
const MaxDelay = 12 * time.Hour

// MaxDue is how far ahead a message's due time may be: past the latest
// any key is due (a give-up check 2 × KV_READ_LAG_SECONDS out, 48 hours
// at most), so that a message carrying a later one, which the Worker
// never writes, is refused rather than sent again for ever.
const MaxDue = 7 * 24 * time.Hour

// ErrNotMessage is returned by Consumer.Handle for a body that is not a
// settle message: it is not retried.
var ErrNotMessage = errors.New("settlequeue: not a settle message")

// Sender sends one message body to a queue, delivered after delay.
type Sender interface {
	Send(ctx context.Context, body []byte, delay time.Duration) error
}

// Settler is what the consumer and the sweep settle keys with: an
// intake.Service.
type Settler interface {
	Settle(ctx context.Context, key intake.Key) (intake.Settlement, error)
}

// Message is the body of a settle message for key: {"client":…,"id":…}.
func Message(key intake.Key) []byte {
	return message(key, time.Time{})
}

// message is Message, with "due" (Unix milliseconds) when due is set: a
// message sent before its key is due by more than MaxDelay. A version
// that knows no "due" settles it on arrival, as it did every message.
func message(key intake.Key, due time.Time) []byte {
	b := append([]byte(`{"client":`), jsjson.AppendString(nil, key.Client)...)
	b = append(append(b, `,"id":`...), jsjson.AppendString(nil, key.ID)...)
	if !due.IsZero() {
		b = append(append(b, `,"due":`...), strconv.FormatInt(due.UnixMilli(), 10)...)
	}
	return append(b, '}')
}

// ParseMessage reads what Message wrote, or returns ErrNotMessage.
func ParseMessage(body []byte) (intake.Key, error) {
	key, _, err := parse(body)
	return key, err
}

// parse reads what message wrote: the key, and its due time if the
// message carries one (zero otherwise). A due time MaxDue past now is
// refused (ErrNotMessage).
func (c Consumer) parse(body []byte) (intake.Key, time.Time, error) {
	key, due, err := parse(body)
	if err == nil && due.Sub(c.now()) > MaxDue {
		return intake.Key{}, time.Time{}, ErrNotMessage
	}
	return key, due, err
}

func parse(body []byte) (intake.Key, time.Time, error) {
	doc, err := jsjson.Parse(body, "client", "id", "due")
	if err != nil || doc.Get("id").Kind != jsjson.String || doc.Get("id").Str == "" || doc.Get("client").Kind != jsjson.String {
		return intake.Key{}, time.Time{}, ErrNotMessage
	}
	var due time.Time
	switch d := doc.Get("due"); {
	case d.Kind == jsjson.Number && d.Num >= 0 && d.Num < 1<<53:
		due = time.UnixMilli(int64(d.Num))
	case d.Kind != jsjson.Undefined:
		return intake.Key{}, time.Time{}, ErrNotMessage
	}
	return intake.Key{Client: doc.Get("client").Str, ID: doc.Get("id").Str}, due, nil
}

// Consumer settles the keys its messages name.
type Consumer struct {
	Settler Settler
	// Queue is where the next message for a key still unknown goes.
	Queue Sender
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Schedule sends key's message to be delivered at at: what
// intake.Options.Schedule asks after an unknown outcome. A message due
// past the queue's longest delay carries at, and is sent again when it
// comes early (Handle).
func (c Consumer) Schedule(ctx context.Context, key intake.Key, at time.Time) error {
	delay := at.Sub(c.now())
	if delay <= MaxDelay {
		return c.Queue.Send(ctx, Message(key), max(delay, 0))
	}
	return c.Queue.Send(ctx, message(key, at), MaxDelay)
}

func (c Consumer) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Handle settles the key body names. It returns nil when the message is
// done with: the key is settled, unresolved, or its next message is sent.
// An error means the message is to be retried (the queue's retries, then
// its dead-letter queue), except ErrNotMessage, which never settles.
//
// A message that comes before the due time it carries is sent again for
// it, and settles nothing: a key is not due, and its chain would end.
// So, after an answer the settler could not store, is the key's next
// message sent: retried in the queue's few seconds, it would find the key
// not due yet (intake.Service.Settle).
func (c Consumer) Handle(ctx context.Context, body []byte) error {
	key, due, err := c.parse(body)
	switch {
	case err != nil:
		return err
	case due.After(c.now()):
		return c.Schedule(ctx, key, due)
	}
	st, err := c.Settler.Settle(ctx, key)
	if owed, serr := c.followUp(ctx, key, st, err); owed {
		return serr
	}
	return err
}

// followUp sends key's next message when the settling that answered st
// and err owes one: the key is not final, and it was settled without an
// error, or an error came with the time the key is due (an answer that
// could not be stored). It reports whether one was owed, and the send's
// error.
func (c Consumer) followUp(ctx context.Context, key intake.Key, st intake.Settlement, err error) (owed bool, sendErr error) {
	if st.Final || err != nil && st.NextAttempt.IsZero() {
		return false, nil
	}
	return true, c.Schedule(ctx, key, st.NextAttempt)
}

// Overdue lists keys the settler was due for before a time: kv.Store does.
type Overdue interface {
	Overdue(ctx context.Context, before time.Time, limit int) ([]intake.Key, error)
}

// SweepBudget is how long one sweep settles keys itself, each maybe
// waiting the OMS's timeout: less than the Cron Trigger's five minutes
// between sweeps, and far less than the 15 minutes Workers give a Cron
// invocation, which would cut it off among keys its walk has passed.
const SweepBudget = 4 * time.Minute

// Sweep settles up to limit keys that were due more than grace ago, the
// keys whose message was never sent (the send failed, or the isolate died
// first): grace is long enough for a message sent with the due time as its
// delay to have come. Each key still unknown is sent a message again, and
// so is each key left once SweepBudget has passed, for the queue to
// settle. It returns how many keys it listed, and the first error. A
// listing that failed midway, or could not save where it stopped
// (kv.Store.Overdue), returns the keys it found beside its error: they are
// settled all the same, or a cursor that keeps failing to save would
// starve them.
func (c Consumer) Sweep(ctx context.Context, overdue Overdue, now time.Time, grace time.Duration, limit int) (int, error) {
	keys, first := overdue.Overdue(ctx, now.Add(-grace), limit)
	start := c.now()
	for _, key := range keys {
		if c.now().Sub(start) >= SweepBudget {
			if err := c.Schedule(ctx, key, c.now()); err != nil && first == nil {
				first = err
			}
			continue
		}
		st, err := c.Settler.Settle(ctx, key)
		if _, serr := c.followUp(ctx, key, st, err); err == nil {
			err = serr
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return len(keys), first
}
