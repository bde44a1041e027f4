//go:build js && wasm

// Command edge-orders is the order-intake Worker. main only wires:
// environment, configuration, storage, lifecycle, the settler, HTTP.
package main

import (
	"context"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/uuid"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/oms"
	"github.com/edge-orders/edge-orders/ratelimit"
	"github.com/edge-orders/edge-orders/settlequeue"
	"github.com/edge-orders/edge-orders/workers"
)

// Binding names, as wrangler.toml declares them.
const (
	kvBinding        = "ORDERS"
	ledgerBinding    = "LEDGER"
	rateLimitBinding = "NEW_ORDERS_LIMIT"
	omsBinding       = "OMS"
	// settleQueueBinding is KV mode's settle queue (producer), and
	// deadLetterBinding the queue unresolved orders are sent to.
	settleQueueBinding = "SETTLE_QUEUE"
	deadLetterBinding  = "SETTLE_DLQ"
)

// omsBindingURL is the URL a service-bound gateway Worker sees when
// OMS_URL does not name one.
const omsBindingURL = "https://oms/orders"

// sweepLimit bounds the overdue keys one Cron Trigger settles.
const sweepLimit = 100

// queueRetryDelay is how long a settle message waits before the queue
// delivers it again after a storage failure.
const queueRetryDelay = 5 * time.Second

func main() {
	// The Worker is built once per isolate, from the first event's
	// environment, whichever kind of event comes first.
	var w *worker
	built := func(env workers.Env) *worker {
		if w == nil {
			w = newWorker(env)
		}
		return w
	}
	ledger.Export(func(env workers.Env, store intake.Store) *intake.Service {
		return built(env).settler(store)
	})
	workers.ServeQueue(func(ctx context.Context, env workers.Env, body []byte) error {
		return built(env).settleMessage(ctx, body)
	}, queueRetryDelay)
	workers.ServeScheduled(func(ctx context.Context, env workers.Env) error {
		return built(env).sweep(ctx)
	})
	workers.Serve(func(env workers.Env) workers.Handler { return built(env).handler })
}

// worker is the Worker as its environment configures it.
type worker struct {
	handler workers.Handler
	log     eventlog.Sink
	opts    intake.Options // the Service's, which the settler shares
	// service is the Worker's, over its Store; the ledger's alarm builds
	// one over its own object instead.
	service *intake.Service
	// consumer settles KV mode's keys from the settle queue, and overdue
	// lists those whose message was lost; nil in ledger mode, which
	// settles by its own alarm.
	consumer   *settlequeue.Consumer
	overdue    settlequeue.Overdue
	sweepGrace time.Duration
}

// newWorker builds the Worker from its environment. A setting that cannot
// work makes every request a 500 misconfigured naming it, before any
// storage call, and leaves nothing to settle.
func newWorker(env workers.Env) *worker {
	cfg, err := config.Load(env.Var)
	log := eventlog.To(workers.Console, cfg.LogLevel)
	w := &worker{log: log}
	misconfigured := func(detail string) *worker {
		w.handler = httpapi.Misconfigured(detail, httpapi.Options{Log: log})
		return w
	}
	if err != nil {
		return misconfigured(err.Error())
	}
	w.sweepGrace = cfg.SweepGrace
	w.opts = intake.Options{
		ResultTTL:    cfg.ResultTTL,
		PendingTTL:   cfg.PendingTTL,
		Wait:         cfg.Wait,
		SettleMaxAge: cfg.SettleMaxAge,
		Sleep:        workers.Sleep,
		Defer:        workers.WaitUntil,
		NewID:        uuid.New,
		Gateway:      newGateway(env, cfg),
		OnReleaseError: func(key intake.Key, err error) {
			log.Log(eventlog.Line{Outcome: "claim_not_released", Client: key.Client, Key: key.ID, Error: err.Error()})
		},
	}
	deadLetter, hasDeadLetter := env.Binding(deadLetterBinding)
	w.opts.OnUnresolved = func(ctx context.Context, key intake.Key, p intake.Placement, attempts int) {
		line := eventlog.Line{Outcome: "order_unresolved", Client: key.Client, Key: key.ID, OrderID: p.OrderID, Attempts: attempts, Alert: true,
			Error: "the settler gave up after " + config.SettleMaxAgeVar + ": the OMS never confirmed this order"}
		if hasDeadLetter {
			if err := workers.NewQueue(deadLetter).Send(ctx, settlequeue.Message(key), 0); err != nil {
				line.Error += " (and sending it to " + deadLetterBinding + ": " + err.Error() + ")"
			}
		}
		log.Log(line)
	}
	if limiter, ok := env.Binding(rateLimitBinding); ok {
		w.opts.Limit = ratelimit.New(limiter).Allow
	}
	ns, hasKV := env.Binding(kvBinding)
	var kvStore *kv.Store
	if hasKV {
		kvStore = kv.NewStore(kv.NewBinding(ns), nil)
	}
	var store intake.Store
	switch cfg.Storage {
	case config.StorageLedger:
		do, ok := env.Binding(ledgerBinding)
		if !ok {
			return misconfigured("the " + ledgerBinding + " Durable Object binding is missing; see wrangler.toml's [env.ledger]")
		}
		store = ledger.NewClient(do, cfg.LedgerShards)
		if !cfg.KVFallbackUntil.IsZero() {
			if !hasKV {
				return misconfigured(config.KVFallbackUntilVar + " is set but the " + kvBinding + " KV namespace binding is missing")
			}
			w.opts.Fallback, w.opts.FallbackUntil = kvStore, cfg.KVFallbackUntil
		}
	default:
		if !hasKV {
			return misconfigured("the " + kvBinding + " KV namespace binding is missing; see wrangler.toml")
		}
		kvStore.ReleaseClaims = cfg.ReleaseClaims
		store = kvStore
		if queue, ok := env.Binding(settleQueueBinding); ok && w.opts.Gateway != nil {
			w.consumer, w.overdue = &settlequeue.Consumer{Queue: workers.NewQueue(queue)}, kvStore
			w.opts.Schedule = w.consumer.Schedule
		}
	}
	if cfg.Clients == nil {
		log.Log(eventlog.Line{Outcome: "auth_disabled", Error: "no " + config.TokensVar + " secret: the Worker accepts orders from anyone"})
	}
	w.service = intake.New(store, w.opts)
	if w.consumer != nil {
		w.consumer.Settler = w.service
	}
	w.handler = httpapi.New(w.service, httpapi.Options{Clients: cfg.Clients, Log: log, AllowedOrigins: cfg.AllowedOrigins})
	return w
}

// settler is a Service over store (a ledger object's own rows) with the
// Worker's options, for the object's alarm; it caches no receipts, since
// it never replays.
func (w *worker) settler(store intake.Store) *intake.Service {
	if w.opts.ResultTTL == 0 {
		return nil // misconfigured: the alarm settles nothing
	}
	opts := w.opts
	opts.CachedReceipts, opts.Fallback, opts.Limit = -1, nil, nil
	return intake.New(store, opts)
}

// settleMessage settles the key a settle queue message names.
func (w *worker) settleMessage(ctx context.Context, body []byte) error {
	if w.consumer == nil {
		return nil // nothing settles here: acknowledged
	}
	err := w.consumer.Handle(ctx, body)
	if err == settlequeue.ErrNotMessage {
		w.log.Log(eventlog.Line{Outcome: "settle_message_dropped", Error: err.Error()})
		return nil
	}
	return err
}

// sweep settles KV mode's overdue keys: those whose settle message was
// never sent.
func (w *worker) sweep(ctx context.Context) error {
	if w.consumer == nil {
		return nil
	}
	n, err := w.consumer.Sweep(ctx, w.overdue, time.Now(), w.sweepGrace, sweepLimit)
	if n > 0 || err != nil {
		line := eventlog.Line{Outcome: "settle_sweep", Attempts: n}
		if err != nil {
			line.Error = err.Error()
		}
		w.log.Log(line)
	}
	return err
}

// newGateway returns the OMS gateway: the OMS service binding if there is
// one, else OMS_URL over the network, else nil, the reference's stand-in.
func newGateway(env workers.Env, cfg config.Config) intake.Gateway {
	gw := oms.Options{URL: cfg.OMSURL, Token: cfg.OMSToken, Timeout: cfg.OMSTimeout}
	if binding, ok := env.Binding(omsBinding); ok {
		if gw.URL == "" {
			gw.URL = omsBindingURL
		}
		gw.Send = workers.Fetcher(binding)
		return oms.New(gw)
	}
	if gw.URL == "" {
		return nil
	}
	gw.Send = workers.Fetcher(workers.GlobalFetch())
	return oms.New(gw)
}
