//go:build js && wasm

package workers

import (
	"syscall/js"

	"github.com/edge-orders/edge-orders/internal/errs"
)

// objectGlobal is the name of the function the entry's Durable Object
// classes call with (class, method, state, args).
const objectGlobal = "__goObject"

// ObjectMethod serves a call of a Durable Object method: state is the
// object's DurableObjectState, args the call's arguments.
type ObjectMethod func(state js.Value, method string, args []js.Value) (js.Value, error)

var objectClasses = map[string]ObjectMethod{}

// ExportObject serves the Durable Object class named class. The entry's
// class forwards each method call, synchronously, and throws what comes
// back if it is an Error. serve must not wait for anything (no promise, no
// channel another request could fill): it then runs whole, wakes no other
// request's goroutine, and is atomic within the object. A panic, such as a
// JavaScript exception from a storage call, becomes the thrown Error.
func ExportObject(class string, serve ObjectMethod) {
	if len(objectClasses) == 0 {
		js.Global().Set(objectGlobal, js.FuncOf(callObject))
	}
	objectClasses[class] = serve
}

func callObject(_ js.Value, args []js.Value) (result any) {
	defer func() {
		if p := recover(); p != nil {
			if jsErr, ok := p.(js.Error); ok {
				result = jsErr.Value
				return
			}
			result = jsError.New("Durable Object call: " + errs.PanicText(p))
		}
	}()
	class, method, state, callArgs := args[0].String(), args[1].String(), args[2], args[3]
	serve, ok := objectClasses[class]
	if !ok {
		return jsError.New("no Durable Object class " + class + " in the Go program")
	}
	list := make([]js.Value, callArgs.Length())
	for i := range list {
		list[i] = callArgs.Index(i)
	}
	v, err := serve(state, method, list)
	if err != nil {
		return jsError.New(err.Error())
	}
	return v
}
