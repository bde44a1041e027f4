//go:build !js

package wranglerdev

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strconv"
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

// TestGroupCPUCountsAGroup starts a process in a group of its own that
// burns a known amount of CPU, measured by its own rusage, then waits; the
// group's reading must hold at least that much, all of it outside workerd.
// Nothing else runs in that group, so no other process's coming or going
// can move the reading, and no wall clock is involved.
func TestGroupCPUCountsAGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	const burn = 200 * time.Millisecond
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBurnsCPU$")
	cmd.Env = append(os.Environ(), "WRANGLERDEV_BURN_MS="+strconv.Itoa(int(burn/time.Millisecond)))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	// The helper prints a line once it has burnt its CPU.
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatalf("the helper did not report: %v", err)
	}
	used, err := groupCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in ticks of 10 ms.
	if used.Worker != 0 || used.Proxy != 0 || used.Node < burn-2*time.Second/clockTicks {
		t.Errorf("groupCPU of a group that burnt %v = %+v; want at least that in Node only", burn, used)
	}
}

// TestHelperBurnsCPU is the process TestGroupCPUCountsAGroup starts: it
// burns WRANGLERDEV_BURN_MS of its own CPU time, says so, and waits for
// stdin to close.
func TestHelperBurnsCPU(t *testing.T) {
	ms, err := strconv.Atoi(os.Getenv("WRANGLERDEV_BURN_MS"))
	if err != nil {
		t.Skip("a helper process for TestGroupCPUCountsAGroup")
	}
	var ru syscall.Rusage
	for x := uint64(1); ; x = x*6364136223846793005 + 1 {
		if x%(1<<16) == 0 {
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= time.Duration(ms)*time.Millisecond {
				break
			}
		}
	}
	os.Stdout.WriteString("burnt\n")
	io.Copy(io.Discard, os.Stdin)
}
