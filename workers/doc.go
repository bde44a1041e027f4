// Package workers is the bridge between Go and the Cloudflare Workers
// runtime: it serves fetch, queue and scheduled events, reads the
// environment's variables, names its bindings, runs binding calls, and
// forwards Durable Object method calls and alarms into Go.
//
// JavaScript owns every object (bridge.mjs keeps them in one table and
// names them by number, Handle); Go passes numbers and frames of bytes
// (Frame, Fields), never a JavaScript value, so the bridge takes no slot in
// wasm_exec.js's table per request and needs no releases, under either
// compiler. A binding call is one call out (Call) and one call back in
// when it settles; a request is one call in with its head and one call
// out with its response.
//
// Only this package's _js.go files touch syscall/js. The binding files of
// kv, ledger and ratelimit (and internal/uuid's random source) use its
// Handle and Call, in files built for js && wasm; the rest of the program
// is portable Go that builds and tests natively.
package workers
