//go:build js && wasm

package uuid

import (
	"sync"
	"syscall/js"

	"github.com/edge-orders/edge-orders/workers"
)

// On js/wasm crypto/rand.Read ends in this same crypto.getRandomValues
// call, but importing crypto/rand would bring in math/big, and with it fmt
// and reflect, for rand.Int and rand.Prime.
var random = struct {
	sync.Mutex
	crypto js.Value
	buf    js.Value // a Uint8Array of 16 bytes, reused to save a crossing
}{
	crypto: js.Global().Get("crypto"),
	buf:    js.Global().Get("Uint8Array").New(16),
}

// read fills b, of at most 16 bytes, with crypto.getRandomValues.
func read(b []byte) {
	random.Lock()
	defer random.Unlock()
	workers.Release(random.crypto.Call("getRandomValues", random.buf)) // buf itself
	js.CopyBytesToGo(b, random.buf)
}
