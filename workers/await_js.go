//go:build js && wasm

package workers

import (
	"context"
	"sync"
	"syscall/js"
	"time"
)

// Await blocks the calling goroutine until promise settles and returns its
// value, or an error if it rejects or ctx is done first. It releases the
// promise; the value is the caller's to release.
//
// The goroutine is woken only by the promise's own settling (or ctx), so any
// JavaScript it calls next runs in the I/O context of the request that owns the
// promise: a Go instance shared by concurrent requests stays correct.
//
// The promise is handed to bridge.mjs with an id, and settles into one of
// two callbacks made once per instance: two js.FuncOf per call would cost
// four more crossings and two finalized values.
func Await(ctx context.Context, promise js.Value) (js.Value, error) {
	id, settled := waiters.add()
	jsBridge.Call("then", promise, id, settleResolved, settleRejected)
	Release(promise) // the bridge's then holds it now
	select {
	case s := <-settled:
		if s.rejected {
			defer Release(s.value)
			return js.Undefined(), errorFrom(s.value)
		}
		return s.value, nil
	case <-ctx.Done():
		if _, waiting := waiters.take(id); !waiting {
			// It settled meanwhile, and nobody will read the value.
			Release((<-settled).value)
		}
		return js.Undefined(), ctx.Err()
	}
}

// settlement is how an awaited promise settled.
type settlement struct {
	value    js.Value
	rejected bool
}

// waiterSet holds the channel of every Await in progress, by id.
type waiterSet struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]chan settlement
}

var waiters = waiterSet{m: make(map[uint64]chan settlement)}

// add registers a new waiter. Its channel is buffered, so settling never
// blocks.
func (w *waiterSet) add() (uint64, chan settlement) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	ch := make(chan settlement, 1)
	w.m[w.next] = ch
	return w.next, ch
}

// take removes waiter id and returns its channel, if it is still there.
func (w *waiterSet) take(id uint64) (chan settlement, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.m[id]
	delete(w.m, id)
	return ch, ok
}

// settleFunc is bridge.mjs's resolved or rejected callback: (id, value).
func settleFunc(rejected bool) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) any {
		ch, ok := waiters.take(uint64(args[0].Int()))
		if !ok { // the waiter gave up (its ctx ended)
			Release(args[1])
			return nil
		}
		ch <- settlement{value: args[1], rejected: rejected}
		return nil
	})
}

// The callbacks every Await settles through, made once per Go program.
var settleResolved, settleRejected = settleFunc(false), settleFunc(true)

func init() {
	if jsBridge.Type() != js.TypeObject {
		panic("workers: globalThis.__goBridge is missing: the JavaScript entry must import workers/bridge.mjs before it starts the Go program")
	}
}

// Call calls v[method](args...) and turns a synchronous JavaScript exception
// into an error instead of a Go panic. The result is the caller's to
// release.
func Call(v js.Value, method string, args ...any) (result js.Value, err error) {
	args, made := crossing(args)
	defer Release(made...)
	defer func() {
		if r := recover(); r != nil {
			if jsErr, ok := r.(js.Error); ok {
				defer Release(jsErr.Value)
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

// callBridge calls one of bridge.mjs's functions, which throw nothing that
// a caller could handle; the result is the caller's to release.
func callBridge(function string, args ...any) js.Value {
	args, made := crossing(args)
	defer Release(made...)
	return jsBridge.Call(function, args...)
}

// errorFrom turns a rejection reason or thrown value into an *Error.
func errorFrom(reason js.Value) error {
	if reason.Type() == js.TypeObject {
		if msg, ok := StringField(reason, "message"); ok {
			return &Error{
				Message:    msg,
				Retryable:  reason.Get("retryable").Truthy(),
				Overloaded: reason.Get("overloaded").Truthy(),
			}
		}
	}
	text := jsString.Invoke(reason)
	defer Release(text)
	return &Error{Message: text.String()}
}

// StringField returns the property name of object v if it is a string.
func StringField(v js.Value, name string) (string, bool) {
	f := v.Get(name)
	defer Release(f)
	if f.Type() != js.TypeString {
		return "", false
	}
	return f.String(), true
}

// Sleep waits for d on a JavaScript timer (scheduler.wait), or until ctx is
// done. A Go timer would not do: it wakes its goroutine in whichever
// request's event last ran Go, and that goroutine's next JavaScript calls
// would then run in the wrong request's I/O context.
func Sleep(ctx context.Context, d time.Duration) error {
	v, err := Await(ctx, jsScheduler.Call("wait", d.Milliseconds()))
	Release(v)
	return err
}
