package client

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestBackoffBounds(t *testing.T) {
	const base, maxDelay = 100 * time.Millisecond, 5 * time.Second
	tests := []struct {
		name        string
		attempt     int
		base, max   time.Duration
		wantCeiling time.Duration
	}{
		{"first retry is up to the base", 1, base, maxDelay, base},
		{"second retry doubles", 2, base, maxDelay, 2 * base},
		{"sixth retry doubles five times", 6, base, maxDelay, 32 * base},
		{"seventh retry is capped", 7, base, maxDelay, maxDelay},
		{"hundredth retry is capped, not overflowed", 100, base, maxDelay, maxDelay},
		{"a cap near the largest Duration does not overflow", 70, time.Hour, math.MaxInt64 - 1, math.MaxInt64 - 1},
		{"a base above the cap is capped", 1, time.Minute, time.Second, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The ends of the random range give the ends of the wait.
			if got := backoff(tc.attempt, tc.base, tc.max, func(n int64) int64 { return n - 1 }); got != tc.wantCeiling {
				t.Errorf("largest wait = %v, want %v", got, tc.wantCeiling)
			}
			if got := backoff(tc.attempt, tc.base, tc.max, func(int64) int64 { return 0 }); got != 0 {
				t.Errorf("smallest wait = %v, want 0", got)
			}
			var below, above int
			for range 2000 {
				got := backoff(tc.attempt, tc.base, tc.max, rand.Int64N)
				if got < 0 || got > tc.wantCeiling {
					t.Fatalf("wait = %v, want in [0, %v]", got, tc.wantCeiling)
				}
				if got < tc.wantCeiling/2 {
					below++
				} else {
					above++
				}
			}
			// Uniform over the range: about half on each side of the middle.
			if below < 800 || above < 800 {
				t.Errorf("%d waits below half the ceiling, %d above, want about 1000 each", below, above)
			}
		})
	}
}
