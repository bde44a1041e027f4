//go:build js && wasm && tinygo

package workers

import (
	"runtime"
	"syscall/js"
)

// entries are the functions goFunc made, by number.
var entries []entry

// exportedGlobal is the function workers/wasm_exec_tinygo.js defines for
// this program: given an entry's number, it returns the JavaScript
// function that calls it through enter, then runs the scheduler.
const exportedGlobal = "__goExported"

// goFunc returns the JavaScript function that calls fn. Under TinyGo it
// calls the wasm export enter rather than a js.FuncOf: TinyGo starts a
// goroutine for every js.FuncOf call, with a stack on its heap that it
// scans conservatively, and dead stacks that stale words point to stay
// pinned. An export runs fn on the caller's stack, so a call into Go
// starts no goroutine unless fn starts one.
func goFunc(fn entry) js.Value {
	entries = append(entries, fn)
	return js.Global().Call(exportedGlobal, len(entries)-1)
}

// enter runs entry number e with its three numbers, on the system stack:
// it must not block, which every entry promises.
//
//export edge_orders_enter
func enter(e, a, b, c int32) int32 {
	return int32(entries[e](int(a), int(b), int(c)))
}

// The pool's goroutines start with the program, while the heap is young
// (goroutinePool.prestart): one started later may find no free run for
// its stack and double the heap.
func init() { goroutines.prestart(maxIdleGoroutines) }

// collect runs the collector. TinyGo runs no finalizers, and an entry
// runs on the system stack, where nothing may yield.
func collect() { runtime.GC() }
