//go:build js && wasm && !tinygo

package workers

import "syscall/js"

// Release gives each value's slot in wasm_exec.js's table of the values Go
// refers to back at once, where the compiler's garbage collector would not
// (see release_tinygo.go). Under standard Go it does nothing: the
// collector finalizes every js.Value Go no longer holds, and releasing one
// early as well would free its slot twice.
//
// The bridge calls it wherever a value it took from JavaScript dies, so
// that a TinyGo build's table stays as flat as standard Go's; a value must
// be released once, and never used after.
func Release(values ...js.Value) {}

// crossing is a call's arguments as syscall/js takes them (see
// release_tinygo.go); standard Go needs no conversion.
func crossing(args []any) (converted []any, made []js.Value) { return args, nil }
