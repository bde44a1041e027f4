package intake

import "github.com/edge-orders/edge-orders/internal/sha256"

// OrderIDFor is the order id of the order with fingerprint fp under key:
// 122 bits of SHA-256 of the two, laid out as a version 4 UUID, the form
// the reference's crypto.randomUUID gives and clients may check. Every claim on the
// key for that order carries it, wherever and whenever it is made, so
// one order id per key and order holds whatever a read of the Store
// returns: a stale KV read, another location's, or an instance's that
// forgot what it sent. The OMS answers a repeated order id with its first
// outcome, so it never places the order twice.
func OrderIDFor(key Key, fp string) string {
	sum := sha256.Sum256([]byte("edge-orders order id\x00" + key.Client + "\x00" + key.ID + "\x00" + fp))
	sum[6] = sum[6]&0x0f | 0x40 // version 4
	sum[8] = sum[8]&0x3f | 0x80 // variant 10
	const digits = "0123456789abcdef"
	var b [36]byte
	for i, j := 0, 0; i < len(b); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			b[i] = '-'
			continue
		}
		c := sum[j/2]
		if j%2 == 0 {
			c >>= 4
		}
		b[i] = digits[c&0x0f]
		j++
	}
	return string(b[:])
}
