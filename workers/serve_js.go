//go:build js && wasm

package workers

import (
	"context"
	"strconv"
	"syscall/js"
)

// fetchGlobal is the name under which Serve publishes the fetch function for
// the JavaScript entry (worker.mjs) to call.
const fetchGlobal = "__goFetch"

// Serve answers the Worker's fetch events with the handler that newHandler
// builds, and never returns. newHandler runs once, on the first request, with
// the Worker's environment: the one Go instance then serves every request of
// the isolate.
func Serve(newHandler func(Env) Handler) {
	var handler Handler
	// The entry calls fetch(request, env, ctx, resolve) from inside the
	// Promise it returns to the runtime.
	fetch := js.FuncOf(func(_ js.Value, args []js.Value) any {
		req, env, wctx, resolve := args[0], args[1], args[2], args[3]
		if handler == nil {
			handler = newHandler(Env{env}) // keeps env, and the bindings it reads
		} else {
			Release(env)
		}
		go func() {
			defer Release(req, wctx, resolve)
			// The handler recovers its own panics; this catches the
			// bridge's, which would otherwise end the Go instance that every
			// request and Durable Object call of the isolate shares.
			defer func() {
				if p := recover(); p != nil {
					if ph, ok := handler.(PanicHandler); ok {
						respond(resolve, ph.ServePanic(p))
						return
					}
					respond(resolve, &Response{Status: 500, Body: []byte("internal error")})
				}
			}()
			respond(resolve, serve(handler, req, wctx))
		}()
		return nil
	})
	js.Global().Set(fetchGlobal, fetch)
	select {}
}

// serve runs one request through handler.
func serve(handler Handler, jsReq, wctx js.Value) *Response {
	ctx := context.WithValue(context.Background(), executionContextKey{}, wctx)
	header := jsHeader{jsReq.Get("headers")}
	defer Release(header.headers)
	method, _ := StringField(jsReq, "method")
	body := &jsBody{ctx: ctx, req: jsReq, header: header}
	defer body.close()
	return handler.ServeWorker(ctx, &Request{
		Method: method,
		Header: header,
		Body:   body,
	})
}

// jsHeader reads a JavaScript Headers object on demand: a handler looks at
// two or three headers, so copying them all would be wasted work.
type jsHeader struct{ headers js.Value }

func (h jsHeader) Get(name string) string {
	v, err := Call(h.headers, "get", name)
	defer Release(v)
	if err != nil || v.Type() != js.TypeString {
		return ""
	}
	return v.String()
}

// jsBody reads the request body: with a declared length, in one
// arrayBuffer() call (one round trip to JavaScript instead of one per
// chunk); without, chunk by chunk from the stream, so that a body over the
// limit is never pulled into memory whole.
type jsBody struct {
	ctx    context.Context
	req    js.Value
	header Header
	reader js.Value // the stream's reader, once streaming
}

func (b *jsBody) ReadAll(max int64) ([]byte, error) {
	stream := b.req.Get("body")
	defer Release(stream)
	if !stream.Truthy() {
		return nil, nil
	}
	if n, err := strconv.ParseInt(b.header.Get("Content-Length"), 10, 64); err == nil {
		if n > max {
			return nil, ErrTooLarge
		}
		ab, err := CallAwait(b.ctx, b.req, "arrayBuffer")
		if err != nil {
			return nil, err
		}
		defer Release(ab)
		if int64(ab.Get("byteLength").Int()) > max {
			return nil, ErrTooLarge
		}
		u8 := jsUint8Array.New(ab)
		defer Release(u8)
		return copyBytes(u8), nil
	}
	b.reader = stream.Call("getReader")
	var body []byte
	for {
		res, err := CallAwait(b.ctx, b.reader, "read")
		if err != nil {
			return nil, err
		}
		chunk := res.Get("value")
		done := res.Get("done").Bool()
		if !done {
			body = append(body, copyBytes(chunk)...)
		}
		Release(res, chunk)
		if done {
			Release(b.reader)
			b.reader = js.Value{}
			return body, nil
		}
		if int64(len(body)) > max {
			return nil, ErrTooLarge
		}
	}
}

// close releases a stream left unread.
func (b *jsBody) close() {
	if b.reader.Truthy() {
		Release(b.reader.Call("cancel"), b.reader)
	}
}

// copyBytes copies a Uint8Array into Go memory.
func copyBytes(u8 js.Value) []byte {
	b := make([]byte, u8.Length())
	js.CopyBytesToGo(b, u8)
	return b
}

// respond resolves the fetch event with r, through bridge.mjs: one call
// where building the Response from Go would take a dozen. The body goes
// over as a string, one conversion where bytes would take two calls;
// handlers write UTF-8.
func respond(resolve js.Value, r *Response) {
	var body any
	if len(r.Body) > 0 {
		body = string(r.Body)
	}
	callBridge("respond", resolve, r.Status, headerLines(r.Header), body)
}

// headerLines writes fields as bridge.mjs reads them: "name: value" lines.
func headerLines(fields []Field) string {
	var b []byte
	for _, f := range fields {
		b = append(append(append(append(b, f.Name...), ": "...), f.Value...), '\n')
	}
	return string(b)
}

type executionContextKey struct{}

// WaitUntil runs task after the response is sent, keeping the Worker alive
// until it finishes (ExecutionContext.waitUntil). Outside a Worker request,
// or inside such a task, it runs task before returning.
func WaitUntil(ctx context.Context, task func(context.Context)) {
	wctx, ok := ctx.Value(executionContextKey{}).(js.Value)
	if !ok || !wctx.Truthy() {
		task(ctx)
		return
	}
	done := callBridge("waitUntil", wctx)
	go func() {
		defer Release(done)
		// A panicking task must not take down the Go instance that every
		// request of the isolate shares.
		defer func() {
			if recover() != nil {
				message, made := crossing([]any{"workers: panic in a task after the response"})
				Release(done.Invoke(message...))
				Release(made...)
			}
		}()
		// The request's ExecutionContext is released once it is served, so
		// the task must not reach it: a WaitUntil inside runs inline.
		task(context.WithValue(context.WithoutCancel(ctx), executionContextKey{}, js.Undefined()))
		Release(done.Invoke())
	}()
}
