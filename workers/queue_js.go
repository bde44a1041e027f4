//go:build js && wasm

package workers

import (
	"context"
	"syscall/js"
	"time"
)

// Queue is a Cloudflare Queues producer binding.
type Queue struct{ v js.Value }

// NewQueue wraps the queue producer binding v.
func NewQueue(v js.Value) Queue { return Queue{v} }

// Send sends body, as text, to be delivered after delay (whole seconds,
// rounded up), in one call through bridge.mjs.
func (q Queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	seconds := int((delay + time.Second - 1) / time.Second)
	p := callBridge("queueSend", q.v, string(body), seconds)
	v, err := Await(ctx, p)
	Release(v)
	return err
}

// The names under which ServeQueue and ServeScheduled publish their
// functions for the JavaScript entry.
const (
	queueGlobal     = "__goQueue"
	scheduledGlobal = "__goScheduled"
)

// QueueHandler handles one message of a queue batch: nil acknowledges it,
// an error retries it after retryDelay (the queue's retries, then its
// dead-letter queue).
type QueueHandler func(ctx context.Context, env Env, body []byte) error

// ServeQueue handles the Worker's queue messages, one call into Go per
// message: the entry's queue() calls the published function with (body,
// env, ctx, done) for each message, and acknowledges or retries it as done
// says.
func ServeQueue(handle QueueHandler, retryDelay time.Duration) {
	js.Global().Set(queueGlobal, js.FuncOf(func(_ js.Value, args []js.Value) any {
		body, env, wctx, done := args[0].String(), args[1], args[2], args[3]
		Release(args[0])
		go func() {
			defer Release(env, wctx, done)
			ctx := context.WithValue(context.Background(), executionContextKey{}, wctx)
			failure := runTask(func() error { return handle(ctx, Env{env}, []byte(body)) })
			finish(done, failure, int(retryDelay/time.Second))
		}()
		return nil
	}))
}

// ServeScheduled handles the Worker's Cron Triggers: the entry's
// scheduled() calls the published function with (env, ctx, done).
func ServeScheduled(handle func(ctx context.Context, env Env) error) {
	js.Global().Set(scheduledGlobal, js.FuncOf(func(_ js.Value, args []js.Value) any {
		env, wctx, done := args[0], args[1], args[2]
		go func() {
			defer Release(env, wctx, done)
			ctx := context.WithValue(context.Background(), executionContextKey{}, wctx)
			finish(done, runTask(func() error { return handle(ctx, Env{env}) }), 0)
		}()
		return nil
	}))
}

// runTask runs task and returns its failure's message, "" for none; a
// panic is a failure, and never ends the Go instance.
func runTask(task func() error) (failure string) {
	defer func() {
		if p := recover(); p != nil {
			failure = "workers: panic in a task"
		}
	}()
	if err := task(); err != nil {
		return err.Error()
	}
	return ""
}

// finish calls done with nothing, or with the failure's message and a
// number (the retry delay in seconds).
func finish(done js.Value, failure string, retrySeconds int) {
	if failure == "" {
		Release(done.Invoke())
		return
	}
	args, made := crossing([]any{failure, retrySeconds})
	Release(done.Invoke(args...))
	Release(made...)
}
