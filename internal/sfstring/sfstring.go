// Package sfstring writes a Structured Field string (RFC 9651), as the
// IETF draft makes the Idempotency-Key header one.
package sfstring

// Quote is the sf-string that names exactly s: s in double quotes, each
// " and \ escaped by a backslash. s must be printable ASCII, which is all
// an sf-string may hold; callers check that first.
func Quote(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(append(b, '"'))
}
