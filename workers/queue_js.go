//go:build js && wasm

package workers

import (
	"context"
	"strconv"
	"syscall/js"
	"time"
)

// Queue is a Cloudflare Queues producer binding.
type Queue struct{ h Handle }

// Send sends body, as text, to be delivered after delay (whole seconds,
// rounded up), in one binding call.
func (q Queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	seconds := int64((delay + time.Second - 1) / time.Second)
	_, err := callBinding(ctx, "queueSend", outFrame{}.Bytes(body).Int(seconds), q.h)
	return err
}

// The names under which ServeQueue and ServeScheduled publish their
// functions for the JavaScript entry.
const (
	queueGlobal     = "__goQueue"
	scheduledGlobal = "__goScheduled"
)

// QueueHandler handles one message of a queue batch: a nil error
// acknowledges it; an error retries it after retry, in whole seconds
// rounded up (zero or less leaves it to the consumer's retry_delay in
// wrangler.toml), until the queue's max_retries, then its dead-letter
// queue.
type QueueHandler func(ctx context.Context, env Env, m QueueMessage) (retry time.Duration, err error)

// ServeQueue handles the Worker's queue messages, one call into Go per
// message: the entry's queue() holds each message's event ({env, ctx,
// done}) and calls the published function with (event, length of the
// frame of the message's body, queue name, id and attempts); done then
// acknowledges the message, or retries it after the delay it is given
// ("" for the consumer's own).
func ServeQueue(handle QueueHandler) {
	js.Global().Set(queueGlobal, goFunc(func(eventHandle, frameLength, _ int) int {
		event := Handle(eventHandle)
		frame := readFrame(receive(frameLength))
		m := QueueMessage{Body: frame.Bytes(), Queue: frame.Str(), ID: frame.Str(), Attempts: int(frame.Int())}
		ctx := context.WithValue(context.Background(), executionContextKey{}, event)
		goroutines.run(func() {
			var retry time.Duration
			failure := runTask(func() (err error) {
				retry, err = handle(ctx, EnvOf(event), m)
				return err
			})
			finishTask(event, failure, retrySeconds(retry))
		})
		return 0
	}))
}

// retrySeconds is a retry's delay as done reads it: whole seconds,
// rounded up, or "" for none.
func retrySeconds(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// ServeScheduled handles the Worker's Cron Triggers: the entry's
// scheduled() holds the event ({env, ctx, done}) and calls the published
// function with its number.
func ServeScheduled(handle func(ctx context.Context, env Env) error) {
	js.Global().Set(scheduledGlobal, goFunc(func(eventHandle, _, _ int) int {
		event := Handle(eventHandle)
		ctx := context.WithValue(context.Background(), executionContextKey{}, event)
		runEvent(event, "", func() error { return handle(ctx, EnvOf(event)) })
		return 0
	}))
}

// runTask runs task and returns its failure's message, "" for none; a
// panic is a failure, and never ends the Go instance.
func runTask(task func() error) (failure string) {
	defer func() {
		if p := recover(); p != nil {
			var line []byte
			failure, line = taskPanic(p)
			Console.WriteError(line)
		}
	}()
	return failureText(task())
}
