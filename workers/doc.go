// Package workers is the bridge between Go and the Cloudflare Workers
// runtime: it serves fetch, queue and scheduled events, reads the
// environment's variables, names its bindings, runs binding calls, and
// forwards Durable Object method calls and alarms into Go.
//
// JavaScript owns every object (bridge.mjs keeps them in one table and
// names them by number, Handle); Go passes numbers and frames of bytes,
// never a JavaScript value, so the bridge takes no slot in wasm_exec.js's
// table per request and needs no releases, under either compiler. A
// binding call is one call out and one call back in when it settles; a
// request is one call in with its head and one call out with its response.
//
// Every binding is typed here, next to its JavaScript half in bridge.mjs:
// KV, RateLimiter, DurableObjectNamespace, Queue and Fetcher, each from
// Env's accessor of its kind (Env.KV("ORDERS")). kv and ledger adapt them
// to the domain's ports, in files built for js && wasm. Only this
// package's _js.go files touch syscall/js or name a bridge call; the rest
// of the program is portable Go that builds and tests natively.
package workers
