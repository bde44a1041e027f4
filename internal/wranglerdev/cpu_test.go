//go:build !js

package wranglerdev

import (
	"os"
	"syscall"
	"testing"
	"time"
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
	before, err := groupCPU(syscall.Getpgrp())
	if err != nil {
		t.Fatal(err)
	}
	// Busy for 100 ms of CPU, ten ticks of /proc's clock, so that this
	// process's own time shows whatever group it runs in.
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
	}
	after, err := groupCPU(syscall.Getpgrp())
	if err != nil {
		t.Fatal(err)
	}
	used := after.Sub(before)
	if used.Worker != 0 || used.Proxy != 0 || used.Node < 50*time.Millisecond {
		t.Errorf("groupCPU over 100 ms of busy work = %+v; want at least 50ms in Node only", used)
	}
}
