//go:build !js

// Package wranglerdev starts `wrangler dev` on a free loopback port with fresh
// local state, for end-to-end tests and benchmarks.
package wranglerdev

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options says which Worker to serve; zero fields take defaults.
type Options struct {
	// Dir is the folder holding the wrangler.toml to serve and node_modules.
	Dir string
	// Config is the wrangler config file, relative to Dir; default wrangler.toml.
	Config string
	// Script, if set, is served instead of the config's main (wrangler dev's
	// positional argument), relative to Dir.
	Script string
	// Environment is the wrangler environment (--env), such as "ledger";
	// empty for the top level.
	Environment string
	// StateDir keeps the local KV state; default a new temporary folder.
	StateDir string
	// Vars are extra --var NAME:VALUE overrides.
	Vars map[string]string
	// CompatibilityFlags are added to the config's (--compatibility-flags).
	CompatibilityFlags []string
	// EnvFile, if set, holds secrets such as API_TOKENS as .dev.vars
	// would, NAME=value lines. It is passed as --env-file, which wrangler
	// reads for the names a config declares only (its vars and [secrets]
	// required), and each of its lines as a --var too, so that the others
	// (ADMIN_TOKENS, OMS_TOKEN) reach the Worker as well.
	EnvFile string
	// Registry is the dev registry folder through which wrangler dev
	// processes bind each other's Workers (script_name); default a folder
	// of this server's own, so that unrelated servers never meet.
	Registry string
	// Env is added to wrangler's environment.
	Env []string
	// StartTimeout bounds the wait for the first answer; default 90 s.
	StartTimeout time.Duration
}

// Server is a running `wrangler dev`.
type Server struct {
	// URL is the Worker's base address, http://127.0.0.1:PORT.
	URL string
	// Inspector is the address of wrangler's inspector proxy,
	// http://127.0.0.1:PORT: its /json lists the Worker's V8 inspector
	// (package inspector profiles through it).
	Inspector string

	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
	err  error
}

// Start runs `wrangler dev` and waits until the Worker answers HTTP. A
// start that lost a port to another process is made again on fresh ports.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Config == "" {
		opts.Config = "wrangler.toml"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	if opts.StateDir == "" {
		dir, err := os.MkdirTemp("", "wranglerdev-state-")
		if err != nil {
			return nil, err
		}
		opts.StateDir = dir
	}
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, opts)
		if err == nil || attempt == startAttempts || !errors.Is(err, errPortTaken) {
			return s, err
		}
	}
}

// startAttempts bounds the starts Start makes when a port is taken: besides
// the two ports it chooses, wrangler and workerd choose some of their own
// (the dev registry's direct sockets), and another process starting at the
// same moment may bind one between its choice and its use.
const startAttempts = 3

// errPortTaken is a start that lost a port to another process.
var errPortTaken = errors.New("wranglerdev: a port was taken by another process")

// start makes one attempt at Start, on fresh ports.
func start(ctx context.Context, opts Options) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	inspector, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"dev"}
	if opts.Script != "" {
		args = append(args, opts.Script)
	}
	args = append(args, "--config", opts.Config,
		"--ip", "127.0.0.1", "--port", fmt.Sprint(port), "--inspector-port", fmt.Sprint(inspector),
		"--persist-to", opts.StateDir, "--show-interactive-dev-session=false",
		// GET /__scheduled runs the Worker's Cron Trigger, as the tests of
		// the settler's sweep need.
		"--test-scheduled")
	if opts.Environment != "" {
		args = append(args, "--env", opts.Environment)
	}
	vars, err := localVars(opts)
	if err != nil {
		return nil, err
	}
	if opts.EnvFile != "" {
		args = append(args, "--env-file", opts.EnvFile)
	}
	for name, value := range vars {
		args = append(args, "--var", name+":"+value)
	}
	for _, flag := range opts.CompatibilityFlags {
		args = append(args, "--compatibility-flags", flag)
	}
	cmd, err := Command(opts.Dir, args...)
	if err != nil {
		return nil, err
	}
	if opts.Registry == "" {
		opts.Registry = filepath.Join(opts.StateDir, "registry")
	}
	cmd.Env = append(cmd.Env, "WRANGLER_REGISTRY_PATH="+opts.Registry)
	if vars[TokensVar] == "" {
		// Said empty (none, to the Worker), so that wrangler, which reads
		// a [secrets] name from the environment too, does not warn that
		// it is missing.
		cmd.Env = append(cmd.Env, TokensVar+"=")
	}
	cmd.Env = append(cmd.Env, opts.Env...)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Inspector: fmt.Sprintf("http://127.0.0.1:%d", inspector), cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx, opts.StartTimeout); err != nil {
		s.Stop()
		if strings.Contains(s.Logs(), "Address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, fmt.Errorf("%w\n--- wrangler output ---\n%s", err, s.Logs())
	}
	return s, nil
}

// OpenAccessVar and TokensVar are the Worker's settings that decide who
// may place orders (package config, which this package does not import).
const (
	OpenAccessVar = "OPEN_ACCESS"
	TokensVar     = "API_TOKENS"
)

// localVars is what Start passes as --var: the env file's lines, then
// opts.Vars over them, and OPEN_ACCESS "true" unless either gives API_TOKENS
// or OPEN_ACCESS. A served Worker without tokens runs open because its
// harness says so, as `make dev` does, never because its host is loopback.
func localVars(opts Options) (map[string]string, error) {
	vars := map[string]string{}
	if opts.EnvFile != "" {
		b, err := os.ReadFile(opts.EnvFile)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			name, value, ok := strings.Cut(line, "=")
			if name = strings.TrimSpace(name); ok && name != "" && !strings.HasPrefix(name, "#") {
				vars[name] = strings.TrimSpace(value)
			}
		}
	}
	for name, value := range opts.Vars {
		vars[name] = value
	}
	if vars[TokensVar] == "" && vars[OpenAccessVar] == "" {
		vars[OpenAccessVar] = "true"
	}
	return vars, nil
}

// Command returns the wrangler CLI installed in dir's node_modules, set to
// run in dir on the Node.js the project installs, offline and without colour.
func Command(dir string, args ...string) (*exec.Cmd, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "wrangler")); err != nil {
		return nil, fmt.Errorf("wranglerdev: wrangler is not installed in %s (run make): %w", dir, err)
	}
	cmd := exec.Command(filepath.Join(bin, "wrangler"), args...)
	cmd.Dir = dir
	// node_modules/.bin first: wrangler runs on the Node.js that the project installs.
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"WRANGLER_SEND_METRICS=false", "CI=true", "NO_COLOR=1",
		// No Request.cf sample from workers.cloudflare.com, which an offline
		// start prints a stack trace for: the Worker reads no cf.
		"CLOUDFLARE_CF_FETCH_ENABLED=false")
	return cmd, nil
}

// waitReady polls until the Worker answers any HTTP status.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			// Something answers on the port: make sure it is this server,
			// not another that took the port first.
			if strings.Contains(s.Logs(), "Ready on "+s.URL) {
				return nil
			}
			return fmt.Errorf("%w: %s answers, but this wrangler dev does not say it serves there", errPortTaken, s.URL)
		}
		select {
		case <-s.done:
			return fmt.Errorf("wranglerdev: wrangler exited before serving: %v", s.err)
		case <-ctx.Done():
			return errors.New("wranglerdev: wrangler did not serve within " + timeout.String())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Logs returns everything wrangler has printed so far, the Worker's console
// output included.
func (s *Server) Logs() string { return s.logs.String() }

// Stop ends wrangler and the workerd it started.
func (s *Server) Stop() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// handedOut holds the ports freePort gave this process: the kernel may
// hand a port it just freed to the next listener, and two servers started
// at once must not both be given it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a loopback port free now and not handed out before.
func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("wranglerdev: no free port not handed out already")
}

// syncBuffer is a bytes.Buffer safe for a writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// CPUTime is the processor time used by a wrangler dev's processes.
type CPUTime struct {
	// Worker is the workerd that runs the Worker (and its local storage).
	Worker time.Duration
	// Proxy is wrangler's own workerd, in front of it: its HTTP proxy and
	// the inspector proxy that relays every console call to Node.js.
	Proxy time.Duration
	// Node is wrangler itself, which prints the Worker's log lines.
	Node time.Duration
}

// Sub returns t - u, field by field.
func (t CPUTime) Sub(u CPUTime) CPUTime {
	return CPUTime{Worker: t.Worker - u.Worker, Proxy: t.Proxy - u.Proxy, Node: t.Node - u.Node}
}

// Add returns t + u, field by field.
func (t CPUTime) Add(u CPUTime) CPUTime {
	return CPUTime{Worker: t.Worker + u.Worker, Proxy: t.Proxy + u.Proxy, Node: t.Node + u.Node}
}

// Total is the time of all the processes.
func (t CPUTime) Total() time.Duration { return t.Worker + t.Proxy + t.Node }

// CPU returns the processor time used so far by the server's processes. It
// reads /proc, so it works on Linux only.
func (s *Server) CPU() (CPUTime, error) {
	return groupCPU(s.cmd.Process.Pid)
}

// clockTicks is the unit of /proc/PID/stat's times (USER_HZ), 100 on Linux.
const clockTicks = 100

// groupCPU sums the processor time of the processes in group pgid. The
// workerd that runs the Worker is the one started with an inspector
// address, which wrangler's inspector proxy connects to.
func groupCPU(pgid int) (CPUTime, error) {
	var t CPUTime
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return t, err
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue // not a process
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		name, group, ticks, ok := parseStat(string(stat))
		if !ok || group != pgid {
			continue
		}
		d := time.Duration(ticks) * time.Second / clockTicks
		switch {
		case name != "workerd":
			t.Node += d
		case runsWorker(e.Name()):
			t.Worker += d
		default:
			t.Proxy += d
		}
	}
	return t, nil
}

func runsWorker(pid string) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	return err == nil && bytes.Contains(cmdline, []byte("--inspector-addr"))
}

// parseStat reads a /proc/PID/stat line: the command name, the process
// group and utime+stime in clock ticks. The name is in parentheses and may
// hold spaces, so fields are counted from its closing parenthesis.
func parseStat(line string) (name string, pgid int, ticks int64, ok bool) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return "", 0, 0, false
	}
	name = line[open+1 : end]
	// After ") ": state(3) ppid(4) pgrp(5) ... utime(14) stime(15).
	f := strings.Fields(line[end+1:])
	if len(f) < 13 {
		return "", 0, 0, false
	}
	pgid, err1 := strconv.Atoi(f[2])
	utime, err2 := strconv.ParseInt(f[11], 10, 64)
	stime, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return "", 0, 0, false
	}
	return name, pgid, utime + stime, true
}
