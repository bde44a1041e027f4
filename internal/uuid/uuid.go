// Package uuid mints random (version 4) UUIDs, in a fraction of the code
// github.com/google/uuid would add to the Worker's WebAssembly.
package uuid

// New returns a random (version 4, RFC 9562) UUID in the canonical
// lowercase form, such as 3f1c2b4e-8d7a-4c1e-9b2f-0a6d5e4c3b2a. Its 122
// random bits come from crypto/rand, or in a Worker from the
// crypto.getRandomValues that crypto/rand calls there; neither fails.
func New() string {
	var u [16]byte
	read(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10xx, RFC 9562
	const digits = "0123456789abcdef"
	b := make([]byte, 0, 36)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, digits[c>>4], digits[c&0x0f])
	}
	return string(b)
}
