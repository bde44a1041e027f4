//go:build js && wasm

// Command edge-orders is the order-intake Worker: it wires the Workers KV
// binding and the environment into the service and serves it.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"syscall/js"

	"edge-orders/httpapi"
	"edge-orders/intake"
	"edge-orders/kv"
	"edge-orders/worker"
)

// binding is the KV namespace binding named in wrangler.toml.
const binding = "ORDERS"

func main() {
	worker.Serve(func(env js.Value) http.Handler {
		ns := env.Get(binding)
		if ns.Type() != js.TypeObject {
			return httpapi.Misconfigured(fmt.Sprintf("the %s KV namespace binding is missing; see wrangler.toml", binding))
		}
		svc := intake.New(kv.NewWorkers(ns), &intake.Options{
			Defer: worker.WaitUntil,
			OnReleaseError: func(key string, err error) {
				fmt.Printf("claim on %q not released, it expires by itself: %v\n", key, err)
			},
		})
		h := httpapi.New(svc)
		h.Log = logLine
		return h
	})
}

// logLine prints one JSON line to the console, which Workers Logs indexes.
func logLine(l httpapi.LogLine) {
	b, _ := json.Marshal(l)
	fmt.Println(string(b))
}
