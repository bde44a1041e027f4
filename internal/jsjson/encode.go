// Package jsjson reads and writes JSON exactly as JavaScript does (JSON.parse
// after a WHATWG UTF-8 decode, JSON.stringify, Number and Date printing), so
// that Go output can match a JavaScript Worker's byte for byte.
package jsjson

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as ES2019 JSON.stringify writes a string. s is
// read as WTF-8: a surrogate in the generalized 3-byte form is escaped as
// \udxxx, unless a high one is directly followed by a low one, which
// JavaScript sees as a pair and prints literally. Bytes that are not WTF-8
// at all (impossible for strings from Parse) are written as U+FFFD so the
// output is always valid UTF-8 and valid JSON.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c >= 0x20:
				b = append(b, c)
			case c == '\b':
				b = append(b, `\b`...)
			case c == '\f':
				b = append(b, `\f`...)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			continue
		}
		if u, ok := surrogateAt(s, i); ok {
			if lo, ok := surrogateAt(s, i+3); ok && u <= 0xDBFF && lo >= 0xDC00 {
				b = utf8.AppendRune(b, 0x10000+(u-0xD800)<<10+(lo-0xDC00))
				i += 6
				continue
			}
			b = append(b, '\\', 'u', hex[u>>12], hex[u>>8&0xF], hex[u>>4&0xF], hex[u&0xF])
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// surrogateAt decodes a WTF-8 surrogate code unit at s[i:], if there is one.
func surrogateAt(s string, i int) (rune, bool) {
	if i+2 < len(s) && s[i] == 0xED && 0xA0 <= s[i+1] && s[i+1] <= 0xBF && 0x80 <= s[i+2] && s[i+2] <= 0xBF {
		return 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), true
	}
	return 0, false
}

// AppendNumber appends x as JSON.stringify does: like FormatNumber for
// finite numbers and null for NaN and ±Infinity, which JSON cannot express.
func AppendNumber(b []byte, x float64) []byte {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return append(b, "null"...)
	}
	return append(b, FormatNumber(x)...)
}

// FormatNumber formats x as JavaScript's Number.prototype.toString() does:
// the shortest digits that round-trip, in fixed notation when
// 1e-7 <= |x| < 1e21 and otherwise in exponential notation such as "1e+21"
// or "1.5e-7". Both zeros print as "0"; NaN and the infinities print as
// "NaN", "Infinity" and "-Infinity".
func FormatNumber(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	case x == 0:
		return "0"
	}
	var out []byte
	if x < 0 {
		out = append(out, '-')
		x = -x
	}
	// strconv's shortest representation picks, like ECMAScript's
	// Number::toString, the fewest digits that round-trip and among those
	// the closest to x; only the layout differs. It looks like "d.ddde±XX".
	e := strconv.AppendFloat(nil, x, 'e', -1, 64)
	mark := bytes.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[mark+1:]))
	digits := append([]byte{e[0]}, e[min(2, mark):mark]...)
	// In the specification's terms x = 0.digits × 10^n and k = len(digits).
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		out = append(out, digits...)
		out = append(out, bytes.Repeat([]byte{'0'}, n-k)...)
	case 0 < n && n <= 21:
		out = append(out, digits[:n]...)
		out = append(out, '.')
		out = append(out, digits[n:]...)
	case -6 < n && n <= 0:
		out = append(out, "0."...)
		out = append(out, bytes.Repeat([]byte{'0'}, -n)...)
		out = append(out, digits...)
	default:
		out = append(out, digits[0])
		if k > 1 {
			out = append(out, '.')
			out = append(out, digits[1:]...)
		}
		out = append(out, 'e')
		if n-1 >= 0 {
			out = append(out, '+')
		}
		out = strconv.AppendInt(out, int64(n-1), 10)
	}
	return string(out)
}
