// Package workers is the bridge between Go and the Cloudflare Workers
// runtime: it serves fetch, queue and scheduled events, reads the
// environment's variables, names its bindings, runs binding calls, and
// forwards Durable Object method calls and alarms into Go.
//
// Every binding is typed here, next to its JavaScript half in bridge.mjs:
// KV, RateLimiter, DurableObjectNamespace, Queue, Fetcher and
// AnalyticsEngineDataset, each from Env's accessor of its kind
// (Env.KV("ORDERS")). kv and ledger adapt them
// to the domain's ports, in files built for js && wasm. Only this
// package's _js.go files touch syscall/js or name a bridge call; the rest
// of the program is portable Go that builds and tests natively.
//
// # Numbers and bytes
//
// Every JavaScript value Go holds takes a slot in wasm_exec.js's table,
// freed only by a Go finalizer, which TinyGo 0.40 never runs. So Go holds none.
// JavaScript owns every object (a request, the environment, a binding, a
// Durable Object's state): bridge.mjs keeps them in one table and names
// each to Go by number, a Handle. Everything else crosses as bytes, in
// frames (each field a varint length and its bytes), through
// one long-lived Uint8Array copied with js.CopyBytesToGo and
// js.CopyBytesToJS, which take no slot:
//
//   - a request enters Go in one call, its head (method, URL, headers) as a
//     frame; its body is read in one binding call, only once the checks
//     pass; the response leaves in one call;
//   - a binding call (KV, the ledger's RPC, fetch, the rate limit, a queue
//     send, a timer) is one call out and one call back into Go when
//     its promise settles, its answer copied within that call; KV's read of
//     several keys is one call (Promise.all in JavaScript);
//   - an Analytics Engine data point is one synchronous call out, its
//     fields one frame, with nothing to await and no call back;
//   - a Durable Object method is one synchronous call into Go, whose SQL
//     runs through synchronous bridge calls;
//   - random bytes are written into the buffer by crypto.getRandomValues.
//
// Nothing is released by hand, under either compiler. The end-to-end tests
// TestBridgeKeepsNothingPastItsRequest (after every kind of request the
// bridge's table comes back to where it was, and wasm_exec.js's stays
// flat) and TestCrossingsPerRequest (calls into and out of Go per request)
// keep it so.
//
// # One instance, many requests
//
// One Go instance per isolate serves every request and every ledger call of
// that isolate; a Go runtime per request would cost tens of milliseconds
// each. Two rules keep requests apart in it: a request's goroutine is woken
// only by its own binding calls' answers (Sleep uses a JavaScript timer,
// not a Go one), so its JavaScript calls run in its own I/O context; and a
// Durable Object method is one synchronous Go call that waits for nothing.
// Every entry into Go returns without blocking; work that waits runs on a
// goroutine of the package's pool, which keeps its goroutines for the next
// event (under TinyGo, started with the first event) instead of starting
// one per request.
//
// # The two compilers
//
// The pinned TinyGo builds the Worker wherever it is installed (build.sh,
// COMPILER=auto), standard Go elsewhere, with a line saying so; a deploy
// names its compiler (COMPILER=tinygo, which never falls back). make
// tinygo installs the pinned release on a Debian-like machine
// (tools/install-tinygo.sh), and CI runs the whole suite with each
// compiler, the conformance binaries included. How the builds differ:
//
//   - size: TinyGo's module is about a quarter of standard Go's under
//     gzip, its runtime being far smaller;
//   - start: TinyGo's runtime starts in a fraction of standard Go's time,
//     most of what is left being package initialisation and V8 compiling
//     the functions that start runs;
//   - goroutines: under TinyGo every goroutine's stack is one fixed block
//     on the heap (build.sh's stack size), and blocking unwinds the wasm
//     stack (asyncify), which also makes every function that may block
//     larger; the pool keeps its goroutines for that reason;
//   - panics: standard Go recovers a request's panic and answers 500
//     (ServePanic); TinyGo's wasm has no recover, so a panic traps
//     (build.sh's -panic=trap, which prints no message): the program is
//     ended, every request it held is answered 500 from what AnswerTraps
//     set, and the next event starts a fresh one (trap_js.go,
//     wasm_exec_entry.js); the log's stack names the Go function, since
//     the module keeps its name section;
//   - the collector: TinyGo's scans conservatively, never returns memory
//     and runs no finalizers, where standard Go's runs them; the bridge
//     relies on neither (Numbers and bytes, above);
//   - libraries: TinyGo's reflect cannot do all that encoding/json needs
//     and t.Skip cannot end a test; the Worker uses neither. Its errors.As
//     into an interface (var x interface{ M() }) panics on an error that
//     does not implement it (TinyGo 0.40.1): the Worker asserts while it
//     unwraps instead (intake's noResend), and the ledger's conformance
//     run in workerd, built by TinyGo, takes that path.
//
// Which one auto picks follows the bench and soak (bench/README.md has the
// figures, and the rows that keep standard Go the default).
//
// Both run the same Go source, and enter it the same way: a call from
// JavaScript into Go is the wasm export edge_orders_enter (entry_js.go,
// called by wasm_exec_entry.js, which build.sh appends to either
// compiler's wasm_exec.js), not a js.FuncOf. Under standard Go a
// js.FuncOf call is an event that syscall/js reads back with about ten
// calls out of Go, each value a slot with a finalizer; under TinyGo it is
// a goroutine of its own, whose stack lives on its heap, scanned
// conservatively, where dead stacks stay pinned. An export takes its
// numbers as arguments and runs on the caller's stack; the scheduler then
// runs what it woke.
package workers
