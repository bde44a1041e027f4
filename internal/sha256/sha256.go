// Package sha256 computes SHA-256 digests (FIPS 180-4) in plain Go.
//
// The standard library's crypto/sha256 would do, but on js/wasm it brings
// Go's whole FIPS 140 module with it (AES, GCM, a DRBG, SHA-3, HMAC and os),
// about 70 KB of the Worker's gzipped wasm, for the two digests the Worker
// takes: an order's fingerprint and an API token's. The tests check this
// package against crypto/sha256 on the standard vectors and on fuzzed input.
package sha256

import "math/bits"

// Size is the length of a digest in bytes.
const Size = 32

// Sum256 returns the SHA-256 digest of data.
func Sum256(data []byte) [Size]byte {
	h := initial
	n := len(data)
	for len(data) >= blockSize {
		block(&h, data[:blockSize])
		data = data[blockSize:]
	}
	// Padding: a 1 bit, zeros, and the message length in bits, big-endian,
	// filling one or two last blocks.
	var last [2 * blockSize]byte
	copy(last[:], data)
	last[len(data)] = 0x80
	end := blockSize
	if len(data) >= blockSize-8 {
		end = 2 * blockSize
	}
	putUint64(last[end-8:end], uint64(n)<<3)
	for b := last[:end]; len(b) > 0; b = b[blockSize:] {
		block(&h, b[:blockSize])
	}
	var sum [Size]byte
	for i, v := range h {
		putUint32(sum[4*i:], v)
	}
	return sum
}

const blockSize = 64

// initial is the starting hash value (FIPS 180-4, 5.3.3).
var initial = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}

// k holds the round constants (FIPS 180-4, 4.2.2).
var k = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5,
	0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
	0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
	0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
	0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

// block folds one 64-byte block into h (FIPS 180-4, 6.2.2).
func block(h *[8]uint32, p []byte) {
	var w [64]uint32
	for i := range 16 {
		w[i] = uint32(p[4*i])<<24 | uint32(p[4*i+1])<<16 | uint32(p[4*i+2])<<8 | uint32(p[4*i+3])
	}
	for i := 16; i < 64; i++ {
		s0 := bits.RotateLeft32(w[i-15], -7) ^ bits.RotateLeft32(w[i-15], -18) ^ w[i-15]>>3
		s1 := bits.RotateLeft32(w[i-2], -17) ^ bits.RotateLeft32(w[i-2], -19) ^ w[i-2]>>10
		w[i] = w[i-16] + s0 + w[i-7] + s1
	}
	a, b, c, d, e, f, g, hh := h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
	for i := range 64 {
		t1 := hh + (bits.RotateLeft32(e, -6) ^ bits.RotateLeft32(e, -11) ^ bits.RotateLeft32(e, -25)) + (e&f ^ ^e&g) + k[i] + w[i]
		t2 := (bits.RotateLeft32(a, -2) ^ bits.RotateLeft32(a, -13) ^ bits.RotateLeft32(a, -22)) + (a&b ^ a&c ^ b&c)
		hh, g, f, e, d, c, b, a = g, f, e, d+t1, c, b, a, t1+t2
	}
	h[0] += a
	h[1] += b
	h[2] += c
	h[3] += d
	h[4] += e
	h[5] += f
	h[6] += g
	h[7] += hh
}

func putUint32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

func putUint64(b []byte, v uint64) {
	putUint32(b, uint32(v>>32))
	putUint32(b[4:], uint32(v))
}
