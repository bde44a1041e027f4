//go:build js && wasm && !tinygo

package workers

import (
	"runtime"
	"syscall/js"
)

// goFunc returns the JavaScript function that calls fn. Under standard Go
// it is a js.FuncOf: a call runs fn on the runtime's event goroutine, and
// the two values each call hands Go are freed by the collector.
func goFunc(fn entry) js.Value {
	return js.FuncOf(func(_ js.Value, args []js.Value) any {
		var n [3]int
		for i := range min(len(args), len(n)) {
			n[i] = args[i].Int()
		}
		return fn(n[0], n[1], n[2])
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
