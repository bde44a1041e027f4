//go:build !(js && wasm)

package uuid

import "crypto/rand"

// read fills b from crypto/rand, whose Read never fails (Go 1.24+).
func read(b []byte) {
	rand.Read(b)
}
