package jsjson

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf8"
)

// This file is Response.json() as the reference Worker relied on it: a
// WHATWG UTF-8 decode, then JSON.parse. encoding/json cannot stand in for it
// without changing which bodies are accepted (duplicate members, lone
// surrogates, numbers out of range).

// MaxDepth is how many arrays and objects may be open at once in a body:
// the top-level object counts as 1, so {"a":[[1]]} has depth 3. V8 accepts
// far deeper nesting; the bound is a deliberate deviation that keeps hostile
// bodies from costing more than a fixed stack.
const MaxDepth = 64

var (
	// ErrSyntax is returned wherever JSON.parse would throw a SyntaxError.
	ErrSyntax = errors.New("jsjson: not valid JSON")
	// ErrTooDeep is returned for a document nested deeper than MaxDepth.
	ErrTooDeep = errors.New("jsjson: arrays and objects nested deeper than jsjson.MaxDepth")
)

// decodeUTF8 decodes b as the reference's request.json() does in workerd
// at the reference's compatibility date (2026-01-01): every maximal
// ill-formed subpart becomes one U+FFFD, as the WHATWG decoder does, and a
// byte order mark is kept, so JSON.parse rejects it. (workerd strips a BOM
// only from compatibility date 2026-01-13, flag strip_bom_in_read_all_text;
// measured in wrangler dev.) utf8.DecodeRune would replace byte by byte, so
// E2 82 followed by '"' would yield two U+FFFD where Workers yield one. The
// result is always valid UTF-8.
func decodeUTF8(b []byte) []byte {
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

// Kind tells apart the value types a member read distinguishes.
type Kind uint8

// The kinds, as typeof would sort them for what Parse keeps.
const (
	Undefined Kind = iota // a member the object does not have
	Other                 // object, array, boolean or null
	String
	Number
)

// Value is a top-level member as JavaScript code reading it would observe it.
type Value struct {
	Kind Kind
	// Str is a String's value in WTF-8: valid UTF-8 except that lone
	// surrogates from \uXXXX escapes are kept, in the generalized 3-byte
	// form, so they print back as JavaScript would print them.
	Str string
	// Num is a Number's value, ±Inf for literals out of range.
	Num float64
}

// Object is the result of Parse: whether the document is an object, and the
// members Parse was asked for.
type Object struct {
	isObject bool
	names    []string
	values   []Value
	others   int
}

// Others is how many top-level members the object has beside those Parse
// was asked for, duplicates counted.
func (o Object) Others() int { return o.others }

// IsObject reports whether the document's top level is an object.
func (o Object) IsObject() bool { return o.isObject }

// Get returns the member name as a property read would see it: the last of
// duplicate members, or Undefined when it is absent or was not asked for.
func (o Object) Get(name string) Value {
	for i, n := range o.names {
		if n == name {
			return o.values[i]
		}
	}
	return Value{}
}

// Parse decodes body as Response.json() does: every ill-formed UTF-8
// sequence becomes U+FFFD (a byte order mark is kept, so it is a syntax
// error), then JSON.parse. Of the result it keeps the top-level object's
// members named in names; everything else is only checked. It returns
// ErrSyntax wherever JSON.parse throws and ErrTooDeep beyond MaxDepth, and
// runs in time linear in len(body) with recursion at most MaxDepth deep, so
// no input can make it panic or run away.
func Parse(body []byte, names ...string) (Object, error) {
	p := parser{s: decodeUTF8(body), maxDepth: MaxDepth}
	top := Object{names: names, values: make([]Value, len(names))}
	if err := p.document(&top); err != nil {
		return Object{}, err
	}
	return top, nil
}

// validMaxDepth is how deep encoding/json's Valid lets a document nest.
const validMaxDepth = 10000

// Valid reports whether b is one JSON document, answering as encoding/json's
// Valid does, which kv's checks used before: the grammar JSON.parse
// accepts, nested up to validMaxDepth rather than MaxDepth, and UTF-8 left
// unchecked (outside strings only ASCII is valid anyway, and inside them
// Parse would turn ill-formed bytes into U+FFFD rather than fail).
func Valid(b []byte) bool {
	p := parser{s: b, maxDepth: validMaxDepth}
	return p.document(nil) == nil
}

type parser struct {
	s        []byte
	i        int
	buf      []byte // scratch for decoding strings, reused to avoid garbage
	maxDepth int    // how many arrays and objects may be open at once
}

// document parses all of p.s as one value. If top is non-nil and the value
// is an object, it records the members top asks for.
func (p *parser) document(top *Object) error {
	p.skipSpace()
	var err error
	if top != nil && p.peek() == '{' {
		top.isObject = true
		err = p.object(1, top)
	} else {
		_, err = p.value(0, false)
	}
	if err != nil {
		return err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return ErrSyntax
	}
	return nil
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
// set, since everything but the asked-for members is merely checked.
func (p *parser) value(depth int, keep bool) (Value, error) {
	switch c := p.peek(); {
	case c == '{':
		return Value{Kind: Other}, p.object(depth+1, nil)
	case c == '[':
		return Value{Kind: Other}, p.array(depth + 1)
	case c == '"':
		if err := p.string(); err != nil {
			return Value{}, err
		}
		if keep {
			return Value{Kind: String, Str: string(p.buf)}, nil
		}
		return Value{Kind: String}, nil
	case c == '-' || '0' <= c && c <= '9':
		return p.number(keep)
	case p.literal("true"), p.literal("false"), p.literal("null"):
		return Value{Kind: Other}, nil
	}
	return Value{}, ErrSyntax
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
// open container. When top is non-nil it records the members top asks for;
// names are compared after unescaping and case-sensitively, as property
// access does.
func (p *parser) object(depth int, top *Object) error {
	if depth > p.maxDepth {
		return ErrTooDeep
	}
	p.i++
	p.skipSpace()
	if p.peek() == '}' {
		p.i++
		return nil
	}
	for {
		if p.peek() != '"' {
			return ErrSyntax
		}
		if err := p.string(); err != nil {
			return err
		}
		var slot *Value
		if top != nil {
			for i, name := range top.names {
				if string(p.buf) == name {
					slot = &top.values[i]
				}
			}
			if slot == nil {
				top.others++
			}
		}
		p.skipSpace()
		if p.peek() != ':' {
			return ErrSyntax
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
			return ErrSyntax
		}
	}
}

// array parses an array whose '[' is at p.i and which is the depth-th open
// container.
func (p *parser) array(depth int) error {
	if depth > p.maxDepth {
		return ErrTooDeep
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
			return ErrSyntax
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
			return ErrSyntax
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
				return ErrSyntax
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
			return ErrSyntax
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
func (p *parser) number(keep bool) (Value, error) {
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
		return Value{}, ErrSyntax
	}
	if p.peek() == '.' {
		p.i++
		if p.digits() == 0 {
			return Value{}, ErrSyntax
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if p.digits() == 0 {
			return Value{}, ErrSyntax
		}
	}
	if !keep {
		return Value{Kind: Number}, nil
	}
	f, err := strconv.ParseFloat(string(p.s[start:p.i]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return Value{}, ErrSyntax // unreachable: the grammar was checked above
	}
	return Value{Kind: Number, Num: f}, nil
}

// digits consumes a run of ASCII digits and reports its length.
func (p *parser) digits() int {
	start := p.i
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}
