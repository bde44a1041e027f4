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
// back if it is an Error. serve's arguments are released when it returns;
// its result is released once JavaScript has it. serve must not wait for anything (no promise, no
// channel another request could fill): it then runs whole, wakes no other
// request's goroutine, and is atomic within the object. A panic, such as a
// JavaScript exception from a storage call, becomes the thrown Error.
func ExportObject(class string, serve ObjectMethod) {
	if len(objectClasses) == 0 {
		js.Global().Set(objectGlobal, js.FuncOf(callObject))
	}
	objectClasses[class] = serve
}

// lastResult is what the previous method call returned. JavaScript has
// read it by the time the next call comes in, and only then may Go release
// it (see Release): calls never overlap, since each runs whole.
var lastResult = js.Undefined()

func callObject(_ js.Value, args []js.Value) any {
	Release(lastResult)
	lastResult = serveObjectCall(args)
	return lastResult
}

// serveObjectCall runs one method call: args are (class, method, state,
// the call's arguments), all released when it returns.
func serveObjectCall(args []js.Value) (result js.Value) {
	defer Release(args...)
	defer func() {
		if p := recover(); p != nil {
			if jsErr, ok := p.(js.Error); ok {
				result = jsErr.Value
				return
			}
			result = newError("Durable Object call: " + errs.PanicText(p))
		}
	}()
	class, method, state, callArgs := args[0].String(), args[1].String(), args[2], args[3]
	serve, ok := objectClasses[class]
	if !ok {
		return newError("no Durable Object class " + class + " in the Go program")
	}
	list := make([]js.Value, callArgs.Length())
	for i := range list {
		list[i] = callArgs.Index(i)
	}
	defer Release(list...)
	v, err := serve(state, method, list)
	if err != nil {
		return newError(err.Error())
	}
	return v
}

// newError returns a new JavaScript Error with message.
func newError(message string) js.Value {
	args, made := crossing([]any{message})
	defer Release(made...)
	return jsError.New(args...)
}
