//go:build js && wasm

package uuid

import "github.com/edge-orders/edge-orders/workers"

// read fills b, of at most 16 bytes, with crypto.getRandomValues, through
// the bridge's buffer: one synchronous call, no JavaScript value kept. On
// js/wasm crypto/rand.Read ends in this same call, but importing
// crypto/rand would bring in math/big, and with it fmt and reflect.
func read(b []byte) { workers.RandomBytes(b) }
