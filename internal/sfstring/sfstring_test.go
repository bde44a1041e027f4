package sfstring_test

import (
	"testing"

	"github.com/edge-orders/edge-orders/internal/sfstring"
)

func TestQuote(t *testing.T) {
	tests := []struct{ name, s, want string }{
		{"an order id is quoted", "0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e", `"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e"`},
		{"a quote is escaped", `a"b`, `"a\"b"`},
		{"a backslash is escaped", `a\b`, `"a\\b"`},
		{"a comma stays inside the quotes", `a,b`, `"a,b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sfstring.Quote(tc.s); got != tc.want {
				t.Errorf("Quote(%q) = %s, want %s", tc.s, got, tc.want)
			}
		})
	}
}
