//go:build !js

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// panicMarker is internal/panichook's Marker, which exists in its tagged
// build only: a key holding it and a point's name panics there.
const panicMarker = "panic-hook-"

// panicOrigin is a page's origin the Worker allows (ALLOWED_ORIGINS).
const panicOrigin = "https://desk.example.com"

// panicLease is how long a claim lasts (PENDING_TTL_SECONDS as
// wrangler.toml sets it, and the least KV takes).
const panicLease = 60 * time.Second

// TestPanicsAreContained serves the Worker built with the panic hook
// (internal/panichook, -tags panichook) by the compiler that built the
// shipped one, in both modes, and panics a request at each of the hook's
// points: early (before any I/O), just after the claim, under the
// receipt cache's mutex and, in ledger mode, inside the Durable Object's
// claim, a synchronous call into Go from the object's entry. Standard Go recovers the panic; TinyGo traps, and
// the bridge answers what the program held and the entry starts a fresh
// one (workers/wasm_exec_entry.js). Either way, for each point:
//   - the request gets the project's 500 internal_error problem (a
//     recovered panic in the object fails its call: 503, as a storage
//     failure), and a request in flight beside it gets an answer, that
//     or its own;
//   - the Worker's next orders and their replays succeed;
//   - the trap or panic is logged as internal_error and counted as a
//     data point;
//   - the answer carries the CORS headers a page on an allowed origin
//     needs to read it;
//   - the objects the bridge keeps, and the Go instance's memory, come
//     back to where they were;
//   - the claim the panic left lasts its lease, and no longer, and every
//     request answered 500 succeeds once it is over.
//
// It also checks that the shipped module holds no hook, and that the
// hooked one does (so that the check can see).
func TestPanicsAreContained(t *testing.T) {
	requireWorker(t)
	t.Parallel() // its own Workers
	dir := panicHookWorker(t)
	for _, mode := range []string{"kv", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			w := startWorker(t, mode, wrappedOptions(wranglerdev.Options{Dir: dir, Vars: map[string]string{"ALLOWED_ORIGINS": panicOrigin}}))
			w.setting(t, `{"recordPoints": true}`)
			for i := range 3 {
				placeAndReplay(t, w, fmt.Sprintf("%s-warm-%d", newKey(t), i))
			}
			before := w.settledStats(t)
			compiler := before.Compiler
			var claimed time.Time
			var claimedKey string
			var answered500 []string // keys answered 500, retried once the lease is over
			points := []string{"early", "claimed", "locked"}
			if mode == "ledger" {
				points = append(points, "object")
			}
			for _, point := range points {
				key := newKey(t) + "-" + panicMarker + point
				if point == "claimed" {
					claimed, claimedKey = time.Now(), key
				}
				// A request in flight beside it, its body still being
				// sent, held by the Go program once it has entered it.
				besideKey := fmt.Sprintf("%s-beside-%s", newKey(t), point)
				entered := w.wrappedStats(t).IntoGo
				body, sending := io.Pipe()
				beside := make(chan response, 1)
				go func() { beside <- w.postFrom(t, besideKey, body) }()
				go sending.Write([]byte(validOrder[:10]))
				for until := time.Now().Add(30 * time.Second); w.wrappedStats(t).IntoGo == entered; time.Sleep(20 * time.Millisecond) {
					if time.Now().After(until) {
						t.Fatalf("the request beside the panic never entered the Go program")
					}
				}
				got := w.send(t, http.MethodPost, validOrder, "Idempotency-Key", key, "Content-Type", "application/json", "Origin", panicOrigin)
				// A page may read it: a trap's answer carries the CORS
				// headers the handler's would (workers.CORSTraps).
				if allow := got.header.Get("Access-Control-Allow-Origin"); allow != panicOrigin {
					t.Errorf("%s's panic, from an allowed origin: Access-Control-Allow-Origin %q, want %q", point, allow, panicOrigin)
				}
				if point == "object" && compiler == "go" {
					// The object's call fails, as a storage call may.
					wantStatus(t, "a request whose Durable Object call panicked", got, 503)
				} else {
					wantInternalError(t, point+"'s panic", got)
				}
				// A trap answers it 500 without the rest of its body, and
				// its connection may close: sending more would race that
				// (a broken pipe instead of the answer). A recovered panic
				// leaves it be, to finish once the rest comes.
				var b response
				if compiler == "tinygo" {
					b = <-beside
					sending.Close()
				} else {
					go func() { sending.Write([]byte(validOrder[10:])); sending.Close() }()
					b = <-beside
				}
				switch {
				case compiler == "tinygo":
					wantInternalError(t, "the request in flight beside "+point+"'s trap", b)
					answered500 = append(answered500, besideKey)
				case b.status != 201:
					t.Errorf("the request in flight beside %s's recovered panic: status %d, want 201: %s", point, b.status, b.body)
				}
				// The isolate's next requests succeed.
				placeAndReplay(t, w, fmt.Sprintf("%s-after-%s", newKey(t), point))
				if point == "claimed" {
					wantStatus(t, "a lookup of the key whose claim the panic left", w.lookup(t, key), 409)
				}
			}
			after := w.settledStats(t)
			t.Logf("%s build, %s mode, over %d panics: objects the bridge keeps %d → %d, linear memory %d → %d bytes, %d requests beside them answered 500",
				after.Compiler, mode, len(points), before.HeldObjects, after.HeldObjects, before.MemoryBytes, after.MemoryBytes, len(answered500))
			if after.HeldObjects != before.HeldObjects {
				t.Errorf("the objects the bridge keeps went from %d to %d over the panics", before.HeldObjects, after.HeldObjects)
			}
			// A trap leaves a fresh instance; a recovered panic, the same one.
			if after.MemoryBytes > before.MemoryBytes+1<<20 {
				t.Errorf("linear memory went from %d to %d bytes over the panics", before.MemoryBytes, after.MemoryBytes)
			}
			wantLoggedAndCounted(t, w, after.Compiler)

			// The claim the panic left frees its key when its lease ends.
			for {
				if got := w.lookup(t, claimedKey); got.status != 409 {
					break
				}
				if time.Since(claimed) > panicLease+15*time.Second {
					t.Fatalf("the claim the panic left still holds its key %v after it was made; its lease is %v", time.Since(claimed), panicLease)
				}
				time.Sleep(time.Second)
			}
			for _, key := range answered500 {
				if got := w.post(t, key, validOrder); got.status != 201 && got.status != 200 {
					t.Errorf("the retry of a request the trap answered 500, after the lease: status %d, want 201 or 200: %s", got.status, got.body)
				}
			}
		})
	}
}

// placeAndReplay places a new order under key and replays it.
func placeAndReplay(t *testing.T, w *target, key string) {
	t.Helper()
	first := w.post(t, key, validOrder)
	wantStatus(t, "a new order", first, 201)
	replay := w.post(t, key, validOrder)
	wantStatus(t, "its replay", replay, 200)
	if replay.body != first.body {
		t.Errorf("the replay's body %s differs from the order's %s", replay.body, first.body)
	}
}

// postFrom submits the order body reads under key, as it reads it, with
// no Content-Length. A failure fails t (from any goroutine) and returns
// the zero response.
func (w *target) postFrom(t *testing.T, key string, body io.Reader) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, w.URL()+"/orders", body)
	if err != nil {
		t.Error(err)
		return response{}
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Errorf("POST: %v", err)
		return response{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// wantInternalError fails t unless got is the project's 500 problem.
func wantInternalError(t *testing.T, what string, got response) {
	t.Helper()
	var p struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
	}
	if got.status != 500 || json.Unmarshal([]byte(got.body), &p) != nil || !strings.HasSuffix(p.Type, ":internal_error") || p.Status != 500 {
		t.Errorf("%s: status %d, body %s; want 500 with the internal_error problem", what, got.status, got.body)
	}
}

// wantLoggedAndCounted fails t unless the Worker logged each panic as
// internal_error, a trap under TinyGo, a recovered panic under standard
// Go, and wrote a data point for it.
func wantLoggedAndCounted(t *testing.T, w *target, compiler string) {
	t.Helper()
	cause := map[string]string{"tinygo": `"error":"trap: `, "go": `"error":"panic: `}[compiler]
	lines := regexp.MustCompile(`\{"outcome":"internal_error",[^\n]*`).FindAllString(w.Logs(), -1)
	logged := 0
	for _, l := range lines {
		if strings.Contains(l, cause) {
			logged++
		}
	}
	if logged < 3 {
		t.Errorf("%d internal_error lines with %s logged over 3 panics, want at least 3: %q", logged, cause, lines)
	}
	counted := 0
	for _, p := range w.points(t) {
		if len(p.Blobs) > 2 && p.Blobs[0] == "internal_error" && p.Blobs[2] == "500" {
			counted++
		}
	}
	if counted < 3 {
		t.Errorf("%d internal_error data points over 3 panics, want at least 3", counted)
	}
}

// panicHookWorker builds the Worker with the panic hook, by the compiler
// that built the shipped one, into a new folder laid out as the
// repository is (the entry, the bridge, the wrapped test entry, the
// config without its build step and static assets, node_modules), and
// returns it. It fails t if the shipped module holds the hook, or the
// hooked one does not.
func panicHookWorker(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("./build.sh")
	build.Dir = root
	build.Env = append(os.Environ(), "COMPILER="+builtBy(t), "BUILD_DIR="+filepath.Join(dir, "build"), "BUILD_TAGS=panichook", "EDGE_ORDERS_BUILT=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Worker with the panic hook: %v\n%s", err, out)
	}
	shipped, err := os.ReadFile(filepath.Join(root, "build", "edge-orders.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	hooked, err := os.ReadFile(filepath.Join(dir, "build", "edge-orders.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(shipped, []byte(panicMarker)) {
		t.Errorf("the shipped module build/edge-orders.wasm holds the panic hook (%q)", panicMarker)
	}
	if !bytes.Contains(hooked, []byte(panicMarker)) {
		t.Fatalf("the module built with -tags panichook holds no %q: the check for the shipped one cannot see", panicMarker)
	}
	for _, f := range []string{"worker.mjs", "workers/bridge.mjs", "test/wrapped/entry.mjs", "test/wrapped/wrap.mjs"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config, err := os.ReadFile(filepath.Join(root, "wrangler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	config = regexp.MustCompile(`(?m)^(\[build\]|command = |watch_dir = |\[assets\]|directory = |run_worker_first = ).*\n`).ReplaceAll(config, nil)
	if err := os.WriteFile(filepath.Join(dir, "wrangler.toml"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	modules, err := filepath.Abs(filepath.Join(root, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}
