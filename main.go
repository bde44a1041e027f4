//go:build js && wasm

// Command edge-orders is the order-intake Worker: it wires the Workers KV
// binding and the environment into the service and serves it.
package main

import (
	"os"
	"syscall/js"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/workers"
)

// binding is the KV namespace binding named in wrangler.toml.
const binding = "ORDERS"

func main() {
	workers.Serve(newHandler)
}

// newHandler builds the Worker from its environment, once per isolate. A
// setting that cannot work makes every request a 500 misconfigured naming
// it, before any KV call.
func newHandler(env js.Value) workers.Handler {
	ns := env.Get(binding)
	if ns.Type() != js.TypeObject {
		return httpapi.Misconfigured("the "+binding+" KV namespace binding is missing; see wrangler.toml", logLine)
	}
	cfg, err := config.Load(func(name string) (string, bool) {
		// [vars] may hold numbers: read every value as its string form.
		switch v := env.Get(name); v.Type() {
		case js.TypeUndefined, js.TypeNull:
			return "", false
		case js.TypeString:
			return v.String(), true
		default:
			return js.Global().Call("String", v).String(), true
		}
	})
	if err != nil {
		return httpapi.Misconfigured(err.Error(), logLine)
	}
	if cfg.Clients == nil {
		logLine(httpapi.LogLine{Outcome: "auth_disabled", Error: "no " + config.TokensVar + " secret: the Worker accepts orders from anyone"})
	}
	svc := intake.New(kv.NewWorkers(ns), &intake.Options{
		ResultTTL:  cfg.ResultTTL,
		PendingTTL: cfg.PendingTTL,
		Defer:      workers.WaitUntil,
		OnReleaseError: func(key string, err error) {
			logLine(httpapi.LogLine{Outcome: "claim_not_released", Key: key, Error: err.Error()})
		},
	})
	h := httpapi.New(svc, cfg.Clients)
	h.Log = logLine
	return h
}

// logLine prints one JSON line to the console, which Workers Logs indexes.
func logLine(l httpapi.LogLine) {
	os.Stdout.Write(append(l.JSON(), '\n'))
}
