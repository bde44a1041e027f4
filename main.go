//go:build js && wasm

// Command edge-orders is the order-intake Worker: it wires the Workers KV
// binding and the environment into the service and serves it.
package main

import (
	"os"
	"syscall/js"

	"edge-orders/httpapi"
	"edge-orders/intake"
	"edge-orders/kv"
	"edge-orders/worker"
)

// binding is the KV namespace binding named in wrangler.toml.
const binding = "ORDERS"

func main() {
	worker.Serve(func(env js.Value) worker.Handler {
		ns := env.Get(binding)
		if ns.Type() != js.TypeObject {
			return httpapi.Misconfigured("the "+binding+" KV namespace binding is missing; see wrangler.toml", logLine)
		}
		svc := intake.New(kv.NewWorkers(ns), &intake.Options{
			Defer: worker.WaitUntil,
			OnReleaseError: func(key string, err error) {
				logLine(httpapi.LogLine{Outcome: "claim_not_released", Key: key, Error: err.Error()})
			},
		})
		h := httpapi.New(svc)
		h.Log = logLine
		return h
	})
}

// logLine prints one JSON line to the console, which Workers Logs indexes.
func logLine(l httpapi.LogLine) {
	os.Stdout.Write(append(l.JSON(), '\n'))
}
