package workers

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

// Everything that crosses between Go and JavaScript, besides numbers, is a
// frame: fields one after another, each its length as an unsigned LEB128
// varint and then its bytes. bridge.mjs reads and writes the same. A frame
// is plain bytes, so it crosses through one long-lived Uint8Array with
// js.CopyBytesToJS and js.CopyBytesToGo, and takes no slot in wasm_exec.js's
// table of values; and it is portable code, tested natively.

// outFrame builds a frame. The zero outFrame is empty.
type outFrame []byte

// Bytes appends a field holding b.
func (f outFrame) Bytes(b []byte) outFrame {
	return append(binary.AppendUvarint(f, uint64(len(b))), b...)
}

// Str appends a field holding s.
func (f outFrame) Str(s string) outFrame {
	return append(binary.AppendUvarint(f, uint64(len(s))), s...)
}

// Int appends a field holding n in decimal.
func (f outFrame) Int(n int64) outFrame {
	var buf [20]byte
	return f.Bytes(strconv.AppendInt(buf[:0], n, 10))
}

// Float appends a field holding x as strconv prints it, the shortest
// decimal that reads back as x, which JavaScript's Number() reads alike.
func (f outFrame) Float(x float64) outFrame {
	var buf [32]byte
	return f.Bytes(strconv.AppendFloat(buf[:0], x, 'g', -1, 64))
}

// Flag appends a field holding "1" for true, "" for false.
func (f outFrame) Flag(b bool) outFrame {
	if b {
		return f.Str("1")
	}
	return f.Str("")
}

// errFrame is a frame that ends inside a field.
var errFrame = errors.New("workers: a malformed frame from JavaScript")

// inFrame reads a frame field by field. A read past the end returns an
// empty field, so that a field left out reads as empty; a read of a
// malformed frame returns zero values and sets Err.
type inFrame struct {
	b   []byte
	Err error
}

// readFrame returns a reader of the frame b.
func readFrame(b []byte) *inFrame { return &inFrame{b: b} }

// More reports whether a field is left.
func (r *inFrame) More() bool { return r.Err == nil && len(r.b) > 0 }

// Bytes returns the next field; it aliases the frame.
func (r *inFrame) Bytes() []byte {
	if r.Err != nil || len(r.b) == 0 {
		return nil
	}
	n, size := binary.Uvarint(r.b)
	if size <= 0 || n > uint64(len(r.b)-size) {
		r.Err, r.b = errFrame, nil
		return nil
	}
	field := r.b[size : size+int(n)]
	r.b = r.b[size+int(n):]
	return field
}

// Str returns the next field as a string.
func (r *inFrame) Str() string { return string(r.Bytes()) }

// Int returns the next field, a decimal integer; anything else is 0.
func (r *inFrame) Int() int64 {
	n, _ := strconv.ParseInt(string(r.Bytes()), 10, 64)
	return n
}

// Float returns the next field, a number as JavaScript prints it; NaN for
// anything else.
func (r *inFrame) Float() float64 {
	x, err := strconv.ParseFloat(string(r.Bytes()), 64)
	if err != nil {
		return math.NaN()
	}
	return x
}

// Flag returns the next field as a flag: true unless empty.
func (r *inFrame) Flag() bool { return len(r.Bytes()) > 0 }
