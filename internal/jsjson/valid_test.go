package jsjson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/internal/jsjson"
)

var validCases = []struct {
	name string
	in   string
	want bool
}{
	{"object", `{"fingerprint":"ab12"}`, true},
	{"empty object", `{}`, true},
	{"array", `[1, "two", null, true, false, {"a": []}]`, true},
	{"string", `"s"`, true},
	{"number", `-0.5e+10`, true},
	{"literal", `null`, true},
	{"surrounding white space", " \t\r\n{}\n ", true},
	{"lone surrogate escape", `"\ud800"`, true},
	{"ill-formed UTF-8 in a string", "\"\xff\xfe\"", true},
	{"nested 64 deep", strings.Repeat("[", 64) + strings.Repeat("]", 64), true},
	{"nested 65 deep, past MaxDepth", strings.Repeat("[", 65) + strings.Repeat("]", 65), true},
	{"nested 10000 deep", strings.Repeat(`{"a":`, 9999) + "{}" + strings.Repeat("}", 9999), true},
	{"nested 10001 deep", strings.Repeat("[", 10001) + strings.Repeat("]", 10001), false},
	{"empty", ``, false},
	{"white space only", `  `, false},
	{"two documents", `{} {}`, false},
	{"trailing comma", `{"a":1,}`, false},
	{"unquoted member", `{a:1}`, false},
	{"single quotes", `'s'`, false},
	{"leading zero", `01`, false},
	{"bare fraction", `.5`, false},
	{"NaN", `NaN`, false},
	{"raw control character in a string", "\"a\tb\"", false},
	{"bad escape", `"\x41"`, false},
	{"short unicode escape", `"\u12"`, false},
	{"byte order mark", "\ufeff{}", false},
	{"ill-formed UTF-8 outside a string", "[\xff]", false},
	{"unterminated", `{"a":`, false},
	{"unclosed array", `[1`, false},
}

func TestValid(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := jsjson.Valid([]byte(tc.in)); got != tc.want {
				t.Errorf("Valid = %v, want %v", got, tc.want)
			}
			if got, want := jsjson.Valid([]byte(tc.in)), json.Valid([]byte(tc.in)); got != want {
				t.Errorf("Valid = %v, but encoding/json's Valid = %v", got, want)
			}
		})
	}
}

// FuzzValid checks that Valid answers as encoding/json's Valid, which it
// replaces in the Worker.
func FuzzValid(f *testing.F) {
	for _, tc := range validCases {
		if len(tc.in) < 1000 {
			f.Add([]byte(tc.in))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := jsjson.Valid(b), json.Valid(b); got != want {
			t.Errorf("Valid(%q) = %v, want %v as encoding/json's", b, got, want)
		}
	})
}
