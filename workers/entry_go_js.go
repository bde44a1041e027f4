//go:build js && wasm && !tinygo

package workers

import (
	"runtime"
	"syscall/js"
)

// enter runs entry number e with its three numbers, on the goroutine that
// Go paused on when it last returned to JavaScript. It must not block:
// wasm_exec_entry.js then resumes the scheduler, which runs what the
// entry woke until every goroutine waits.
//
//go:wasmexport edge_orders_enter
func enter(e, a, b, c int32) int32 { return runEntry(e, a, b, c) }

// collectFunc is the function that runs the collector and answers the
// live heap: a js.FuncOf, not an export, since a collection waits for the
// collector's goroutines, which only an event's goroutine may do.
func collectFunc() js.Value {
	return js.FuncOf(func(js.Value, []js.Value) any {
		collect()
		return liveHeap()
	}).Value
}

// collect runs the collector, and lets the finalizers, which free the
// values Go dropped from wasm_exec.js's table, run on their goroutine.
func collect() {
	for range 2 {
		runtime.GC()
		runtime.Gosched()
	}
}
