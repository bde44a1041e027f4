//go:build js && wasm

package workers

import (
	"context"
	"io"
	"strconv"
	"syscall/js"
)

// handlerGlobal is the name under which Serve publishes the fetch function for
// the JavaScript entry (worker.mjs) to call.
const handlerGlobal = "__goFetch"

// Serve answers the Worker's fetch events with the handler that newHandler
// builds, and never returns. newHandler runs once, on the first request, with
// the Worker's environment (its bindings, vars and secrets): the one Go
// instance then serves every request of the isolate.
func Serve(newHandler func(env js.Value) Handler) {
	var handler Handler
	// The entry calls fetch(request, env, ctx, resolve, reject) from inside
	// the Promise it returns to the runtime.
	fetch := js.FuncOf(func(_ js.Value, args []js.Value) any {
		req, env, wctx, resolve, reject := args[0], args[1], args[2], args[3], args[4]
		if handler == nil {
			handler = newHandler(env)
		}
		go settle(resolve, reject, func() (js.Value, error) {
			return serve(handler, req, wctx), nil
		})
		return nil
	})
	js.Global().Set(handlerGlobal, fetch)
	select {}
}

// serve runs one request through handler and builds the JavaScript Response.
func serve(handler Handler, jsReq, wctx js.Value) js.Value {
	ctx := context.WithValue(context.Background(), executionContextKey{}, wctx)
	header := jsHeader{jsReq.Get("headers")}
	var body io.Reader = eofReader{}
	if stream := jsReq.Get("body"); stream.Truthy() {
		br := &bodyReader{ctx: ctx, req: jsReq, stream: stream, header: header}
		defer br.Close()
		body = br
	}
	resp := handler.ServeWorker(ctx, &Request{
		Method: jsReq.Get("method").String(),
		URL:    jsReq.Get("url").String(),
		Header: header,
		Body:   body,
	})
	return toJS(resp)
}

// jsHeader reads a JavaScript Headers object on demand: a handler looks at
// two or three headers, so copying them all would be wasted work.
type jsHeader struct{ headers js.Value }

func (h jsHeader) Get(name string) string {
	v := h.headers.Call("get", name)
	if v.Type() != js.TypeString {
		return ""
	}
	return v.String()
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// smallBody is the largest declared Content-Length read in one piece with
// arrayBuffer(): one round trip to JavaScript instead of a read per chunk.
const smallBody = 1 << 20

// bodyReader reads the request body on first use: a small body with a
// declared length at once, anything else chunk by chunk from the stream, so a
// handler that stops early (a body over its size limit) never pulls the rest
// into memory.
type bodyReader struct {
	ctx    context.Context
	req    js.Value
	stream js.Value
	header Header

	reader  js.Value // the stream's reader, once streaming
	started bool
	buf     []byte
	done    bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		if n, err := strconv.Atoi(b.header.Get("Content-Length")); err == nil && n <= smallBody {
			ab, err := Await(b.ctx, b.req.Call("arrayBuffer"))
			if err != nil {
				return 0, err
			}
			b.buf = copyBytes(jsUint8Array.New(ab))
			b.done = true
		} else {
			b.reader = b.stream.Call("getReader")
		}
	}
	for len(b.buf) == 0 {
		if b.done {
			return 0, io.EOF
		}
		res, err := Await(b.ctx, b.reader.Call("read"))
		if err != nil {
			return 0, err
		}
		if res.Get("done").Bool() {
			b.done = true
			continue
		}
		b.buf = copyBytes(res.Get("value"))
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

// Close releases a stream left unread.
func (b *bodyReader) Close() error {
	if !b.done && b.reader.Truthy() {
		b.reader.Call("cancel")
	}
	b.done, b.buf = true, nil
	return nil
}

// copyBytes copies a Uint8Array into Go memory.
func copyBytes(u8 js.Value) []byte {
	b := make([]byte, u8.Length())
	js.CopyBytesToGo(b, u8)
	return b
}

// JavaScript constructors, looked up once.
var (
	jsObject     = js.Global().Get("Object")
	jsResponse   = js.Global().Get("Response")
	jsUint8Array = js.Global().Get("Uint8Array")
	jsPromise    = js.Global().Get("Promise")
	jsErrorType  = js.Global().Get("Error")
)

// toJS builds the JavaScript Response for r. The body goes over as a string,
// one conversion where bytes would take two calls; handlers write UTF-8.
func toJS(r *Response) js.Value {
	headers := jsObject.New()
	for _, f := range r.Header {
		headers.Set(f.Name, f.Value)
	}
	init := jsObject.New()
	init.Set("status", r.Status)
	init.Set("headers", headers)
	var body any
	if len(r.Body) > 0 {
		body = string(r.Body)
	}
	return jsResponse.New(body, init)
}

// newPromise returns a JavaScript Promise settled by run, which executes on
// its own goroutine.
func newPromise(run func() (js.Value, error)) js.Value {
	var executor js.Func
	executor = js.FuncOf(func(_ js.Value, args []js.Value) any {
		go settle(args[0], args[1], run)
		return nil
	})
	defer executor.Release()
	return jsPromise.New(executor)
}

// settle runs run and calls resolve with its value or reject with its error.
// A panic in run rejects too, instead of killing the Go instance that every
// request of the isolate shares.
func settle(resolve, reject js.Value, run func() (js.Value, error)) {
	defer func() {
		if r := recover(); r != nil {
			reject.Invoke(jsError("worker: panic in a request"))
		}
	}()
	v, err := run()
	if err != nil {
		reject.Invoke(jsError(err.Error()))
		return
	}
	resolve.Invoke(v)
}

func jsError(msg string) js.Value {
	return jsErrorType.New(msg)
}

type executionContextKey struct{}

// WaitUntil runs task after the response is sent, keeping the Worker alive
// until it finishes (ExecutionContext.waitUntil). Outside a Worker request it
// runs task before returning.
func WaitUntil(ctx context.Context, task func(context.Context)) {
	wctx, ok := ctx.Value(executionContextKey{}).(js.Value)
	if !ok || !wctx.Truthy() {
		task(ctx)
		return
	}
	wctx.Call("waitUntil", newPromise(func() (js.Value, error) {
		task(context.WithoutCancel(ctx))
		return js.Undefined(), nil
	}))
}
