//go:build js && wasm

// Command edge-orders is the order-intake Worker. main only adapts the
// Workers runtime to package app, which builds everything else.
package main

import (
	// First, so that TinyGo initialises unicode (through bytes) before
	// context brings in time and syscall/js: syscall/js's initialiser
	// calls JavaScript, after which TinyGo's build can no longer seed a
	// map, and every map a later package initialiser fills (unicode's
	// tables, about 300 entries that nothing reads) is built again at each
	// start, in 19 KB of code and 70 KB of data.
	_ "bytes"
	"context"
	"time"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/uuid"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/workers"
)

func main() {
	// A trap answers what the program held with the project's 500, in
	// JavaScript, since nothing of Go runs after it (workers.AnswerTraps).
	resp, line := httpapi.TrapAnswer()
	workers.AnswerTraps(resp, line.AppendJSON(nil))
	// The Worker is built once per isolate, from the first event's
	// environment, whichever kind of event comes first.
	var w *app.Worker
	built := func(env workers.Env) *app.Worker {
		if w == nil {
			w = app.New(appEnv(env))
			if h, ok := w.Handler.(*httpapi.Handler); ok {
				if origins, allowed, always, private := h.TrapCORS(); len(origins) > 0 {
					workers.CORSTraps(origins, allowed, always, private)
				}
			}
			if b, ok := env.AnalyticsEngineDataset(app.MetricsBinding); ok {
				if p, ok := w.TrapPoint(); ok {
					indexes, blobs, doubles := p.Fields()
					workers.MeasureTraps(b, indexes, blobs, doubles)
				}
			}
		}
		return w
	}
	ledger.Export(func(env workers.Env, store intake.Store) *intake.Service { return built(env).Settler(store) })
	workers.ServeQueue(func(ctx context.Context, env workers.Env, m workers.QueueMessage) (time.Duration, error) {
		w := built(env)
		return w.RetryDelay(m), w.QueueMessage(ctx, m)
	})
	workers.ServeScheduled(func(ctx context.Context, env workers.Env) error { return built(env).Sweep(ctx) })
	workers.Serve(func(env workers.Env) workers.Handler { return built(env).Handler })
}

// appEnv is env's vars and bindings as app takes them.
func appEnv(env workers.Env) app.Env {
	e := app.Env{Var: env.Var, Console: workers.Console, NewID: uuid.New, Sleep: workers.Sleep, Defer: workers.WaitUntil,
		Fetch: workers.GlobalFetcher().Fetch}
	if b, ok := env.KV(app.KVBinding); ok {
		e.KV = kv.NewBinding(b)
	}
	if b, ok := env.DurableObjectNamespace(app.LedgerBinding); ok {
		e.Ledger = func(shards int) intake.Store { return ledger.NewClient(b, shards) }
	}
	if b, ok := env.RateLimiter(app.RateLimitBinding); ok {
		e.RateLimit = b.Limit
	}
	if b, ok := env.Fetcher(app.OMSBinding); ok {
		e.OMS = b.Fetch
	}
	if b, ok := env.Queue(app.SettleQueueBinding); ok {
		e.SettleQueue = b
	}
	if b, ok := env.Queue(app.DeadLetterBinding); ok {
		e.DeadLetter = b
	}
	if b, ok := env.AnalyticsEngineDataset(app.MetricsBinding); ok {
		e.Metrics = b
	}
	return e
}
