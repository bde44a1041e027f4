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

// goFunc returns the JavaScript function that calls fn through the wasm
// export, under both compilers (doc.go says why not a js.FuncOf): no call
// out of Go, no JavaScript value, no goroutine unless fn starts one. fn
// must not block, which every entry promises.
func goFunc(fn entry) js.Value {
	entries = append(entries, fn)
	return js.Global().Call(exportedGlobal, len(entries)-1)
}

// runEntry runs entry number e with its three numbers.
func runEntry(e, a, b, c int32) int32 {
	return int32(entries[e](int(a), int(b), int(c)))
}
