//go:build js && wasm

package workers

import (
	"context"
	"runtime"
	"sync"
	"syscall/js"
)

// The few JavaScript values Go keeps, all taken once at start: the bridge
// (bridge.mjs), its buffer, and the settle function of this program. Every
// call passes numbers and frames only, so no request takes a slot in
// wasm_exec.js's table of values, under either compiler: no value needs
// releasing, and none can be released wrongly.
var (
	jsBridge = js.Global().Get("__goBridge")
	jsBuffer = func() js.Value {
		if jsBridge.Type() != js.TypeObject {
			panic("workers: globalThis.__goBridge is missing: the JavaScript entry must import workers/bridge.mjs before it starts the Go program")
		}
		return jsBridge.Get("buffer")
	}()
	bufferBytes = jsBuffer.Length()
	// program is this Go program's number in the bridge: its settle
	// function gets the answers of its binding calls.
	program = jsBridge.Call("register", goFunc(settle)).Int()
)

// entry is a function JavaScript calls, with up to three numbers (0 for
// those it leaves out), and that answers one. It must not block: it runs
// whole before JavaScript goes on, so work that waits starts a goroutine.
// goFunc makes the JavaScript function, one way per compiler.
type entry func(a, b, c int) int

// Handle names an object JavaScript keeps for Go: a binding, a request, an
// environment, a Durable Object's state. Zero names none.
type Handle int

// opNumbers are the bridge's binding calls by number, asked once per name:
// a string argument would take a slot in wasm_exec.js's table per call.
var opNumbers sync.Map

func opNumber(op string) int {
	if n, ok := opNumbers.Load(op); ok {
		return n.(int)
	}
	n := jsBridge.Call("opNumber", op).Int()
	if n < 0 {
		panic("workers: bridge.mjs has no call " + op)
	}
	opNumbers.Store(op, n)
	return n
}

// send puts frame where JavaScript reads a call's arguments, and returns
// the length of its last part: a frame longer than the buffer is staged
// first, in parts. Everything happens within the caller's synchronous
// turn, so concurrent requests never see each other's bytes.
func send(frame outFrame) int {
	for len(frame) > bufferBytes {
		js.CopyBytesToJS(jsBuffer, frame[:bufferBytes])
		jsBridge.Call("stage", bufferBytes)
		frame = frame[bufferBytes:]
	}
	js.CopyBytesToJS(jsBuffer, frame)
	return len(frame)
}

// receive copies the frame of length n that JavaScript just wrote to the
// buffer, taking what did not fit with more. It must run in the same
// synchronous turn as the write.
func receive(n int) []byte {
	out := make([]byte, n)
	got := js.CopyBytesToGo(out, jsBuffer)
	for got < n {
		part := jsBridge.Call("more").Int()
		if part == 0 {
			break
		}
		got += js.CopyBytesToGo(out[got:], jsBuffer)
	}
	return out[:got]
}

// callSync calls a synchronous bridge function with numbers, and the frame
// if any as its last argument's length, and returns the frame it answers
// (for functions that answer one): a negative length is a failure's frame.
func callSync(function string, frame outFrame, numbers ...any) ([]byte, error) {
	if frame != nil {
		numbers = append(numbers, send(frame))
	}
	n := jsBridge.Call(function, numbers...).Int()
	if n < 0 {
		return nil, errorFrom(receive(-1 - n))
	}
	return receive(n), nil
}

// callBinding runs a binding call, op over the objects handles name, with the
// fields of frame, and waits for its answer's frame, or an error if it
// failed or ctx was done first. The goroutine is woken only by its own
// call's settling (or ctx), so any JavaScript it calls next runs in the I/O
// context of the request that owns the call: one Go instance shared by
// concurrent requests stays correct.
//
// op is one of bridge.mjs's asynchronous calls (readBody, kvGet, kvPut, kvDelete,
// kvList, rpc, fetch, rateLimit, queueSend, sleep): only this package
// names them, in the typed bindings (bindings_js.go) and the request's
// body and Sleep.
func callBinding(ctx context.Context, op string, frame outFrame, handles ...Handle) ([]byte, error) {
	id, settled := waiters.add()
	args := []any{program, opNumber(op), id, send(frame)}
	for _, h := range handles {
		args = append(args, int(h))
	}
	jsBridge.Call("start", args...)
	select {
	case s := <-settled:
		if !s.ok {
			return nil, errorFrom(s.frame)
		}
		return s.frame, nil
	case <-ctx.Done():
		waiters.take(id) // its answer, if it comes, is dropped
		return nil, ctx.Err()
	}
}

// settle is the program's settle function: (call, ok, length), with the
// answer's frame in the buffer, copied here, in the turn that wrote it.
// Its channel is buffered, so it wakes the call's goroutine without
// blocking.
func settle(id, ok, n int) int {
	frame := receive(n)
	if ch, waiting := waiters.take(id); waiting {
		ch <- settlement{frame: frame, ok: ok == 1}
	}
	return 0
}

// settlement is how a binding call settled.
type settlement struct {
	frame []byte
	ok    bool
}

// waiterSet holds the channel of every call in progress, by id.
type waiterSet struct {
	mu   sync.Mutex
	next int
	m    map[int]chan settlement
}

var waiters = waiterSet{m: make(map[int]chan settlement)}

// maxWaiterID keeps ids within a signed 32-bit number, which is how they
// cross into Go under TinyGo; they wrap past it, skipping any id a call
// still holds.
const maxWaiterID = 1<<31 - 1

// add registers a new waiter. Its channel is buffered, so settling never
// blocks.
func (w *waiterSet) add() (int, chan settlement) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		w.next = w.next%maxWaiterID + 1
		if _, taken := w.m[w.next]; !taken {
			break
		}
	}
	ch := make(chan settlement, 1)
	w.m[w.next] = ch
	return w.next, ch
}

// take removes waiter id and returns its channel, if it is still there.
func (w *waiterSet) take(id int) (chan settlement, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.m[id]
	delete(w.m, id)
	return ch, ok
}

// errorFrom reads a failure's frame: message, retryable, overloaded.
func errorFrom(frame []byte) error {
	f := readFrame(frame)
	return &Error{Message: f.Str(), Retryable: f.Flag(), Overloaded: f.Flag()}
}

// drop tells JavaScript to forget the object h names.
func drop(h Handle) { jsBridge.Call("drop", int(h)) }

// HeldObjects is how many objects JavaScript keeps for Go (bridge.mjs's
// table): a test counts it to see that nothing outlives its request.
func HeldObjects() int { return jsBridge.Call("heldObjects").Int() }

// collectGlobal is a function that runs the collector now and answers
// the bytes the heap holds live after it, for a test or an operator: under
// standard Go a value Go dropped keeps its slot in wasm_exec.js's table
// until the collector finalizes it, and linear memory, which grows in
// steps and never shrinks, cannot tell a leak from a cache that fills.
const collectGlobal = "__goCollect"

func init() {
	js.Global().Set(collectGlobal, goFunc(func(_, _, _ int) int {
		collect()
		return liveHeap()
	}))
}

// liveHeap is the bytes of the heap's objects: right after a collection,
// what the collector kept. Under TinyGo it includes the goroutines'
// stacks, which live on its heap.
func liveHeap() int {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int(m.HeapAlloc)
}
