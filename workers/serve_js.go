//go:build js && wasm

package workers

import (
	"context"
	"strings"
	"syscall/js"
)

// fetchGlobal is the name under which Serve publishes the fetch function for
// the JavaScript entry (worker.mjs) to call.
const fetchGlobal = "__goFetch"

// Serve answers the Worker's fetch events with the handler that newHandler
// builds, and never returns. newHandler runs once, on the first request, with
// the Worker's environment: the one Go instance then serves every request of
// the isolate.
//
// The entry holds each request in bridge.mjs's table and calls the
// published function with (request, length): its number, and the length
// of its head (method, URL, headers) in the buffer. That is the one
// crossing into Go per request; the response is the one crossing out.
func Serve(newHandler func(Env) Handler) {
	var handler Handler
	js.Global().Set(fetchGlobal, goFunc(func(request, headLength, _ int) int {
		req := Handle(request)
		head := receive(headLength)
		if handler == nil {
			handler = newHandler(EnvOf(req))
		}
		goroutines.run(func() {
			defer drop(req)
			after := &afterResponse{event: req}
			respond(req, serveRecovered(handler, req, head, after))
			after.run()
		})
		return 0
	}))
	select {}
}

// serveRecovered runs one request through handler. The handler recovers
// its own panics; this catches the bridge's, which would otherwise end the
// Go instance that every request and Durable Object call of the isolate
// shares.
func serveRecovered(handler Handler, req Handle, head []byte, after *afterResponse) (resp *Response) {
	defer func() {
		if p := recover(); p != nil {
			if ph, ok := handler.(PanicHandler); ok {
				resp = ph.ServePanic(p)
				return
			}
			resp = &Response{Status: 500, Body: []byte("internal error")}
		}
	}()
	return serve(handler, req, head, after)
}

// serve runs one request through handler.
func serve(handler Handler, req Handle, head []byte, after *afterResponse) *Response {
	ctx := context.WithValue(context.Background(), executionContextKey{}, req)
	ctx = context.WithValue(ctx, afterResponseKey{}, after)
	f := readFrame(head)
	method, url, lines := f.Str(), f.Str(), f.Str()
	return handler.ServeWorker(ctx, &Request{
		Method: method,
		Path:   URLPath(url),
		Query:  URLQuery(url),
		Host:   URLHost(url),
		Header: parseHeader(lines),
		Body:   &jsBody{ctx: ctx, req: req},
	})
}

// header is a request's headers, read from its head in one piece: names
// lowercased, as the Fetch API gives them.
type header map[string]string

func (h header) Get(name string) string { return h[strings.ToLower(name)] }

// parseHeader reads "name: value" lines.
func parseHeader(lines string) header {
	h := header{}
	for line := range strings.SplitSeq(lines, "\n") {
		if name, value, ok := strings.Cut(line, ": "); ok {
			h[strings.ToLower(name)] = value
		}
	}
	return h
}

// jsBody reads the request body in one binding call: JavaScript reads a
// body with a declared length in one arrayBuffer(), and one without chunk
// by chunk, so that a body over the limit is never held whole.
type jsBody struct {
	ctx context.Context
	req Handle
}

func (b *jsBody) ReadAll(max int64) ([]byte, error) {
	answer, err := callBinding(b.ctx, "readBody", outFrame{}.Int(max), b.req)
	if err != nil {
		return nil, err
	}
	f := readFrame(answer)
	body, tooLarge := f.Bytes(), f.Flag()
	if tooLarge {
		return nil, ErrTooLarge
	}
	return body, f.Err
}

// respond answers req with r, in one call: status, headers and body in one
// frame, from which bridge.mjs builds the Response.
func respond(req Handle, r *Response) {
	frame := outFrame{}.Int(int64(r.Status)).Str(headerLines(r.Header)).Bytes(r.Body)
	callSync("respond", frame, int(req))
}

// headerLines writes fields as bridge.mjs reads them: "name: value" lines.
func headerLines(fields []Field) string {
	var b []byte
	for _, f := range fields {
		b = append(append(append(append(b, f.Name...), ": "...), f.Value...), '\n')
	}
	return string(b)
}

// executionContextKey carries the Handle of the event a context belongs
// to: a request, or a queue message, whose ExecutionContext JavaScript
// keeps.
type executionContextKey struct{}

// WaitUntil runs task after the response is sent, keeping the Worker alive
// until it finishes (ExecutionContext.waitUntil). Outside a Worker event,
// or inside such a task, it runs task before returning.
//
// A request's tasks run one after another on the request's own goroutine,
// once its response is sent, under one waitUntil: no goroutine per task
// (see goroutinePool for what a goroutine costs under TinyGo).
func WaitUntil(ctx context.Context, task func(context.Context)) {
	event, ok := ctx.Value(executionContextKey{}).(Handle)
	if !ok || event == 0 {
		task(ctx)
		return
	}
	// The event is forgotten once it is served, so the task must not
	// reach it: a WaitUntil inside runs inline.
	taskCtx := context.WithValue(context.WithoutCancel(ctx), executionContextKey{}, Handle(0))
	if after, ok := ctx.Value(afterResponseKey{}).(*afterResponse); ok && !after.started {
		after.add(func() { task(taskCtx) })
		return
	}
	done := Handle(jsBridge.Call("waitUntil", int(event)).Int())
	runEvent(done, "", func() error { task(taskCtx); return nil })
}

// afterResponseKey carries a request's afterResponse.
type afterResponseKey struct{}

// afterResponse is the work a request hands to WaitUntil, run once its
// response is sent, on its goroutine.
type afterResponse struct {
	event   Handle
	done    Handle // the waitUntil that keeps the Worker alive; 0 for none yet
	tasks   []func()
	started bool
}

// add queues task, and keeps the Worker alive for it from now on.
func (a *afterResponse) add(task func()) {
	if a.done == 0 {
		a.done = Handle(jsBridge.Call("waitUntil", int(a.event)).Int())
	}
	a.tasks = append(a.tasks, task)
}

// run runs the queued tasks in order; a panicking task fails the
// waitUntil, and the tasks after it still run.
func (a *afterResponse) run() {
	a.started = true
	if a.done == 0 {
		return
	}
	failure := ""
	for _, task := range a.tasks {
		if f := runTask(func() error { task(); return nil }); f != "" && failure == "" {
			failure = "workers: panic in a task after the response"
		}
	}
	a.tasks = nil
	finishTask(a.done, failure, "")
}

// runEvent runs fn on a goroutine of the pool, then ends task (finishTask)
// with fn's failure, a panic included, and detail.
func runEvent(task Handle, detail string, fn func() error) {
	goroutines.run(func() { finishTask(task, runTask(fn), detail) })
}

// finishTask ends task: a waitUntil, or an event handed to Go whole, with
// failure ("" for none) and a detail its done function reads.
func finishTask(task Handle, failure, detail string) {
	callSync("taskDone", outFrame{}.Str(failure).Str(detail), int(task))
}
