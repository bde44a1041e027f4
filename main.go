//go:build js && wasm

// Command edge-orders is the order-intake Worker. main only wires:
// environment, configuration, storage, lifecycle, HTTP.
package main

import (
	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/oms"
	"github.com/edge-orders/edge-orders/ratelimit"
	"github.com/edge-orders/edge-orders/workers"
)

// Binding names, as wrangler.toml declares them.
const (
	kvBinding        = "ORDERS"
	ledgerBinding    = "LEDGER"
	rateLimitBinding = "NEW_ORDERS_LIMIT"
	omsBinding       = "OMS"
)

// omsBindingURL is the URL a service-bound gateway Worker sees when
// OMS_URL does not name one.
const omsBindingURL = "https://oms/orders"

func main() {
	ledger.Export()
	workers.Serve(newHandler)
}

// newHandler builds the Worker from its environment, once per isolate. A
// setting that cannot work makes every request a 500 misconfigured naming
// it, before any storage call.
func newHandler(env workers.Env) workers.Handler {
	cfg, err := config.Load(env.Var)
	log := eventlog.To(workers.Console, cfg.LogLevel)
	misconfigured := func(detail string) workers.Handler {
		return httpapi.Misconfigured(detail, httpapi.Options{Log: log})
	}
	if err != nil {
		return misconfigured(err.Error())
	}
	opts := intake.Options{
		ResultTTL:  cfg.ResultTTL,
		PendingTTL: cfg.PendingTTL,
		Wait:       cfg.Wait,
		Sleep:      workers.Sleep,
		Defer:      workers.WaitUntil,
		Gateway:    newGateway(env, cfg),
		OnReleaseError: func(key intake.Key, err error) {
			log.Log(eventlog.Line{Outcome: "claim_not_released", Client: key.Client, Key: key.ID, Error: err.Error()})
		},
	}
	if limiter, ok := env.Binding(rateLimitBinding); ok {
		opts.Limit = ratelimit.New(limiter).Allow
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
		opts.ValidateFirst = true
		if !cfg.KVFallbackUntil.IsZero() {
			if !hasKV {
				return misconfigured(config.KVFallbackUntilVar + " is set but the " + kvBinding + " KV namespace binding is missing")
			}
			opts.Fallback, opts.FallbackUntil = kvStore, cfg.KVFallbackUntil
		}
	default:
		if !hasKV {
			return misconfigured("the " + kvBinding + " KV namespace binding is missing; see wrangler.toml")
		}
		store = kvStore
		opts.ReleaseAfterCommit = cfg.ReleaseClaims
	}
	if cfg.Clients == nil {
		log.Log(eventlog.Line{Outcome: "auth_disabled", Error: "no " + config.TokensVar + " secret: the Worker accepts orders from anyone"})
	}
	return httpapi.New(intake.New(store, opts), httpapi.Options{Clients: cfg.Clients, Log: log})
}

// newGateway returns the OMS gateway: the OMS service binding if there is
// one, else OMS_URL over the network, else the reference's stand-in.
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
		return intake.StandIn{}
	}
	gw.Send = workers.Fetcher(workers.GlobalFetch())
	return oms.New(gw)
}
