// Package settlequeue carries KV mode's settler over Cloudflare Queues: a
// message per key whose outcome is unknown, sent with the backoff as its
// delay, a consumer that settles the key and sends the next message, and a
// sweep that settles the keys whose message was lost.
package settlequeue

import (
	"context"
	"errors"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/jsjson"
)

// MaxDelay is the longest delay Queues accepts for a message (12 hours);
// a key due later is sent a message that only reschedules it.
const MaxDelay = 12 * time.Hour

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
	b := append([]byte(`{"client":`), jsjson.AppendString(nil, key.Client)...)
	b = append(append(b, `,"id":`...), jsjson.AppendString(nil, key.ID)...)
	return append(b, '}')
}

// ParseMessage reads what Message wrote, or returns ErrNotMessage.
func ParseMessage(body []byte) (intake.Key, error) {
	doc, err := jsjson.Parse(body, "client", "id")
	if err != nil || doc.Get("id").Kind != jsjson.String || doc.Get("id").Str == "" || doc.Get("client").Kind != jsjson.String {
		return intake.Key{}, ErrNotMessage
	}
	return intake.Key{Client: doc.Get("client").Str, ID: doc.Get("id").Str}, nil
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
// intake.Options.Schedule asks after an unknown outcome.
func (c Consumer) Schedule(ctx context.Context, key intake.Key, at time.Time) error {
	return c.Queue.Send(ctx, Message(key), c.delay(at))
}

func (c Consumer) delay(at time.Time) time.Duration {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	return min(max(at.Sub(now()), 0), MaxDelay)
}

// Handle settles the key body names. It returns nil when the message is
// done with: the key is settled, unresolved, or its next message is sent.
// An error means the message is to be retried (the queue's retries, then
// its dead-letter queue), except ErrNotMessage, which never settles.
func (c Consumer) Handle(ctx context.Context, body []byte) error {
	key, err := ParseMessage(body)
	if err != nil {
		return err
	}
	st, err := c.Settler.Settle(ctx, key)
	switch {
	case err != nil:
		return err
	case st.Final:
		return nil
	}
	return c.Schedule(ctx, key, st.NextAttempt)
}

// Overdue lists keys the settler was due for before a time: kv.Store does.
type Overdue interface {
	Overdue(ctx context.Context, before time.Time, limit int) ([]intake.Key, error)
}

// Sweep settles up to limit keys that were due more than grace ago, the
// keys whose message was never sent (the send failed, or the isolate died
// first): grace is long enough for a message sent with the due time as its
// delay to have come. Each key still unknown is sent a message again. It
// returns how many keys it settled, and the first error. A listing that
// failed midway, or could not save where it stopped (kv.Store.Overdue),
// returns the keys it found beside its error: they are settled all the
// same, or a cursor that keeps failing to save would starve them.
func (c Consumer) Sweep(ctx context.Context, overdue Overdue, now time.Time, grace time.Duration, limit int) (int, error) {
	keys, first := overdue.Overdue(ctx, now.Add(-grace), limit)
	for _, key := range keys {
		st, err := c.Settler.Settle(ctx, key)
		if err == nil && !st.Final {
			err = c.Schedule(ctx, key, st.NextAttempt)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return len(keys), first
}
