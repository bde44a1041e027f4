//go:build !js

package wranglerdev

import (
	"os"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	line := "4242 (workerd serve) S 4200 4100 4100 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 12 0 100 0 0\n"
	name, pgid, ticks, ok := parseStat(line)
	if !ok || name != "workerd serve" || pgid != 4100 || ticks != 325 {
		t.Errorf("parseStat = %q, %d, %d, %v; want \"workerd serve\", 4100, 325, true", name, pgid, ticks, ok)
	}
	if _, _, _, ok := parseStat("4242 (short) S 1"); ok {
		t.Error("parseStat accepted a truncated line")
	}
}

func TestGroupCPUCountsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	got, err := groupCPU(syscall.Getpgrp())
	if err != nil {
		t.Fatal(err)
	}
	if got.Worker != 0 || got.Proxy != 0 || got.Node <= 0 {
		t.Errorf("groupCPU(own group) = %+v; want only Node, above 0", got)
	}
}
