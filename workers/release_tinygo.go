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

func init() {
	if unsafe.Sizeof(js.Value{}) != unsafe.Sizeof(valueLayout{}) {
		panic("workers: syscall/js.Value is not laid out as Release expects; this TinyGo needs a newer bridge")
	}
}

// Release gives each value's slot in wasm_exec.js's table back at once.
// It first clears the value's finalizer, so that a TinyGo whose finalizers
// run (later than 0.40) never frees the slot a second time.
func Release(values ...js.Value) {
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
