//go:build js && wasm

package worker

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
	fetch := js.FuncOf(func(_ js.Value, args []js.Value) any {
		req, env, wctx := args[0], args[1], args[2]
		if handler == nil {
			handler = newHandler(env)
		}
		return newPromise(func() (js.Value, error) {
			return serve(handler, req, wctx), nil
		})
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
			b.buf = copyBytes(js.Global().Get("Uint8Array").New(ab))
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

// toJS builds the JavaScript Response for r.
func toJS(r *Response) js.Value {
	headers := js.Global().Get("Headers").New()
	for _, f := range r.Header {
		headers.Call("append", f.Name, f.Value)
	}
	init := js.Global().Get("Object").New()
	init.Set("status", r.Status)
	init.Set("headers", headers)
	body := js.Null()
	if len(r.Body) > 0 {
		body = js.Global().Get("Uint8Array").New(len(r.Body))
		js.CopyBytesToJS(body, r.Body)
	}
	return js.Global().Get("Response").New(body, init)
}

// newPromise returns a JavaScript Promise settled by run, which executes on its
// own goroutine. A panic in run rejects the promise instead of killing the
// Go instance that every request of the isolate shares.
func newPromise(run func() (js.Value, error)) js.Value {
	var executor js.Func
	executor = js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve, reject := args[0], args[1]
		go func() {
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
		}()
		return nil
	})
	defer executor.Release()
	return js.Global().Get("Promise").New(executor)
}

func jsError(msg string) js.Value {
	return js.Global().Get("Error").New(msg)
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
