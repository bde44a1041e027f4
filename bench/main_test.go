//go:build !js

package main

import (
	"slices"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	t.Run("defaults run every phase", func(t *testing.T) {
		cfg, err := parseFlags(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.phases, []string{crossingsPhase, latencyPhase, saturationPhase}) {
			t.Errorf("phases = %v, want crossings, latency, saturation", cfg.phases)
		}
		if !slices.Equal(cfg.latencyConns, []int{1, 8}) {
			t.Errorf("latency conns = %v, want 1, 8", cfg.latencyConns)
		}
		if cfg.delays.KVRead != (latency{7, 50, 250}) {
			t.Errorf("KV read = %v, want the published 7, 50, 250", cfg.delays.KVRead)
		}
	})
	t.Run("quick shortens the runs", func(t *testing.T) {
		cfg, err := parseFlags([]string{"-quick"})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.duration != time.Second || cfg.latencyDuration != time.Second || cfg.rounds != 1 {
			t.Errorf("durations %v, %v, rounds %d; want 1s, 1s, 1", cfg.duration, cfg.latencyDuration, cfg.rounds)
		}
	})
	t.Run("quick keeps an explicit duration", func(t *testing.T) {
		cfg, err := parseFlags([]string{"-quick", "-duration", "3s"})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.duration != 3*time.Second || cfg.rounds != 1 {
			t.Errorf("duration %v, rounds %d; want 3s, 1", cfg.duration, cfg.rounds)
		}
	})
	t.Run("phases run latency first whatever the order", func(t *testing.T) {
		cfg, err := parseFlags([]string{"-phases", "saturation,latency"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.phases, []string{latencyPhase, saturationPhase}) {
			t.Errorf("phases = %v", cfg.phases)
		}
	})
	t.Run("go-var is repeatable", func(t *testing.T) {
		cfg, err := parseFlags([]string{"-go-var", "LOG_LEVEL=all", "-go-var", "IN_PROGRESS_WAIT_MS=0"})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.goVars["LOG_LEVEL"] != "all" || cfg.goVars["IN_PROGRESS_WAIT_MS"] != "0" {
			t.Errorf("go vars = %v", cfg.goVars)
		}
	})
	for _, args := range [][]string{
		{"-phases", "warp"},
		{"-scenarios", "nope"},
		{"-conns", "0"},
		{"-kv-write", "30,10,20"},
		{"-go-var", "NOVALUE"},
		{"-quiet", "maybe"},
		{"-rounds", "0"},
	} {
		t.Run("refuses "+args[0]+" "+args[1], func(t *testing.T) {
			if _, err := parseFlags(args); err == nil {
				t.Errorf("parseFlags(%q) succeeded", args)
			}
		})
	}
}

func TestNewPhase(t *testing.T) {
	cfg, err := parseFlags([]string{"-go-var", "X=1"})
	if err != nil {
		t.Fatal(err)
	}
	names := func(p *phase) []string {
		var n []string
		for _, s := range p.subjects {
			n = append(n, s.name)
		}
		return n
	}
	t.Run("latency serves every Worker through its delaying entry", func(t *testing.T) {
		p := newPhase(latencyPhase, cfg, true)
		if got, want := names(p), []string{"Go KV", "Go ledger", "JS port", "seed TS"}; !slices.Equal(got, want) {
			t.Errorf("subjects = %v, want %v", got, want)
		}
		for _, s := range p.subjects {
			if s.opts.Script == "" || s.opts.Vars["WRAP_DELAYS"] == "" {
				t.Errorf("%s: script %q, WRAP_DELAYS %q; want the delaying entry", s.name, s.opts.Script, s.opts.Vars["WRAP_DELAYS"])
			}
			if got := s.opts.Vars["X"]; (got == "1") != s.kind.isGo() {
				t.Errorf("%s: X = %q; want the Go vars on Go subjects only", s.name, got)
			}
		}
		if p.subjects[1].opts.Environment != "ledger" {
			t.Errorf("Go ledger runs in environment %q", p.subjects[1].opts.Environment)
		}
	})
	t.Run("saturation adds quiet Go Workers when LOG_LEVEL exists", func(t *testing.T) {
		p := newPhase(saturationPhase, cfg, true)
		want := []string{"Go KV", "Go ledger", "Go KV LOG_LEVEL=errors", "Go ledger LOG_LEVEL=errors", "JS port", "seed TS"}
		if got := names(p); !slices.Equal(got, want) {
			t.Errorf("subjects = %v, want %v", got, want)
		}
		for _, s := range p.subjects {
			if s.opts.Script != "" {
				t.Errorf("%s is served through %s, want as shipped", s.name, s.opts.Script)
			}
		}
		if p.yardstick() != len(want)-1 {
			t.Errorf("yardstick = %d, want the seed", p.yardstick())
		}
	})
	t.Run("saturation without LOG_LEVEL runs the Go Workers as they are", func(t *testing.T) {
		if got, want := names(newPhase(saturationPhase, cfg, false)), []string{"Go KV", "Go ledger", "JS port", "seed TS"}; !slices.Equal(got, want) {
			t.Errorf("subjects = %v, want %v", got, want)
		}
	})
}

func TestTarget(t *testing.T) {
	seed := stats{rate: 100, p50: 100, p99: 200}
	tests := []struct {
		name string
		t    target
		s    stats
		want bool
	}{
		{"p50 under the bound is met", target{metric: "p50", atMost: true, bound: 0.65}, stats{p50: 60}, true},
		{"p50 over the bound is missed", target{metric: "p50", atMost: true, bound: 0.65}, stats{p50: 70}, false},
		{"throughput over the bound is met", target{metric: "req/s", bound: 1.5}, stats{rate: 160}, true},
		{"throughput under the bound is missed", target{metric: "req/s", bound: 1.5}, stats{rate: 140}, false},
		{"p99 at the bound is met", target{metric: "p99", atMost: true, bound: 1.2}, stats{p99: 240}, true},
		{"no measurement is missed", target{metric: "p50", atMost: true, bound: 1}, stats{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.t.ok(tt.t.ratio(tt.s, seed)); got != tt.want {
				t.Errorf("ok = %v, want %v", got, tt.want)
			}
		})
	}
}
