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
	global     bool
}

// EnvOf is the environment of the event h names.
func EnvOf(h Handle) Env { return Env{&envState{event: h}} }

// Globals is the global scope as an environment: its bindings are
// globalThis's, as a test entry publishes them.
func Globals() Env { return Env{&envState{global: true}} }

func (e Env) handle() Handle {
	if e.state.env == 0 && !e.state.global {
		e.state.env = Handle(jsBridge.Call("envOf", int(e.state.event)).Int())
	}
	return e.state.env
}

// Var returns the variable or secret name as a string ([vars] may hold
// numbers and booleans, which read as JavaScript prints them) and whether it
// is set.
func (e Env) Var(name string) (string, bool) {
	answer, err := callSync("envVar", outFrame{}.Str(name), int(e.handle()))
	if err != nil {
		return "", false
	}
	f := readFrame(answer)
	set, value := f.Flag(), f.Str()
	return value, set
}

// binding returns the binding name and whether the environment has one;
// it is kept for the life of the Go program. The typed accessors
// (bindings_js.go) wrap it.
func (e Env) binding(name string) (Handle, bool) {
	answer := jsBridge.Call("envBinding", int(e.handle()), send(outFrame{}.Str(name))).Int()
	return Handle(answer), answer != 0
}

// Sleep waits for d on a JavaScript timer (scheduler.wait), or until ctx is
// done. A Go timer would not do: it wakes its goroutine in whichever
// request's event last ran Go, and that goroutine's next JavaScript calls
// would then run in the wrong request's I/O context.
func Sleep(ctx context.Context, d time.Duration) error {
	_, err := callBinding(ctx, "sleep", outFrame{}.Int(d.Milliseconds()))
	return err
}

// RandomBytes fills b, of at most 64 KiB, from crypto.getRandomValues.
func RandomBytes(b []byte) {
	jsBridge.Call("random", len(b))
	js.CopyBytesToGo(b, jsBuffer)
}
