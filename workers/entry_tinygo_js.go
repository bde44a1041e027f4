//go:build js && wasm && tinygo

package workers

import (
	"runtime"
	"syscall/js"
)

// enter runs entry number e with its three numbers, on the system stack:
// it must not block, which every entry promises.
//
//export edge_orders_enter
func enter(e, a, b, c int32) int32 { return runEntry(e, a, b, c) }

// collectFunc is the function that runs the collector and answers the
// live heap.
func collectFunc() js.Value {
	return goFunc(func(_, _, _ int) int {
		collect()
		return liveHeap()
	})
}

// The pool's goroutines start with the first event, while the heap is
// young (goroutinePool.prestart): one started later may find no free run
// for its stack and double the heap. Started with the program, they took
// most of its start (goroutinePool.startLater).
func init() { goroutines.startLater(maxIdleGoroutines) }

// collect runs the collector. TinyGo runs no finalizers, and an entry
// runs on the system stack, where nothing may yield.
func collect() { runtime.GC() }
