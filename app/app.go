// Package app builds the Worker from its runtime's vars and bindings: the
// store, the OMS gateway, the settler (the ledger's alarm, KV mode's settle
// queue and Cron sweep) and the HTTP handler. main.go adapts the workers
// runtime to it; tests build it natively, with in-memory bindings.
package app

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/edge-orders/edge-orders/alert"
	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/sha256"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/metrics"
	"github.com/edge-orders/edge-orders/oms"
	"github.com/edge-orders/edge-orders/settlequeue"
	"github.com/edge-orders/edge-orders/workers"
)

// Binding names, as wrangler.toml declares them.
const (
	KVBinding        = "ORDERS"
	LedgerBinding    = "LEDGER"
	RateLimitBinding = "NEW_ORDERS_LIMIT"
	OMSBinding       = "OMS"
	// SettleQueueBinding is KV mode's settle queue (producer), and
	// DeadLetterBinding the queue unresolved orders are sent to: the
	// Worker consumes it too (config's DEAD_LETTER_QUEUE names it), and
	// records each message where the admin API lists it.
	SettleQueueBinding = "SETTLE_QUEUE"
	DeadLetterBinding  = "SETTLE_DLQ"
	// MetricsBinding is the Analytics Engine dataset that gets a data
	// point per request answered and per settle attempt (docs/metrics.md).
	MetricsBinding = "METRICS"
)

// OMSBindingURL is the URL a service-bound gateway Worker sees when
// OMS_URL does not name one.
const OMSBindingURL = "https://oms/orders"

// SweepLimit bounds the overdue keys one Cron Trigger settles.
const SweepLimit = 100

// QueueRetryDelay is how long a settle message waits before the queue
// delivers it again after a storage failure.
const QueueRetryDelay = 5 * time.Second

// PagesPerRun bounds the pages one run sends: a Cron sweep, a ledger
// alarm. A queue message pages once at most, so a batch pages at most its
// max_batch_size. Keys past the bound stay owed, due again.
const PagesPerRun = 10

// AlertSource names the Worker in its pages.
const AlertSource = "edge-orders"

// A dead letter the Worker could not record (its storage failing) is
// retried after DeadLetterRetryFirst, then twice as long each time up to
// DeadLetterRetryMax, DeadLetterMaxRetries times (wrangler.toml's
// max_retries, the most Queues allows; its retry_delay is
// DeadLetterRetryMax, for an invocation that failed as a whole): about
// 15 days, past the 14 days Queues keeps a message at most. So the queue's
// retention bounds how long an outage may last without losing a letter,
// and a letter is recorded at most DeadLetterRetryMax after storage is
// back (docs/operating.md).
const (
	DeadLetterRetryFirst = time.Minute
	DeadLetterRetryMax   = 4 * time.Hour
	DeadLetterMaxRetries = 100
)

// DeadLetterRetryDelay is how long a dead letter waits for its next
// delivery after its attempts-th failed.
func DeadLetterRetryDelay(attempts int) time.Duration {
	d := DeadLetterRetryFirst
	for i := 1; i < attempts && d < DeadLetterRetryMax; i++ {
		d *= 2
	}
	return min(d, DeadLetterRetryMax)
}

// Namespace is a KV namespace as the store and its sweep need it.
type Namespace interface {
	kv.Namespace
	kv.Lister
}

// Env is what the runtime gives the Worker: its vars, its bindings as Go
// values (nil when unbound), and the platform's clock, ids, sleep and
// after-the-response hook. Nil platform fields take Go's own.
type Env struct {
	// Var reads a var or a secret.
	Var func(name string) (string, bool)
	// Console receives the log lines, one Write each.
	Console io.Writer

	KV Namespace // ORDERS
	// Ledger is the LEDGER Durable Object namespace as a Store, sharded
	// over shards objects per client.
	Ledger                  func(shards int) intake.Store
	RateLimit               func(ctx context.Context, key string) (bool, error) // NEW_ORDERS_LIMIT
	OMS                     oms.Send                                            // the OMS service binding
	Fetch                   oms.Send                                            // the global fetch
	SettleQueue, DeadLetter settlequeue.Sender
	Metrics                 metrics.Dataset // METRICS

	Now   func() time.Time
	NewID func() string
	Sleep func(ctx context.Context, d time.Duration) error
	Defer func(ctx context.Context, task func(context.Context))
}

// Worker is the Worker as its environment configures it.
type Worker struct {
	// Handler answers HTTP requests; a Worker that cannot work answers
	// each with a 500 misconfigured that names the setting, and settles
	// nothing.
	Handler workers.Handler
	// Service is the Worker's, over its Store; nil when misconfigured.
	Service *intake.Service

	log  eventlog.Sink
	opts intake.Options // the Service's, which the settler shares
	// meter writes the data points; nil when METRICS is unbound.
	meter *meter
	// consumer settles KV mode's keys from the settle queue, and overdue
	// lists those whose message was lost; nil in ledger mode, which
	// settles by its own alarm.
	consumer *settlequeue.Consumer
	overdue  settlequeue.Overdue
	// adopting lists the keys the KV-mode Worker left open, for ledger
	// mode to adopt during a migration (KV_FALLBACK_UNTIL); else nil.
	adopting leftOpen
	// deadLetters keeps what the dead-letter queue delivers, and lookup
	// reads the key a letter names; nil without KV.
	deadLetters intake.DeadLetters
	lookup      func(context.Context, intake.Key) (intake.Record, error)
	// deadLetterQueue is the dead-letter queue's name; "" when
	// misconfigured.
	deadLetterQueue string
	sweepGrace      time.Duration
	now             func() time.Time
	// pager pages an operator; nil when ALERT_WEBHOOK_URL is unset.
	pager *alert.Pager
	// deadLetter sends a give-up to the dead-letter queue; nil when
	// SETTLE_DLQ is not bound.
	deadLetter settlequeue.Sender
}

// New builds the Worker from env. A setting that cannot work is logged
// once, as New starts, in one line naming it (make deploy's check catches
// vars before they get here); every request is then a 500 misconfigured
// naming it, before any storage call, and nothing settles.
func New(env Env) *Worker {
	cfg, err := config.Load(env.Var)
	if env.Console == nil {
		env.Console = io.Discard
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	log := eventlog.To(env.Console, cfg.LogLevel)
	w := &Worker{log: log, now: env.Now, meter: newMeter(env, log)}
	misconfigured := func(detail string) *Worker {
		log.Log(eventlog.Line{Outcome: "misconfigured", Error: detail})
		w.Handler = httpapi.Misconfigured(detail, httpapi.Options{Log: log, Now: env.Now, Metrics: w.meter.requests()})
		return w
	}
	if err != nil {
		return misconfigured(err.Error())
	}
	if w.meter != nil {
		w.meter.mode = cfg.Storage
	}
	// With METRICS bound, each request and settle attempt counts its
	// storage round trips and gateway time.
	env.KV = w.meter.namespace(env.KV)
	w.sweepGrace, w.deadLetterQueue = cfg.SweepGrace, cfg.DeadLetterQueue
	w.opts = intake.Options{
		ResultTTL:     cfg.ResultTTL,
		PendingTTL:    cfg.PendingTTL,
		Wait:          cfg.Wait,
		SettleMaxAge:  cfg.SettleMaxAge,
		Now:           env.Now,
		Sleep:         env.Sleep,
		Defer:         env.Defer,
		NewID:         env.NewID,
		Gateway:       w.meter.gateway(gateway(env, cfg)),
		ObserveSettle: w.meter.observeSettle(),
		OnReleaseError: func(key intake.Key, err error) {
			log.Log(eventlog.Line{Outcome: "claim_not_released", Client: key.Client, Key: key.ID, Error: err.Error()})
		},
		OnUnresolved: func(ctx context.Context, key intake.Key, p intake.Placement, attempts int) {
			log.Log(eventlog.Line{Outcome: "order_unresolved", Client: key.Client, Key: key.ID, OrderID: p.OrderID, Attempts: attempts, Alert: true,
				Error: "the settler gave up after " + config.SettleMaxAgeVar + ": the OMS never confirmed this order"})
		},
	}
	w.deadLetter = env.DeadLetter
	if cfg.AlertURL != "" && env.Fetch != nil {
		w.pager = alert.New(alert.Options{URL: cfg.AlertURL, RoutingKey: cfg.AlertRoutingKey, Source: AlertSource, Send: alert.Send(env.Fetch)})
	}
	if w.pager != nil || w.deadLetter != nil {
		w.opts.ReportUnresolved = w.reportGiveUp
	}
	if env.RateLimit != nil {
		w.opts.Limit = env.RateLimit
	}
	var kvStore *kv.Store
	if env.KV != nil {
		kvStore = kv.NewStore(env.KV, env.Now)
		kvStore.Sleep, kvStore.ReadsLag = env.Sleep, cfg.KVReadLag
		letters := kv.NewDeadLetterStore(env.KV)
		letters.Now = env.Now
		w.deadLetters = letters
	}
	var store intake.Store
	var adminStore intake.AdminStore // the store before it is counted
	switch cfg.Storage {
	case config.StorageLedger:
		if env.Ledger == nil {
			return misconfigured("the " + LedgerBinding + " Durable Object binding is missing; see wrangler.toml's [env.ledger]")
		}
		raw := env.Ledger(cfg.LedgerShards)
		adminStore, _ = raw.(intake.AdminStore)
		store = w.meter.store(raw)
		if !cfg.KVFallbackUntil.IsZero() {
			if kvStore == nil {
				return misconfigured(config.KVFallbackUntilVar + " is set but the " + KVBinding + " KV namespace binding is missing")
			}
			w.opts.Fallback, w.opts.FallbackUntil = kvStore, cfg.KVFallbackUntil
			if w.opts.Gateway != nil {
				w.adopting = kvStore
			}
		}
	default:
		if kvStore == nil {
			return misconfigured("the " + KVBinding + " KV namespace binding is missing; see wrangler.toml")
		}
		kvStore.ReleaseClaims = cfg.ReleaseClaims
		store, adminStore = kvStore, kvStore
		if env.SettleQueue != nil && w.opts.Gateway != nil {
			w.consumer, w.overdue = &settlequeue.Consumer{Queue: env.SettleQueue, Now: env.Now}, kvStore
			w.opts.Schedule = w.consumer.Schedule
		}
	}
	if cfg.Clients == nil && cfg.OpenAccess {
		log.Log(eventlog.Line{Outcome: "auth_disabled", Error: "no " + config.TokensVar + " secret and " + config.OpenAccessVar + " is true: the Worker accepts orders from anyone"})
	} else if cfg.Clients == nil {
		log.Log(eventlog.Line{Outcome: "auth_disabled", Error: "no " + config.TokensVar + " secret, and " + config.OpenAccessVar + " is not true: the Worker takes orders from no one, and answers them 500 misconfigured"})
	}
	if cfg.Admins != nil && adminStore == nil {
		return misconfigured(config.AdminTokensVar + " is set but the store cannot list its keys for the admin API")
	}
	w.Service = intake.New(store, w.opts)
	w.lookup = store.Lookup
	if w.consumer != nil {
		w.consumer.Settler = w.Service
	}
	var admin *intake.Admin
	if cfg.Admins != nil {
		admin = intake.NewAdmin(w.Service, adminStore)
	}
	w.Handler = httpapi.New(w.Service, httpapi.Options{Clients: cfg.Clients, Closed: !cfg.OpenAccess, Log: log, AllowedOrigins: cfg.AllowedOrigins, Now: env.Now,
		Metrics: w.meter.requests(), Admins: cfg.Admins, Admin: admin, DeadLetters: w.deadLetters})
	return w
}

// Settler is a Service over store (a ledger object's own rows) with the
// Worker's options, for the object's alarm; it caches no receipts, since
// it never replays, and during a migration reads KV's fallback only
// before it gives up on a key (Service.Settle). Nil when the Worker is misconfigured: the alarm then
// settles nothing.
func (w *Worker) Settler(store intake.Store) *intake.Service {
	if w.Service == nil {
		return nil
	}
	opts := w.opts
	opts.CachedReceipts, opts.Limit = -1, nil
	if opts.ReportUnresolved != nil {
		// A Settler serves one alarm: its pages share one budget.
		budget := alert.NewBudget(PagesPerRun)
		opts.ReportUnresolved = func(ctx context.Context, key intake.Key, p intake.Placement, attempts int) error {
			return w.reportGiveUp(alert.WithBudget(ctx, budget), key, p, attempts)
		}
	}
	return intake.New(w.meter.store(store), opts)
}

// reportUnresolved pages an operator for an order the settler is giving
// up on, before the give-up is stored (intake.Options.ReportUnresolved):
// an error leaves the key owing the page, due again.
func (w *Worker) reportUnresolved(ctx context.Context, key intake.Key, p intake.Placement, attempts int) error {
	return w.page(ctx, alert.Event{Kind: alert.KindUnresolved, Key: key, OrderID: p.OrderID, Attempts: attempts},
		"the key stays due, and is paged again once the settler tries it (in "+intake.ReportRetryDelay.String()+" or later)")
}

// reportGiveUp is the Service's ReportUnresolved, before the give-up is
// stored: the page, then the give-up's dead letter, sent to the
// dead-letter queue or, should that fail, recorded for the admin API. An
// error (the page failed, or the letter was neither sent nor recorded)
// leaves the key due again soon, for both once more: the key records what
// is owed, and a letter is never lost, as a page is not.
func (w *Worker) reportGiveUp(ctx context.Context, key intake.Key, p intake.Placement, attempts int) error {
	if w.pager != nil {
		if err := w.reportUnresolved(ctx, key, p, attempts); err != nil {
			return err
		}
	}
	if w.deadLetter == nil {
		return nil
	}
	err := w.deadLetter.Send(ctx, settlequeue.Message(key), 0)
	if err == nil {
		return nil
	}
	line := eventlog.Line{Outcome: "dead_letter_unsent", Client: key.Client, Key: key.ID, OrderID: p.OrderID, Attempts: attempts,
		Error: "sending the give-up to " + DeadLetterBinding + ": " + err.Error() + "; "}
	note, err := w.recordGiveUp(ctx, key, p, attempts)
	line.Error += note
	if err != nil {
		line.Alert = true
		line.Error += "; the key stays due, and its letter is owed once the settler tries it (in " + intake.ReportRetryDelay.String() + " or later)"
	}
	w.log.Log(line)
	return err
}

// page sends e, and logs at error level a page that failed, with what
// becomes of it (then).
func (w *Worker) page(ctx context.Context, e alert.Event, then string) error {
	err := w.pager.Page(ctx, e)
	if err != nil {
		w.log.Log(eventlog.Line{Outcome: "alert_failed", Client: e.Key.Client, Key: e.Key.ID, OrderID: e.OrderID, Attempts: e.Attempts, Alert: true,
			Error: "paging " + e.Kind + ": " + err.Error() + "; " + then})
	}
	return err
}

// QueueMessage handles a message of either queue the Worker consumes,
// told apart by the queue's name: a dead letter (DeadLetterMessage), or a
// settle message (SettleMessage). Each is retried, never acknowledged,
// while the Worker is misconfigured. An error has the queue deliver the
// message again after RetryDelay.
func (w *Worker) QueueMessage(ctx context.Context, m workers.QueueMessage) error {
	switch {
	case w.Service == nil:
		return errors.New("app: the Worker is misconfigured (see its 500 answers): the message waits for a fix")
	case m.Queue == w.deadLetterQueue:
		return w.DeadLetterMessage(ctx, m.ID, m.Body)
	}
	return w.SettleMessage(ctx, m.Body)
}

// RetryDelay is how long m waits for its next delivery after it failed:
// DeadLetterRetryDelay for a dead letter, QueueRetryDelay for a settle
// message. A misconfigured Worker cannot tell them apart, and gives every
// message the dead letters' delays, so that none runs out of retries
// before someone fixes the setting.
func (w *Worker) RetryDelay(m workers.QueueMessage) time.Duration {
	if w.Service == nil || m.Queue == w.deadLetterQueue {
		return DeadLetterRetryDelay(m.Attempts)
	}
	return QueueRetryDelay
}

// SettleMessage settles the key a settle queue message names. An error
// has the queue deliver the message again; a body that is no settle
// message is logged and acknowledged.
func (w *Worker) SettleMessage(ctx context.Context, body []byte) error {
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

// DeadLetterMessage records the key a dead-letter queue message names,
// with what the store holds for it, as the letter messageID names (see
// letterID), where the admin API lists it until an operator acknowledges
// it. A letter for a key that was not unresolved (a settle message that
// kept failing) is logged as an alert: nothing else reported it. A
// delivery of a letter acknowledged already is logged, not recorded
// again. An error has the queue deliver the message again; a body that is
// no settle message is logged and acknowledged.
func (w *Worker) DeadLetterMessage(ctx context.Context, messageID string, body []byte) error {
	key, err := settlequeue.ParseMessage(body)
	if err != nil {
		w.log.Log(eventlog.Line{Outcome: "dead_letter_dropped", Error: err.Error()})
		return nil
	}
	if w.deadLetters == nil || w.lookup == nil {
		return errors.New("app: no " + KVBinding + " namespace to record the dead letter in")
	}
	rec, err := w.lookup(ctx, key)
	if err != nil {
		return err
	}
	d := intake.DeadLetter{Key: key, ID: letterID(messageID), Received: w.now()}
	if intake.AttentionOf(rec) != 0 {
		d.OrderID, d.Attempts, d.Unresolved = rec.OrderID, rec.Attempts, rec.GiveUp.Unresolved()
	}
	switch err := w.deadLetters.Record(ctx, d); {
	case errors.Is(err, intake.ErrLetterAcknowledged):
		w.log.Log(eventlog.Line{Outcome: "dead_letter_acknowledged", Client: key.Client, Key: key.ID, LetterID: d.ID,
			Error: "delivered again after an operator acknowledged it: not listed again"})
		return nil
	case err != nil:
		return err
	}
	// An unresolved key's letter was paged as the settler gave up on it.
	owed := !d.Unresolved && d.OrderID != ""
	w.log.Log(eventlog.Line{Outcome: "dead_letter", Client: key.Client, Key: key.ID, OrderID: d.OrderID, Attempts: d.Attempts, LetterID: d.ID,
		Alert: owed,
		Error: "recorded for the admin API (" + httpapi.DeadLettersPath + ") until an operator acknowledges it"})
	if owed && w.pager != nil {
		// The letter is the page owed: an error has the queue deliver it
		// again, and the page is sent again.
		return w.page(ctx, alert.Event{Kind: alert.KindDeadLetter, Key: key, OrderID: d.OrderID, Attempts: d.Attempts},
			"the dead-letter queue delivers the letter again (after "+DeadLetterRetryFirst.String()+", doubling up to "+DeadLetterRetryMax.String()+"), and it is paged again")
	}
	return nil
}

// recordGiveUp records the dead letter of a give-up whose send to the
// dead-letter queue failed, which nothing sends again once the give-up is
// stored: the key is final, and the sweep passes it by. Its id is the
// order's and the give-up's attempts, so that a second record of one
// give-up is the same letter, and a later give-up of the order (a
// client's retry failed, and the give-up's check gave up again) a new
// one, as its message through the queue would be, even once an operator
// acknowledged the first. It says what became of the letter, for the log
// line, and fails where the letter is recorded nowhere.
func (w *Worker) recordGiveUp(ctx context.Context, key intake.Key, p intake.Placement, attempts int) (string, error) {
	if w.deadLetters == nil {
		return "", errors.New("no letter can be recorded: the " + KVBinding + " KV namespace binding is missing")
	}
	id := letterID("give-up-" + p.OrderID + "-" + strconv.Itoa(attempts))
	d := intake.DeadLetter{Key: key, ID: id, OrderID: p.OrderID, Attempts: attempts, Unresolved: true, Received: w.now()}
	switch err := w.deadLetters.Record(ctx, d); {
	case errors.Is(err, intake.ErrLetterAcknowledged):
		return "its letter, " + id + ", was recorded and acknowledged already", nil
	case err != nil:
		return "recording its letter failed too: " + err.Error(), err
	}
	return "its letter is recorded for the admin API (" + httpapi.DeadLettersPath + ") instead", nil
}

// letterID is the id of the letter a queue message brings: the message's
// own, the same at each of its deliveries, where it can name a letter
// (httpapi.ValidLetterID), else a digest of it.
func letterID(messageID string) string {
	if httpapi.ValidLetterID(messageID) {
		return messageID
	}
	sum := sha256.Sum256([]byte(messageID))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// Sweep settles KV mode's overdue keys, those whose settle message was
// never sent: the Cron Trigger's work. In ledger mode during a migration
// it adopts the keys KV mode left open instead (adoptOverdue).
func (w *Worker) Sweep(ctx context.Context) error {
	if w.adopting != nil {
		return w.adoptOverdue(ctx)
	}
	if w.consumer == nil {
		return nil
	}
	ctx = alert.WithBudget(ctx, alert.NewBudget(PagesPerRun))
	n, err := w.consumer.Sweep(ctx, w.overdue, w.now(), w.sweepGrace, SweepLimit)
	if n > 0 || err != nil {
		line := eventlog.Line{Outcome: "settle_sweep", Attempts: n}
		if err != nil {
			line.Error = err.Error()
		}
		w.log.Log(line)
	}
	return err
}

// leftOpen lists the keys KV mode may have left open, SweepLimit at a
// time, going on across calls (kv.Store.LeftOpen).
type leftOpen interface {
	LeftOpen(ctx context.Context, limit int) ([]intake.Key, error)
}

// adoptOverdue, in ledger mode during a migration, adopts the keys the
// KV-mode Worker left open, due, backing off or given up on, up to
// SweepLimit a run, so that the ledger's alarm settles them though no
// client comes back (intake.Service.Adopt). Each run goes on from where
// the last stopped, so N keys left open are all reached within
// N/SweepLimit runs plus one, and then checked again, until the
// fallback's time has passed: every such key's KeepUntil is past it.
// Each key adopted gets a kv_adopted line, naming it.
func (w *Worker) adoptOverdue(ctx context.Context) error {
	now := w.now()
	if !now.Before(w.opts.FallbackUntil) {
		return nil
	}
	keys, err := w.adopting.LeftOpen(ctx, SweepLimit)
	for _, key := range keys {
		ok, aerr := w.Service.Adopt(ctx, key)
		if ok {
			w.log.Log(eventlog.Line{Outcome: "kv_adopted", Client: key.Client, Key: key.ID})
		}
		if aerr != nil {
			err = errors.Join(err, aerr)
		}
	}
	if err != nil {
		w.log.Log(eventlog.Line{Outcome: "kv_adoption_error", Error: err.Error()})
	}
	return err
}

// gateway is the OMS gateway: the OMS service binding if there is one,
// else OMS_URL over the network, else nil, the reference's stand-in.
func gateway(env Env, cfg config.Config) intake.Gateway {
	gw := oms.Options{URL: cfg.OMSURL, Token: cfg.OMSToken, Timeout: cfg.OMSTimeout}
	if env.OMS != nil {
		if gw.URL == "" {
			gw.URL = OMSBindingURL
		}
		gw.Send = env.OMS
		return oms.New(gw)
	}
	if gw.URL == "" || env.Fetch == nil {
		return nil
	}
	gw.Send = env.Fetch
	return oms.New(gw)
}
