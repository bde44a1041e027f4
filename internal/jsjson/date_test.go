package jsjson_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/edge-orders/edge-orders/internal/jsjson"
)

// TestParseRFC3339ReadsWhatTimeParseReads holds ParseRFC3339 to
// time.Parse(time.RFC3339, …), which it replaces in the Worker: the same
// strings accepted, at the same instant, among strings built near the form
// (each piece right, or off by a character) and a few written out.
func TestParseRFC3339ReadsWhatTimeParseReads(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, s string) {
		want, err := time.Parse(time.RFC3339, s)
		got, ok := jsjson.ParseRFC3339(s)
		if ok != (err == nil) || ok && !got.Equal(want) {
			t.Fatalf("ParseRFC3339(%q) = %v, %v; time.Parse gives %v, %v", s, got, ok, want, err)
		}
	}
	for _, s := range []string{
		"2026-11-22T12:00:00Z", "2026-11-22T12:00:00.123Z", "2026-11-22T12:00:00.123456789123Z",
		"2026-11-22T12:00:00+01:30", "2026-11-22T12:00:00-23:59", "2024-02-29T00:00:00Z",
		"2023-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-12-31T23:59:59Z", "2026-11-22T24:00:00Z",
		"2026-11-22T12:00:60Z", "2026-11-22T12:00:00z", "2026-11-22t12:00:00Z", "2026-11-22T12:00:00",
		"2026-11-22T12:00:00.Z", "2026-11-22T12:00:00,5Z", "+010000-01-01T00:00:00.000Z", "",
		"2026-11-22T12:00:00+24:00", "2026-11-22T12:00:00+01:60", "2026-11-22T12:00:00+0100", "1900-02-29T00:00:00Z",
	} {
		check(t, s)
	}
	rapid.Check(t, func(t *rapid.T) {
		piece := func(label, valid string, alts ...string) string {
			return rapid.SampledFrom(append([]string{valid, valid, valid}, alts...)).Draw(t, label)
		}
		num := func(label string, width, lo, hi int) string {
			return fmt.Sprintf("%0*d", width, rapid.IntRange(lo, hi).Draw(t, label))
		}
		s := num("year", 4, 0, 9999) + piece("dash", "-", "/", "") + num("month", 2, 0, 13) + "-" +
			num("day", 2, 0, 32) + piece("T", "T", "t", " ", "") + num("hour", 2, 0, 25) + ":" +
			num("minute", 2, 0, 61) + piece("colon", ":", "") + num("second", 2, 0, 61) +
			piece("fraction", "", ".5", ".123456789", ".1234567891234", ".", ",25", ".x") +
			piece("zone", "Z", "+05:30", "-11:45", "+24:00", "+01:60", "z", "+0530", "", "Zx")
		check(t, s)
	})
}
