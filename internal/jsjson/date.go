package jsjson

import (
	"strconv"
	"time"
)

// AppendISOTime appends t as Date.prototype.toISOString() writes it: UTC,
// milliseconds truncated (a Date holds whole milliseconds), and years
// outside 0000..9999 in the signed six-digit form such as "+010000". Years
// beyond ±999999, which no Date can hold, simply get more digits.
func AppendISOTime(b []byte, t time.Time) []byte {
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
