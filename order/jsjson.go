package order

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// This file holds the small part of a JavaScript engine the Worker's
// reference implementation relied on: Response.json() (WHATWG UTF-8 decode,
// then JSON.parse), JSON.stringify for strings, Number.prototype.toString and
// Date.prototype.toISOString. encoding/json cannot stand in for any of them
// without changing which bodies are accepted or what the receipt says.

// MaxDepth is how many arrays and objects may be open at once in a body:
// the top-level object counts as 1, so {"a":[[1]]} has depth 3. V8 accepts
// far deeper nesting; the bound is a deliberate deviation that keeps hostile
// bodies from costing more than a fixed stack.
const MaxDepth = 64

// errTooDeep is kept apart from other syntax errors only so the message can
// say why; callers see ErrInvalid either way.
var (
	errSyntax  = errors.New("body is not valid JSON")
	errTooDeep = errors.New("body nests arrays and objects deeper than order.MaxDepth")
)

// decodeUTF8 is the WHATWG "UTF-8 decode" that Response.json() applies:
// one leading byte order mark is dropped and every maximal ill-formed
// subpart becomes one U+FFFD. utf8.DecodeRune would instead replace byte by
// byte, so E2 82 followed by '"' would yield two U+FFFD where browsers and
// Workers yield one. The result is always valid UTF-8.
//
// Runtimes disagree about the BOM; this follows the standard. workerd strips
// it only from compatibility date 2026-01-13 (strip_bom_in_read_all_text) and
// so rejects such bodies before it, while Node's fetch strips up to two.
func decodeUTF8(b []byte) []byte {
	b = bytes.TrimPrefix(b, []byte("\xEF\xBB\xBF"))
	if utf8.Valid(b) {
		// utf8.Valid and WHATWG agree on what is well formed (no overlongs,
		// no surrogates, nothing above U+10FFFF), so this is the common,
		// copy-free case.
		return b
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		// need is the count of continuation bytes; lo and hi bound the
		// first one, which is how the standard excludes overlong forms,
		// surrogates and code points above U+10FFFF.
		need, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case 0xC2 <= c && c <= 0xDF:
			need = 1
		case 0xE0 <= c && c <= 0xEF:
			need = 2
			if c == 0xE0 {
				lo = 0xA0
			} else if c == 0xED {
				hi = 0x9F
			}
		case 0xF0 <= c && c <= 0xF4:
			need = 3
			if c == 0xF0 {
				lo = 0x90
			} else if c == 0xF4 {
				hi = 0x8F
			}
		}
		j := i + 1
		for got := 0; got < need && j < len(b) && lo <= b[j] && b[j] <= hi; got++ {
			lo, hi = 0x80, 0xBF
			j++
		}
		if need > 0 && j-i-1 == need {
			out = append(out, b[i:j]...)
		} else {
			// The byte that broke the sequence is not consumed: the
			// standard reprocesses it, possibly as the start of a new one.
			out = utf8.AppendRune(out, utf8.RuneError)
		}
		i = j
	}
	return out
}

// jsKind tells apart the only value types validate() distinguishes.
type jsKind uint8

const (
	kindUndefined jsKind = iota // a member the object does not have
	kindOther                   // object, array, boolean or null
	kindString
	kindNumber
)

// jsValue is a JSON value as far as validate() can observe it.
type jsValue struct {
	kind jsKind
	str  string // kindString: the JavaScript string in WTF-8
	num  float64
}

// topLevel holds the members of the body's top-level object that validate()
// reads. A JSON.parse result is an ordinary object, so the last duplicate
// wins and a missing member reads as undefined, the zero jsValue.
type topLevel struct {
	isObject               bool
	symbol, side, quantity jsValue
}

// parseJSON is JSON.parse(text) restricted to what validate() needs. It
// returns errSyntax wherever JSON.parse throws a SyntaxError and errTooDeep
// beyond MaxDepth. It runs in time linear in len(text) and recurses at most
// MaxDepth levels, so no input can make it panic or run away.
func parseJSON(text []byte) (topLevel, error) {
	p := parser{s: text}
	var top topLevel
	p.skipSpace()
	var err error
	if p.peek() == '{' {
		top.isObject = true
		err = p.object(1, &top)
	} else {
		_, err = p.value(0, false)
	}
	if err != nil {
		return topLevel{}, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return topLevel{}, errSyntax
	}
	return top, nil
}

type parser struct {
	s   []byte
	i   int
	buf []byte // scratch for decoding strings, reused to avoid garbage
}

// peek returns the next byte, or 0 at the end; 0 never starts a JSON token.
func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// skipSpace skips JSON whitespace, which unlike JavaScript source
// whitespace is only these four characters (no BOM, no NBSP, no U+2028).
func (p *parser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value parses one value at p.i. depth is the number of arrays and objects
// already open around it. Strings and numbers are only decoded when keep is
// set, since everything but three top-level members is merely checked.
func (p *parser) value(depth int, keep bool) (jsValue, error) {
	switch c := p.peek(); {
	case c == '{':
		return jsValue{kind: kindOther}, p.object(depth+1, nil)
	case c == '[':
		return jsValue{kind: kindOther}, p.array(depth + 1)
	case c == '"':
		if err := p.string(); err != nil {
			return jsValue{}, err
		}
		if keep {
			return jsValue{kind: kindString, str: string(p.buf)}, nil
		}
		return jsValue{kind: kindString}, nil
	case c == '-' || '0' <= c && c <= '9':
		return p.number(keep)
	case p.literal("true"), p.literal("false"), p.literal("null"):
		return jsValue{kind: kindOther}, nil
	}
	return jsValue{}, errSyntax
}

// literal consumes word if the input continues with it.
func (p *parser) literal(word string) bool {
	if bytes.HasPrefix(p.s[p.i:], []byte(word)) {
		p.i += len(word)
		return true
	}
	return false
}

// object parses an object whose '{' is at p.i and which is the depth-th
// open container. When top is non-nil it records the members validate()
// reads; keys are compared after unescaping and case-sensitively, as
// property access does.
func (p *parser) object(depth int, top *topLevel) error {
	if depth > MaxDepth {
		return errTooDeep
	}
	p.i++
	p.skipSpace()
	if p.peek() == '}' {
		p.i++
		return nil
	}
	for {
		if p.peek() != '"' {
			return errSyntax
		}
		if err := p.string(); err != nil {
			return err
		}
		var slot *jsValue
		if top != nil {
			switch string(p.buf) {
			case "symbol":
				slot = &top.symbol
			case "side":
				slot = &top.side
			case "quantity":
				slot = &top.quantity
			}
		}
		p.skipSpace()
		if p.peek() != ':' {
			return errSyntax
		}
		p.i++
		p.skipSpace()
		v, err := p.value(depth, slot != nil)
		if err != nil {
			return err
		}
		if slot != nil {
			*slot = v
		}
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.i++
			p.skipSpace()
		case '}':
			p.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// array parses an array whose '[' is at p.i and which is the depth-th open
// container.
func (p *parser) array(depth int) error {
	if depth > MaxDepth {
		return errTooDeep
	}
	p.i++
	p.skipSpace()
	if p.peek() == ']' {
		p.i++
		return nil
	}
	for {
		if _, err := p.value(depth, false); err != nil {
			return err
		}
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.i++
			p.skipSpace()
		case ']':
			p.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// string parses a string literal whose '"' is at p.i and leaves its value
// in p.buf as WTF-8: a JavaScript string may hold lone surrogates, which
// UTF-8 cannot, and they must survive to the receipt exactly as JavaScript
// would print them.
func (p *parser) string() error {
	p.i++
	p.buf = p.buf[:0]
	for {
		start := p.i
		for p.i < len(p.s) && p.s[p.i] != '"' && p.s[p.i] != '\\' && p.s[p.i] >= 0x20 {
			p.i++
		}
		p.buf = append(p.buf, p.s[start:p.i]...)
		switch p.peek() {
		case '"':
			p.i++
			return nil
		case '\\':
		default:
			// End of input or a raw control character, which JSON.parse
			// rejects even though JavaScript string literals allow some.
			return errSyntax
		}
		p.i++
		c := p.peek()
		p.i++
		switch c {
		case '"', '\\', '/':
			p.buf = append(p.buf, c)
		case 'b':
			p.buf = append(p.buf, '\b')
		case 'f':
			p.buf = append(p.buf, '\f')
		case 'n':
			p.buf = append(p.buf, '\n')
		case 'r':
			p.buf = append(p.buf, '\r')
		case 't':
			p.buf = append(p.buf, '\t')
		case 'u':
			u, ok := p.hex4(p.i)
			if !ok {
				return errSyntax
			}
			p.i += 4
			// Two escapes forming a surrogate pair are one code point in
			// the JavaScript string; anything else is kept as is, lone
			// surrogates included.
			if 0xD800 <= u && u <= 0xDBFF && p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
				if lo, ok := p.hex4(p.i + 2); ok && 0xDC00 <= lo && lo <= 0xDFFF {
					p.i += 6
					p.buf = utf8.AppendRune(p.buf, 0x10000+(u-0xD800)<<10+(lo-0xDC00))
					continue
				}
			}
			p.buf = appendWTF8(p.buf, u)
		default:
			return errSyntax
		}
	}
}

// hex4 reads four hex digits of either case at s[at:].
func (p *parser) hex4(at int) (rune, bool) {
	if at+4 > len(p.s) {
		return 0, false
	}
	var u rune
	for _, c := range p.s[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		u = u<<4 | rune(c)
	}
	return u, true
}

// appendWTF8 appends a UTF-16 code unit, encoding surrogates in the
// generalized 3-byte form (ED A0..BF 80..BF) that utf8.AppendRune refuses.
func appendWTF8(b []byte, u rune) []byte {
	if 0xD800 <= u && u <= 0xDFFF {
		return append(b, 0xED, byte(0x80|(u>>6)&0x3F), byte(0x80|u&0x3F))
	}
	return utf8.AppendRune(b, u)
}

// number parses -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at p.i.
// JSON.parse maps out-of-range literals to ±Infinity or ±0 rather than
// failing, so strconv.ErrRange is not an error here.
func (p *parser) number(keep bool) (jsValue, error) {
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case '1' <= c && c <= '9':
		p.digits()
	default:
		return jsValue{}, errSyntax
	}
	if p.peek() == '.' {
		p.i++
		if p.digits() == 0 {
			return jsValue{}, errSyntax
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if p.digits() == 0 {
			return jsValue{}, errSyntax
		}
	}
	if !keep {
		return jsValue{kind: kindNumber}, nil
	}
	f, err := strconv.ParseFloat(string(p.s[start:p.i]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return jsValue{}, errSyntax // unreachable: the grammar was checked above
	}
	return jsValue{kind: kindNumber, num: f}, nil
}

// digits consumes a run of ASCII digits and reports its length.
func (p *parser) digits() int {
	start := p.i
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

// appendJSString appends s as ES2019 JSON.stringify writes a string. s is
// read as WTF-8: a surrogate in the generalized 3-byte form is escaped as
// \udxxx, unless a high one is directly followed by a low one, which
// JavaScript sees as a pair and prints literally. Bytes that are not WTF-8
// at all (impossible for strings from Parse) are written as U+FFFD so the
// output is always valid UTF-8 and valid JSON.
func appendJSString(b []byte, s string) []byte {
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

// appendJSONNumber appends x as JSON.stringify does: like FormatNumber for
// finite numbers and null for NaN and ±Infinity, which JSON cannot express.
func appendJSONNumber(b []byte, x float64) []byte {
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

// appendISOTime appends t as Date.prototype.toISOString() writes it: UTC,
// milliseconds truncated (a Date holds whole milliseconds), and years
// outside 0000..9999 in the signed six-digit form such as "+010000". Years
// beyond ±999999, which no Date can hold, simply get more digits.
func appendISOTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year := t.Year()
	switch {
	case year < 0:
		b = appendPadded(append(b, '-'), -year, 6)
	case year > 9999:
		b = appendPadded(append(b, '+'), year, 6)
	default:
		b = appendPadded(b, year, 4)
	}
	b = appendPadded(append(b, '-'), int(t.Month()), 2)
	b = appendPadded(append(b, '-'), t.Day(), 2)
	b = appendPadded(append(b, 'T'), t.Hour(), 2)
	b = appendPadded(append(b, ':'), t.Minute(), 2)
	b = appendPadded(append(b, ':'), t.Second(), 2)
	b = appendPadded(append(b, '.'), t.Nanosecond()/int(time.Millisecond), 3)
	return append(b, 'Z')
}

// appendPadded appends the non-negative v with leading zeros to width digits.
func appendPadded(b []byte, v, width int) []byte {
	d := strconv.Itoa(v)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}
