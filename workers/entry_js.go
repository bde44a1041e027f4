//go:build js && wasm

package workers

import "syscall/js"

// entries are the functions goFunc made, by number.
var entries []entry

// exportedGlobal is the function workers/wasm_exec_entry.js defines for
// this program: given an entry's number, it returns the JavaScript
// function that calls it through the export edge_orders_enter
// (entry_go_js.go, entry_tinygo_js.go), then runs the scheduler.
const exportedGlobal = "__goExported"

// goFunc returns the JavaScript function that calls fn, through the wasm
// export rather than a js.FuncOf, under both compilers. Under standard Go
// a js.FuncOf call is an event that syscall/js reads back with about ten
// calls out of Go, each value it reads a slot in wasm_exec.js's table
// with a finalizer; under TinyGo it starts a goroutine, with a stack on
// its heap that it scans conservatively, where dead stacks that stale
// words point to stay pinned. An export takes its numbers as arguments
// and runs fn on the caller's stack: no call out, no value, no goroutine
// unless fn starts one. fn must not block, which every entry promises.
func goFunc(fn entry) js.Value {
	entries = append(entries, fn)
	return js.Global().Call(exportedGlobal, len(entries)-1)
}

// runEntry runs entry number e with its three numbers.
func runEntry(e, a, b, c int32) int32 {
	return int32(entries[e](int(a), int(b), int(c)))
}
