//go:build js && wasm

package workers

import "syscall/js"

// Env is the Worker's environment: its [vars], secrets and bindings.
type Env struct{ v js.Value }

// Var returns the variable or secret name as a string ([vars] may hold
// numbers and booleans, which read as JavaScript prints them) and whether it
// is set.
func (e Env) Var(name string) (string, bool) {
	v := e.v.Get(name)
	defer Release(v)
	switch v.Type() {
	case js.TypeUndefined, js.TypeNull:
		return "", false
	case js.TypeString:
		return v.String(), true
	default:
		text := jsString.Invoke(v)
		defer Release(text)
		return text.String(), true
	}
}

// Binding returns the binding name (a KV namespace, a Durable Object
// namespace) and whether the environment has one. A binding is kept for
// the life of the Go program: it is never released.
func (e Env) Binding(name string) (js.Value, bool) {
	v := e.v.Get(name)
	return v, v.Type() == js.TypeObject
}

// JavaScript globals, looked up once per instance.
var (
	jsJSON       = js.Global().Get("JSON")
	jsString     = js.Global().Get("String")
	jsUint8Array = js.Global().Get("Uint8Array")
	jsError      = js.Global().Get("Error")
	jsScheduler  = js.Global().Get("scheduler")
	jsBridge     = js.Global().Get("__goBridge") // bridge.mjs
)

// Object returns a new JavaScript object with the given properties, as
// name, value pairs: {name: value, ...}. It is the caller's to release.
// One call, where setting each property would take one more, and a string
// set by v.Set would make a JavaScript value nobody releases.
func Object(pairs ...any) js.Value { return callBridge("object", pairs...) }

// ParseJSON is JSON.parse(text), with a syntax error as an error; the
// value is the caller's to release.
func ParseJSON(text string) (js.Value, error) { return Call(jsJSON, "parse", text) }

// StringifyJSON is JSON.stringify(v).
func StringifyJSON(v js.Value) string {
	text := jsJSON.Call("stringify", v)
	defer Release(text)
	return text.String()
}
