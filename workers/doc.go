// Package workers is the bridge between Go and the Cloudflare Workers
// runtime: it serves fetch events, exposes the environment's variables and
// bindings as Go values, awaits JavaScript promises, and forwards Durable
// Object method calls into Go.
//
// Everything that touches syscall/js lives in this package's _js.go files,
// in the binding files of kv, ledger and ratelimit, and in internal/uuid's
// random source; the rest of the program is portable Go that builds and
// tests natively.
package workers
