package workers

import (
	"math"
	"testing"
)

// TestFrameFloatRoundTrips: a double crosses as the shortest decimal that
// reads back as itself, as JavaScript's Number() reads it.
func TestFrameFloatRoundTrips(t *testing.T) {
	for _, x := range []float64{0, 1, -3, 2.5, 0.1, 1e21, 1e-7, 12345.678, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f := readFrame(outFrame{}.Float(x))
		if got := f.Float(); got != x || f.More() {
			t.Errorf("Float(%v) read back as %v", x, got)
		}
	}
}
