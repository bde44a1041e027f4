//go:build js && wasm

package worker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"syscall/js"
)

// handlerGlobal is the name under which Serve publishes the fetch function for
// the JavaScript entry (worker.mjs) to call.
const handlerGlobal = "__goFetch"

// Serve answers the Worker's fetch events with the handler that newHandler
// builds, and never returns. newHandler runs once, on the first request, with
// the Worker's environment (its bindings, vars and secrets): the one Go
// instance then serves every request of the isolate.
func Serve(newHandler func(env js.Value) http.Handler) {
	var handler http.Handler
	fetch := js.FuncOf(func(_ js.Value, args []js.Value) any {
		req, env, wctx := args[0], args[1], args[2]
		if handler == nil {
			handler = newHandler(env)
		}
		return newPromise(func() (js.Value, error) {
			return serve(handler, req, wctx)
		})
	})
	js.Global().Set(handlerGlobal, fetch)
	select {}
}

// serve runs one request through handler and builds the JavaScript Response.
func serve(handler http.Handler, jsReq, wctx js.Value) (js.Value, error) {
	ctx := context.WithValue(context.Background(), executionContextKey{}, wctx)
	r, err := newRequest(ctx, jsReq)
	if err != nil {
		return js.Undefined(), err
	}
	defer r.Body.Close()
	w := &responseWriter{header: make(http.Header)}
	handler.ServeHTTP(w, r)
	return w.toJS(), nil
}

// newRequest converts a JavaScript Request into an *http.Request whose body is
// read from the request stream on demand.
func newRequest(ctx context.Context, jsReq js.Value) (*http.Request, error) {
	u, err := url.Parse(jsReq.Get("url").String())
	if err != nil {
		return nil, fmt.Errorf("worker: request URL: %w", err)
	}
	header := make(http.Header)
	pairs := js.Global().Get("Array").Call("from", jsReq.Get("headers"))
	for i, n := 0, pairs.Length(); i < n; i++ {
		pair := pairs.Index(i)
		header.Add(pair.Index(0).String(), pair.Index(1).String())
	}
	var body io.ReadCloser = http.NoBody
	if stream := jsReq.Get("body"); stream.Truthy() {
		body = &streamReader{ctx: ctx, reader: stream.Call("getReader")}
	}
	r := &http.Request{
		Method:     jsReq.Get("method").String(),
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     header,
		Body:       body,
		Host:       u.Host,
		RequestURI: u.RequestURI(),
	}
	r.ContentLength = -1
	if header.Get("Content-Length") == "" && body == http.NoBody {
		r.ContentLength = 0
	}
	return r.WithContext(ctx), nil
}

// streamReader reads a ReadableStream chunk by chunk, so a handler that stops
// early (a body over its size limit) never pulls the rest into memory.
type streamReader struct {
	ctx    context.Context
	reader js.Value
	buf    []byte
	done   bool
}

func (s *streamReader) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.done {
			return 0, io.EOF
		}
		res, err := Await(s.ctx, s.reader.Call("read"))
		if err != nil {
			return 0, err
		}
		if res.Get("done").Bool() {
			s.done = true
			continue
		}
		chunk := res.Get("value")
		s.buf = make([]byte, chunk.Length())
		js.CopyBytesToGo(s.buf, chunk)
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// Close releases the stream; unread data is discarded.
func (s *streamReader) Close() error {
	if !s.done {
		s.done = true
		s.buf = nil
		s.reader.Call("cancel")
	}
	return nil
}

// responseWriter buffers a handler's response until it returns.
type responseWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

func (w *responseWriter) toJS() js.Value {
	w.WriteHeader(http.StatusOK)
	headers := js.Global().Get("Headers").New()
	for name, values := range w.header {
		for _, v := range values {
			headers.Call("append", name, v)
		}
	}
	init := js.Global().Get("Object").New()
	init.Set("status", w.status)
	init.Set("headers", headers)
	body := js.Null()
	if w.body.Len() > 0 {
		body = js.Global().Get("Uint8Array").New(w.body.Len())
		js.CopyBytesToJS(body, w.body.Bytes())
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
					reject.Invoke(jsError(fmt.Sprint("worker: panic: ", r)))
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
