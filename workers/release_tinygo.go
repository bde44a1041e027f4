//go:build js && wasm && tinygo

package workers

import (
	"runtime"
	"syscall/js"
	"unsafe"
)

// valueLayout is syscall/js.Value's layout (Go 1.19 to 1.25, the versions
// TinyGo 0.40 compiles with): the value's id in wasm_exec.js's table, and
// the pointer its finalizer hangs on, nil for a value the table does not
// count (a number, a boolean, undefined, null, a predefined global).
type valueLayout struct {
	_     [0]func()
	ref   uint64
	gcPtr *uint64
}

// finalizeRef is wasm_exec.js's own release of one id: it lowers the
// value's count and frees the slot at zero.
//
//go:wasmimport gojs syscall/js.finalizeRef
func finalizeRef(ref uint64)

// layoutKnown says syscall/js.Value is laid out as valueLayout says: a
// value made here must carry its own id behind its finalizer's pointer,
// as makeValue sets it. If not (a TinyGo whose syscall/js changed),
// Release does nothing: a leak, but never a slot freed wrongly.
var layoutKnown = func() bool {
	v := js.ValueOf("workers: layout probe")
	l := (*valueLayout)(unsafe.Pointer(&v))
	known := unsafe.Sizeof(v) == unsafe.Sizeof(valueLayout{}) && l.gcPtr != nil && *l.gcPtr == l.ref
	if known {
		runtime.SetFinalizer(l.gcPtr, nil)
		finalizeRef(l.ref)
	}
	return known
}()

func init() {
	if !layoutKnown {
		println("workers: syscall/js.Value is not laid out as this bridge knows; JavaScript values will not be released")
	}
}

// Release gives each value's slot in wasm_exec.js's table back at once.
// It first clears the value's finalizer, so that a TinyGo whose finalizers
// run (later than 0.40) never frees the slot a second time.
func Release(values ...js.Value) {
	if !layoutKnown {
		return
	}
	for i := range values {
		l := (*valueLayout)(unsafe.Pointer(&values[i]))
		if l.gcPtr == nil {
			continue
		}
		runtime.SetFinalizer(l.gcPtr, nil)
		finalizeRef(l.ref)
	}
}

// crossing converts the string arguments of a call into JavaScript values
// the caller releases once the call has returned: syscall/js would
// otherwise make each into a value nobody releases. args is not changed.
func crossing(args []any) (converted []any, made []js.Value) {
	converted = args
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			continue
		}
		if made == nil {
			converted = append([]any(nil), args...)
		}
		v := js.ValueOf(s)
		converted[i] = v
		made = append(made, v)
	}
	return converted, made
}
