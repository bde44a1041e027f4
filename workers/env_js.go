//go:build js && wasm

package workers

import (
	"context"
	"syscall/js"
	"time"
)

// Env is the Worker's environment: its [vars], secrets and bindings. It
// names the event it came with, and takes the environment itself from
// JavaScript on first use, once: a Worker builds itself from its first
// event's environment and keeps it.
type Env struct{ state *envState }

type envState struct {
	event, env Handle
}

// EnvOf is the environment of the event h names.
func EnvOf(h Handle) Env { return Env{&envState{event: h}} }

func (e Env) handle() Handle {
	if e.state.env == 0 {
		e.state.env = Handle(jsBridge.Call("envOf", int(e.state.event)).Int())
	}
	return e.state.env
}

// Var returns the variable or secret name as a string ([vars] may hold
// numbers and booleans, which read as JavaScript prints them) and whether it
// is set.
func (e Env) Var(name string) (string, bool) {
	answer, err := callSync("envVar", Frame{}.Str(name), int(e.handle()))
	if err != nil {
		return "", false
	}
	f := ReadFields(answer)
	set, value := f.Flag(), f.Str()
	return value, set
}

// Binding returns the binding name (a KV namespace, a Durable Object
// namespace, a queue, a service) and whether the environment has one. A
// binding is kept for the life of the Go program.
func (e Env) Binding(name string) (Handle, bool) {
	answer := jsBridge.Call("envBinding", int(e.handle()), send(Frame{}.Str(name))).Int()
	return Handle(answer), answer != 0
}

// GlobalBinding returns the global binding name (globalThis[name]), as a
// test entry publishes one; kept for the life of the Go program.
func GlobalBinding(name string) (Handle, bool) {
	answer := jsBridge.Call("envBinding", 0, send(Frame{}.Str(name))).Int()
	return Handle(answer), answer != 0
}

// Sleep waits for d on a JavaScript timer (scheduler.wait), or until ctx is
// done. A Go timer would not do: it wakes its goroutine in whichever
// request's event last ran Go, and that goroutine's next JavaScript calls
// would then run in the wrong request's I/O context.
func Sleep(ctx context.Context, d time.Duration) error {
	_, err := Call(ctx, "sleep", Frame{}.Int(d.Milliseconds()))
	return err
}

// RandomBytes fills b, of at most 64 KiB, from crypto.getRandomValues.
func RandomBytes(b []byte) {
	jsBridge.Call("random", len(b))
	js.CopyBytesToGo(b, jsBuffer)
}
