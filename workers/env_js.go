//go:build js && wasm

package workers

import "syscall/js"

// Env is the Worker's environment: its [vars], secrets and bindings.
type Env struct{ v js.Value }

// Var returns the variable or secret name as a string ([vars] may hold
// numbers and booleans, which read as JavaScript prints them) and whether it
// is set.
func (e Env) Var(name string) (string, bool) {
	switch v := e.v.Get(name); v.Type() {
	case js.TypeUndefined, js.TypeNull:
		return "", false
	case js.TypeString:
		return v.String(), true
	default:
		return jsString.Invoke(v).String(), true
	}
}

// Binding returns the binding name (a KV namespace, a Durable Object
// namespace) and whether the environment has one.
func (e Env) Binding(name string) (js.Value, bool) {
	v := e.v.Get(name)
	return v, v.Type() == js.TypeObject
}

// JavaScript globals, looked up once per instance.
var (
	jsObject     = js.Global().Get("Object")
	jsJSON       = js.Global().Get("JSON")
	jsString     = js.Global().Get("String")
	jsResponse   = js.Global().Get("Response")
	jsUint8Array = js.Global().Get("Uint8Array")
	jsPromise    = js.Global().Get("Promise")
	jsError      = js.Global().Get("Error")
	jsScheduler  = js.Global().Get("scheduler")
	jsBridge     = js.Global().Get("__goBridge") // bridge.mjs
)

// NewObject returns an empty JavaScript object, for bindings' option bags.
func NewObject() js.Value { return jsObject.New() }

// ParseJSON is JSON.parse(text), with a syntax error as an error.
func ParseJSON(text string) (js.Value, error) { return Call(jsJSON, "parse", text) }

// StringifyJSON is JSON.stringify(v).
func StringifyJSON(v js.Value) string { return jsJSON.Call("stringify", v).String() }
