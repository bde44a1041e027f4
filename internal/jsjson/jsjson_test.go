package jsjson_test

import (
	"math"
	"testing"

	"github.com/edge-orders/edge-orders/internal/jsjson"
)

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{"zero", 0, "0"},
		{"negative zero", math.Copysign(0, -1), "0"},
		{"one", 1, "1"},
		{"hundred", 100, "100"},
		{"fraction", 1.5, "1.5"},
		{"negative", -1.5, "-1.5"},
		{"shortest round trip", 0.30000000000000004, "0.30000000000000004"},
		{"1e20 in full", 1e20, "100000000000000000000"},
		{"largest double below 1e21 in full", math.Nextafter(1e21, 0), "999999999999999900000"},
		{"1e21 is exponential", 1e21, "1e+21"},
		{"-1e21 is exponential", -1e21, "-1e+21"},
		{"21 digits padded with zeros", 123456789012345680000, "123456789012345680000"},
		{"1.5e300", 1.5e300, "1.5e+300"},
		{"2**53+1 parsed", 9007199254740993, "9007199254740992"},
		{"2**53+2", 9007199254740994, "9007199254740994"},
		{"largest double", math.MaxFloat64, "1.7976931348623157e+308"},
		{"0.000001 is fixed", 0.000001, "0.000001"},
		{"0.0000015 is fixed", 0.0000015, "0.0000015"},
		{"1e-7 is exponential", 1e-7, "1e-7"},
		{"1.5e-7 is exponential", 1.5e-7, "1.5e-7"},
		{"smallest subnormal", 5e-324, "5e-324"},
		{"123.456", 123.456, "123.456"},
		{"NaN", math.NaN(), "NaN"},
		{"Infinity", math.Inf(1), "Infinity"},
		{"-Infinity", math.Inf(-1), "-Infinity"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := jsjson.FormatNumber(tc.in); got != tc.want {
				t.Errorf("FormatNumber(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
