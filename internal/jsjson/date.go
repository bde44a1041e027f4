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

// ParseRFC3339 reads what time.Parse(time.RFC3339, s) reads, to the same
// instant: "2006-01-02T15:04:05" with an optional fraction of up to nine
// digits kept (more are cut), then "Z" or "±hh:mm". It is here, not
// time.Parse, because time.Parse's layout machinery is about 7 KB of
// TinyGo's gzipped Worker, which reads only this one form (a receipt's
// acceptedAt, which toISOString wrote, and a configured time).
func ParseRFC3339(s string) (time.Time, bool) {
	const date = len("2006-01-02T15:04:05")
	if len(s) < date+1 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	second, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(time.Month(month), year) || hour > 23 || minute > 59 || second > 59 {
		return time.Time{}, false
	}
	rest, nanos := s[date:], 0
	if rest[0] == '.' || rest[0] == ',' {
		n := 1
		for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
			if n <= 9 {
				nanos = nanos*10 + int(rest[n]-'0')
			}
			n++
		}
		if n == 1 {
			return time.Time{}, false
		}
		for i := n; i <= 9; i++ {
			nanos *= 10
		}
		rest = rest[n:]
	}
	offset := 0
	switch {
	case rest == "Z":
	case len(rest) == len("+07:00") && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		h, okh := digits(rest[1:3])
		m, okm := digits(rest[4:6])
		if !okh || !okm || h > 24 || m > 60 { // time.Parse's bounds, not RFC 3339's
			return time.Time{}, false
		}
		if offset = h*3600 + m*60; rest[0] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, nanos, time.UTC)
	return t.Add(-time.Duration(offset) * time.Second), true
}

// digits reads s, all ASCII digits, as a number.
func digits(s string) (int, bool) {
	n := 0
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// daysIn is how many days month has in year.
func daysIn(month time.Month, year int) int {
	if month == time.February {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 30 + int((month+month/8)%2)
}
