//go:build !js

package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestParseLatency(t *testing.T) {
	tests := []struct {
		name, in string
		want     latency
		err      bool
	}{
		{"three percentiles", "7,50,250", latency{7, 50, 250}, false},
		{"spaces are allowed", " 7, 50 ,250", latency{7, 50, 250}, false},
		{"one number is a fixed delay", "30", latency{30, 30, 30}, false},
		{"fractions are allowed", "0.5,1.5,2", latency{0.5, 1.5, 2}, false},
		{"two numbers are refused", "7,50", latency{}, true},
		{"percentiles out of order are refused", "50,7,250", latency{}, true},
		{"a negative delay is refused", "-1", latency{}, true},
		{"words are refused", "fast", latency{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLatency(tt.in)
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("parseLatency(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestWrapDelays(t *testing.T) {
	m := delayModel{KVRead: latency{7, 50, 250}, KVWrite: latency{30, 30, 30}, DORoundTrip: latency{10, 25, 60}, DOWrite: latency{5, 15, 40}}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(m.wrapDelays()), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ORDERS.get":             `{"p50":7,"p95":50,"p99":250}`,
		"ORDERS.getWithMetadata": `{"p50":7,"p95":50,"p99":250}`,
		"ORDERS.put":             `{"p50":30,"p95":30,"p99":30}`,
		"ORDERS.delete":          `{"p50":30,"p95":30,"p99":30}`,
		"LEDGER.claim":           `[{"p50":10,"p95":25,"p99":60},{"p50":5,"p95":15,"p99":40}]`,
		"LEDGER.commit":          `[{"p50":10,"p95":25,"p99":60},{"p50":5,"p95":15,"p99":40}]`,
		"LEDGER.*":               `{"p50":10,"p95":25,"p99":60}`,
	}
	for key, w := range want {
		if g := string(got[key]); g != w {
			t.Errorf("%s = %s, want %s", key, g, w)
		}
	}
}

// TestSampleDelayInNode draws delays with wrap.mjs's sampleDelay, in Node,
// and checks that their percentiles are the ones asked for.
func TestSampleDelayInNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found in PATH")
	}
	wrap, err := filepath.Abs(filepath.Join("..", "test", "wrapped", "wrap.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	script := `
const { sampleDelay } = await import(process.argv[1]);
const q = (spec) => {
  // Evenly spaced draws instead of Math.random: the exact quantiles,
  // the same on every run.
  const xs = Array.from({ length: 100000 }, (_, i) => sampleDelay(spec, () => (i + 0.5) / 100000)).sort((a, b) => a - b);
  const at = (p) => xs[Math.ceil(p * xs.length) - 1];
  return [at(0.5), at(0.95), at(0.99), xs[0], xs[xs.length - 1]];
};
console.log(JSON.stringify({
  dist: q({ p50: 7, p95: 50, p99: 250 }),
  fixed: sampleDelay(30),
  sum: sampleDelay([5, { p50: 3 }]),
  none: sampleDelay(undefined),
}));`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--input-type=module", "-e", script, "file://"+wrap).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got struct {
		Dist             [5]float64
		Fixed, Sum, None float64
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	near := func(x, want float64) bool { return x > want*0.99 && x < want*1.01 }
	if p50, p95, p99 := got.Dist[0], got.Dist[1], got.Dist[2]; !near(p50, 7) || !near(p95, 50) || !near(p99, 250) {
		t.Errorf("p50, p95, p99 of 100000 evenly spaced draws = %.1f, %.1f, %.1f; want 7, 50, 250 within 1%%", p50, p95, p99)
	}
	if lo, hi := got.Dist[3], got.Dist[4]; lo < 3.5 || hi > 500 {
		t.Errorf("draws range from %.2f to %.1f, want within p50/2 = 3.5 and 2·p99 = 500", lo, hi)
	}
	if got.Fixed != 30 || got.Sum != 8 || got.None != 0 {
		t.Errorf("fixed 30 drew %v, [5, p50 3] drew %v, no delay drew %v; want 30, 8, 0", got.Fixed, got.Sum, got.None)
	}
}
