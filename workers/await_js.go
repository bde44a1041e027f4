//go:build js && wasm

package workers

import (
	"context"
	"syscall/js"
	"time"
)

// Await blocks the calling goroutine until promise settles and returns its
// value, or an error if it rejects or ctx is done first.
//
// The goroutine is woken only by the promise's own callbacks (or ctx), so any
// JavaScript it calls next runs in the I/O context of the request that owns the
// promise: a Go instance shared by concurrent requests stays correct.
func Await(ctx context.Context, promise js.Value) (js.Value, error) {
	// Buffered, so a callback never blocks when nobody is left to receive.
	resolved := make(chan js.Value, 1)
	rejected := make(chan js.Value, 1)
	onResolve := js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolved <- firstArg(args)
		return nil
	})
	defer onResolve.Release()
	onReject := js.FuncOf(func(_ js.Value, args []js.Value) any {
		rejected <- firstArg(args)
		return nil
	})
	defer onReject.Release()

	promise.Call("then", onResolve, onReject)
	select {
	case v := <-resolved:
		return v, nil
	case reason := <-rejected:
		return js.Undefined(), errorFrom(reason)
	case <-ctx.Done():
		return js.Undefined(), ctx.Err()
	}
}

// Call calls v[method](args...) and turns a synchronous JavaScript exception
// into an error instead of a Go panic.
func Call(v js.Value, method string, args ...any) (result js.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			if jsErr, ok := r.(js.Error); ok {
				err = errorFrom(jsErr.Value)
				return
			}
			panic(r)
		}
	}()
	return v.Call(method, args...), nil
}

// CallAwait is Call followed by Await on the promise it returns.
func CallAwait(ctx context.Context, v js.Value, method string, args ...any) (js.Value, error) {
	p, err := Call(v, method, args...)
	if err != nil {
		return js.Undefined(), err
	}
	return Await(ctx, p)
}

func firstArg(args []js.Value) js.Value {
	if len(args) == 0 {
		return js.Undefined()
	}
	return args[0]
}

// errorFrom turns a rejection reason or thrown value into an *Error.
func errorFrom(reason js.Value) error {
	if reason.Type() == js.TypeObject {
		if msg := reason.Get("message"); msg.Type() == js.TypeString {
			return &Error{
				Message:    msg.String(),
				Retryable:  reason.Get("retryable").Truthy(),
				Overloaded: reason.Get("overloaded").Truthy(),
			}
		}
	}
	return &Error{Message: jsString.Invoke(reason).String()}
}

// Sleep waits for d on a JavaScript timer (scheduler.wait), or until ctx is
// done. A Go timer would not do: it wakes its goroutine in whichever
// request's event last ran Go, and that goroutine's next JavaScript calls
// would then run in the wrong request's I/O context.
func Sleep(ctx context.Context, d time.Duration) error {
	_, err := Await(ctx, jsScheduler.Call("wait", d.Milliseconds()))
	return err
}
