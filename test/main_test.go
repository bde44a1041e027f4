//go:build !js

// Package e2e, in the folder test/ as the design card names it, tests the
// compiled Worker end to end: the wasm that build.sh
// makes, running in workerd under `wrangler dev`, in both storage modes:
// KV (the top-level wrangler.toml) and the Durable Object ledger
// (--env ledger), each with its local state.
//
// The tests run when EDGE_ORDERS_E2E=1 (make test sets it) and skip otherwise,
// so a plain `go test ./...` stays fast and needs no Node.js.
package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/api/apitest"
	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// root is the repository, where wrangler.toml and node_modules live.
const root = ".."

// sharedWait is IN_PROGRESS_WAIT_MS as wrangler.toml sets it for both modes.
const sharedWait = 2 * time.Second

// target is one Worker under test: a wrangler dev process and the folder
// of its local state.
type target struct {
	// mode is "kv" or "ledger".
	mode  string
	srv   *wranglerdev.Server
	state string
}

// The Workers shared by the tests of this package, one per storage mode.
var kvWorker, ledgerWorker *target

func TestMain(m *testing.M) {
	if os.Getenv("EDGE_ORDERS_E2E") != "1" {
		os.Exit(m.Run()) // every test skips through forEachMode
	}
	flag.Parse()
	// A whole run starts every shared Worker at once, the gateway's and the
	// admin tests' beside these two, rather than each at its first test's
	// turn: the tests that share Workers run one after another, and their
	// starts would add up. A run of some tests (-run) starts what they use.
	var eager sync.WaitGroup
	if flag.Lookup("test.run").Value.String() == "" {
		eager.Go(func() {
			gatewayOnce.Do(initGateway)
			if gatewayErr == nil {
				adminOnce.Do(func() { initAdmin(gateway) })
			}
		})
	}
	var err error
	kvWorker, ledgerWorker, err = startShared()
	if err == nil && flag.Lookup("test.run").Value.String() == "" {
		eager.Go(func() { inspectKV(kvWorker.state) })
	}
	eager.Wait() // its error fails the tests that use them
	if err != nil {
		stopGateway(true)
		stopAdmin(true)
		stopKVInspectors()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stopGateway(code != 0)
	stopAdmin(code != 0)
	stopKVInspectors()
	for _, w := range []*target{kvWorker, ledgerWorker} {
		w.srv.Stop()
		if code != 0 {
			fmt.Fprintf(os.Stderr, "--- wrangler output, %s mode ---\n%s\n", w.mode, w.srv.Logs())
		}
		os.RemoveAll(w.state)
	}
	os.Exit(code)
}

// startShared starts the two shared Workers at once.
func startShared() (kvW, ledgerW *target, err error) {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, w := range []**target{&kvW, &ledgerW} {
		mode := []string{"kv", "ledger"}[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			*w, errs[i] = startTarget(mode, wranglerdev.Options{})
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			err = e
		}
	}
	return kvW, ledgerW, err
}

// startTarget serves the Worker in mode with fresh state (unless
// opts.StateDir names one).
func startTarget(mode string, opts wranglerdev.Options) (*target, error) {
	return startTargetFirst(mode, opts, 0)
}

// startTargetFirst is startTarget with the start's place in line: the
// higher first, when more Workers wait to start than may at once.
func startTargetFirst(mode string, opts wranglerdev.Options, first int) (*target, error) {
	if opts.StateDir == "" {
		dir, err := os.MkdirTemp("", "edge-orders-e2e-"+mode+"-")
		if err != nil {
			return nil, err
		}
		opts.StateDir = dir
	}
	if opts.Dir == "" {
		opts.Dir = root
	}
	if mode == "ledger" && opts.Environment == "" {
		opts.Environment = "ledger"
	}
	starts.acquire(first)
	srv, err := wranglerdev.Start(context.Background(), opts)
	starts.release()
	if err != nil {
		return nil, fmt.Errorf("%s mode: %w", mode, err)
	}
	return &target{mode: mode, srv: srv, state: opts.StateDir}, nil
}

// starts bounds the Workers starting at once: a start is seconds of CPU
// (wrangler, workerd), and the parallel tests would otherwise start a
// dozen together on two cores, past a start's time limit.
var starts = startLine{free: 4}

// startLine lets free starts go at once and the rest wait, the highest
// place in line first (in the order they came among equals).
type startLine struct {
	mu      sync.Mutex
	free    int
	waiting []startWaiter
}

type startWaiter struct {
	first int
	turn  chan struct{}
}

func (l *startLine) acquire(first int) {
	l.mu.Lock()
	if l.free > 0 {
		l.free--
		l.mu.Unlock()
		return
	}
	w := startWaiter{first: first, turn: make(chan struct{})}
	l.waiting = append(l.waiting, w)
	l.mu.Unlock()
	<-w.turn
}

func (l *startLine) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiting) == 0 {
		l.free++
		return
	}
	next := 0
	for i, w := range l.waiting {
		if w.first > l.waiting[next].first {
			next = i
		}
	}
	close(l.waiting[next].turn)
	l.waiting = slices.Delete(l.waiting, next, next+1)
}

// startsFirst are the tests that wait longest once their Workers are up
// (for a settler to give up, for leases, through rounds of requests): their
// Workers start before the others', so that they do not end the run last.
var startsFirst = map[string]int{
	"TestOpsPage": 2, "TestTheWorkerPagesOncePerUnresolvedOrderAndDeadLetter": 2, "TestPanicsAreContained": 2, "TestBridgeKeepsNothingPastItsRequest": 1, "TestFaultsNeverDuplicate": 1, "TestGatewayChaos": 1,
}

// startWorker serves the Worker in mode in its own wrangler dev, for tests
// that need another configuration than the shared one; it stops with t.
func startWorker(t *testing.T, mode string, opts wranglerdev.Options) *target {
	t.Helper()
	w, err := startTargetFirst(mode, opts, startsFirst[strings.Split(t.Name(), "/")[0]])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.srv.Stop()
		if t.Failed() {
			t.Logf("--- wrangler output ---\n%s", w.srv.Logs())
		}
	})
	return w
}

// forEachMode runs test as a subtest against each shared Worker, both at
// once, or skips unless the end-to-end run is on.
func forEachMode(t *testing.T, test func(t *testing.T, w *target)) {
	t.Helper()
	requireWorker(t)
	for _, w := range []*target{kvWorker, ledgerWorker} {
		t.Run(w.mode, func(t *testing.T) { t.Parallel(); test(t, w) })
	}
}

// sharedWorkers is held by each test that uses a Worker or the fake OMS
// that the package shares (kvWorker and ledgerWorker, startGateway's,
// startAdmin's): they count calls and log lines, and set faults, on them,
// so they run one at a time. They are parallel tests all the same, so
// that they run beside those with Workers of their own, which otherwise
// wait for every serial test to end.
var sharedWorkers sync.Mutex

// shareWorkers makes t a parallel test that holds sharedWorkers until it
// ends, or skips it unless the end-to-end run is on. The tests that must
// not run beside anything (their windows are timed) stay serial instead.
func shareWorkers(t *testing.T) {
	t.Helper()
	requireWorker(t)
	t.Parallel()
	holdSharedWorkers(t)
}

// holdSharedWorkers holds sharedWorkers until t ends: for a test of its
// own Workers that also uses a shared one, once its own have started.
func holdSharedWorkers(t *testing.T) {
	sharedWorkers.Lock()
	t.Cleanup(sharedWorkers.Unlock)
}

// requireWorker skips t unless the end-to-end run is on.
func requireWorker(t *testing.T) {
	t.Helper()
	if kvWorker == nil {
		t.Skip("end-to-end tests run with EDGE_ORDERS_E2E=1 (make test)")
	}
}

// URL is the Worker's base address.
func (w *target) URL() string { return w.srv.URL }

// Logs is everything the Worker's wrangler dev printed so far.
func (w *target) Logs() string { return w.srv.Logs() }

// response is what a test reads back from the Worker.
type response struct {
	status int
	header http.Header
	body   string
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// send makes one request to the Worker; header is name, value pairs. A
// transport failure fails t and returns the zero response. Every answer of
// the edge-orders Worker (not the JavaScript reference's) is checked
// against the OpenAPI document.
func (w *target) send(t *testing.T, method, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, w.URL()+"/orders", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		// Errorf, not Fatalf: send is called from many goroutines at once.
		t.Errorf("%s: %v", method, err)
		return response{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("%s: reading the response: %v", method, err)
		return response{}
	}
	if w.mode != "reference" {
		apitest.CheckResponse(t, req, resp.StatusCode, resp.Header, b)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// post submits body under key.
func (w *target) post(t *testing.T, key, body string) response {
	t.Helper()
	return w.send(t, http.MethodPost, body, "Idempotency-Key", key, "Content-Type", "application/json")
}

// lookup asks for key's receipt.
func (w *target) lookup(t *testing.T, key string) response {
	t.Helper()
	return w.send(t, http.MethodGet, "", "Idempotency-Key", key)
}

// newKey returns a key no other test uses: the test's name, less the
// commas a key may not hold outside quotes, and the time.
func newKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d", strings.NewReplacer("/", "-", ",", "").Replace(t.Name()), time.Now().UnixNano())
}

const validOrder = `{"symbol":"MSFT","side":"buy","quantity":100}`

// receipt is the 201 body.
type receipt struct {
	OrderID    string  `json:"orderId"`
	Status     string  `json:"status"`
	Symbol     string  `json:"symbol"`
	Side       string  `json:"side"`
	Quantity   float64 `json:"quantity"`
	AcceptedAt string  `json:"acceptedAt"`
}

// decodeReceipt decodes a receipt, failing t if body is none. It calls
// t.Fatalf, so only from the test's own goroutine: elsewhere, parseReceipt.
func decodeReceipt(t *testing.T, body string) receipt {
	t.Helper()
	r, err := parseReceipt(body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// parseReceipt decodes a receipt; one without an order id is an error.
func parseReceipt(body string) (receipt, error) {
	var r receipt
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.OrderID == "" {
		return r, fmt.Errorf("not a receipt: %q (%v)", body, err)
	}
	return r, nil
}

// kvInspector is a test/kvinspect Worker serving one state folder's ORDERS
// namespace over HTTP: the tests read and write KV through it in
// milliseconds, where each `wrangler kv key` command is seconds of CPU.
type kvInspector struct {
	once sync.Once
	srv  *wranglerdev.Server
	err  error
}

// kvInspectors are the kvInspectors by state folder, each started at its
// first use (TestMain starts the shared KV Worker's) and stopped by
// TestMain.
var kvInspectors sync.Map

// inspectKV returns the kvInspector of state, started once.
func inspectKV(state string) (*wranglerdev.Server, error) {
	v, _ := kvInspectors.LoadOrStore(state, &kvInspector{})
	in := v.(*kvInspector)
	in.once.Do(func() {
		starts.acquire(0)
		in.srv, in.err = wranglerdev.Start(context.Background(), wranglerdev.Options{Dir: root, Config: "test/kvinspect/wrangler.toml", StateDir: state})
		starts.release()
	})
	return in.srv, in.err
}

// stopKVInspectors stops every kvInspector started.
func stopKVInspectors() {
	kvInspectors.Range(func(_, v any) bool {
		if in := v.(*kvInspector); in.srv != nil {
			in.srv.Stop()
		}
		return true
	})
}

// kvCall makes one request of the kvInspector of w's state.
func (w *target) kvCall(t *testing.T, method, path string, body io.Reader) []byte {
	t.Helper()
	srv, err := inspectKV(w.state)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("kvinspect %s %s = %s %s (%v)", method, path, resp.Status, b, err)
	}
	return b
}

// kvPut writes straight into the Worker's local KV namespace (both modes
// bind ORDERS: the ledger reads it while migrating).
func (w *target) kvPut(t *testing.T, key, value string) {
	t.Helper()
	w.kvCall(t, http.MethodPut, "/put?key="+url.QueryEscape(key), strings.NewReader(value))
}

// storedKey is a key as kvinspect lists it (as `wrangler kv key list` does).
type storedKey struct {
	Name       string `json:"name"`
	Expiration int64  `json:"expiration"`
}

// kvList lists the keys of the Worker's local KV namespace that start with prefix.
func (w *target) kvList(t *testing.T, prefix string) []storedKey {
	t.Helper()
	out := w.kvCall(t, http.MethodGet, "/list?prefix="+url.QueryEscape(prefix), nil)
	var keys []storedKey
	if err := json.Unmarshal(out, &keys); err != nil {
		t.Fatalf("kv key list: %v\n%s", err, out)
	}
	return keys
}

// logQuiet is how long the Worker's log must stay unchanged before a count:
// a request a client abandoned still runs to its end in the Worker, and its
// line, a late second "created" say, comes well within this.
const logQuiet = time.Second

// sawLog reports whether the Worker's log holds s within wait: for a line
// that must come, whose relay from workerd through wrangler's inspector
// may lag on a loaded machine past a quiet second.
func (w *target) sawLog(s string, wait time.Duration) bool { return w.logAtLeast(s, 1, wait) >= 1 }

// logAtLeast waits until the log names s n times, or wait has passed, and
// returns how many times it does: for a check of at least n lines, which
// need not wait for the log to go quiet (countLog), only for the lines.
func (w *target) logAtLeast(s string, n int, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for {
		got := strings.Count(w.Logs(), s)
		if got >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// countLog counts the Worker's log lines containing s once the log has gone
// quiet (nothing new for logQuiet), or after wait at most, which fails t:
// a count taken at the first match could miss a later line.
func (w *target) countLog(t *testing.T, s string, wait time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(wait)
	last, since := w.Logs(), time.Now()
	for time.Since(since) < logQuiet {
		if time.Now().After(deadline) {
			t.Errorf("the log did not go quiet for %v within %v", logQuiet, wait)
			break
		}
		time.Sleep(50 * time.Millisecond)
		if now := w.Logs(); now != last {
			last, since = now, time.Now()
		}
	}
	return strings.Count(last, s)
}

// problemTypePrefix starts every problem's type (api/openapi.yaml, Problem).
const problemTypePrefix = "tag:edge-orders,2026:"

// problemBody is an RFC 9457 problem as the Worker writes it.
type problemBody struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	Error      string `json:"error"`
	RetryAfter *int   `json:"retryAfter"`
}

// wantProblem fails t unless got is the problem with status and code, served
// as application/problem+json, and returns it.
func wantProblem(t *testing.T, got response, status int, code string) problemBody {
	t.Helper()
	var p problemBody
	if err := json.Unmarshal([]byte(got.body), &p); err != nil {
		t.Fatalf("got %d %s: not a JSON problem: %v", got.status, got.body, err)
	}
	if got.status != status || p.Status != status || p.Error != code || p.Type != problemTypePrefix+code || p.Title == "" || p.Detail == "" {
		t.Fatalf("got %d %s, want a %d %s problem", got.status, got.body, status, code)
	}
	if ct := got.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json", ct)
	}
	return p
}

// TestStartLineLetsTheFirstGoFirst: with no start free, a release lets
// the waiter with the highest place in line go, and among equals the one
// that came first.
func TestStartLineLetsTheFirstGoFirst(t *testing.T) {
	l := startLine{free: 1}
	l.acquire(0) // the one start there is
	went := make(chan string, 3)
	for _, w := range []struct {
		name  string
		first int
	}{{"low", 0}, {"high", 2}, {"low too", 0}} {
		queued := len(l.waitingNow())
		go func() { l.acquire(w.first); went <- w.name }()
		for until := time.Now().Add(10 * time.Second); len(l.waitingNow()) == queued; time.Sleep(time.Millisecond) { // gate on the waiter's arrival
			if time.Now().After(until) {
				t.Fatalf("the %s start never queued", w.name)
			}
		}
	}
	var order []string
	for range 3 {
		l.release()
		order = append(order, <-went)
	}
	if want := []string{"high", "low", "low too"}; !slices.Equal(order, want) {
		t.Errorf("went in the order %v, want %v", order, want)
	}
}

// waitingNow is a copy of the line's waiters, for the test above.
func (l *startLine) waitingNow() []startWaiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.waiting)
}
