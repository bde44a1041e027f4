//go:build !js

package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// omsControl serves the fake OMS's script and record over HTTP on
// loopback, for tests written in JavaScript: POST /script with
// {"symbol": ..., "steps": ["drop", "reject", ...]} sets what the symbol's
// next calls do (then accept), and GET /calls?symbol=... answers
// {"orderIds": [...], "accepted": [...]}: the order id of every call for
// the symbol, in order, and those of them the fake placed. It returns the
// server's base URL; the server stops with t.
func omsControl(t *testing.T, oms *fakeOMS) string {
	t.Helper()
	steps := map[string]step{}
	for s := accept; s <= gated; s++ {
		steps[[...]string{"accept", "reject", "failBefore", "failAfter", "hang", "drop", "gated"}[s]] = s
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /script", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Symbol string   `json:"symbol"`
			Steps  []string `json:"steps"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Symbol == "" {
			http.Error(w, "want {symbol, steps}", http.StatusBadRequest)
			return
		}
		var script []step
		for _, name := range req.Steps {
			s, ok := steps[name]
			if !ok {
				http.Error(w, "no step "+strconv.Quote(name), http.StatusBadRequest)
				return
			}
			script = append(script, s)
		}
		oms.script(req.Symbol, script...)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, r *http.Request) {
		ids := oms.orderIDs(r.URL.Query().Get("symbol"))
		accepted := []string{}
		for _, id := range ids {
			if oms.accepted(id) && !slices.Contains(accepted, id) {
				accepted = append(accepted, id)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string][]string{"orderIds": append([]string{}, ids...), "accepted": accepted})
	})
	return serveLoopback(t, mux)
}

// nodeBinary is the Node.js that package.json installs (22), or the one on
// PATH.
func nodeBinary(t *testing.T) string {
	t.Helper()
	if p, err := filepath.Abs(filepath.Join(root, "node_modules", ".bin", "node")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("no Node.js: run make tools")
	}
	return p
}

// tapCount reads "# name N" from node --test's TAP summary.
func tapCount(out, name string) int {
	m := regexp.MustCompile(`(?m)^# ` + name + ` (\d+)$`).FindStringSubmatch(out)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestJSClient runs the JavaScript client's own tests (clients/js, with
// Node.js's test runner) against the gateway Workers of both modes and the
// fake OMS: its unit tests, and its end-to-end tests (worker.test.js),
// which submit, retry and look up orders in the real Worker under wrangler
// dev, script the fake OMS through omsControl, and check there that each
// key reached the OMS with one order id. It holds the shared Workers
// (shareWorkers), as every test of theirs does.
func TestJSClient(t *testing.T) {
	shareWorkers(t)
	g := startGateway(t)
	control := omsControl(t, g.oms)
	node := nodeBinary(t)
	for _, w := range []*target{g.kv, g.ledger} {
		t.Run(w.mode, func(t *testing.T) {
			t.Parallel() // the two modes' runs wait mostly on the Workers
			cmd := exec.Command(node, "--test", "--test-reporter=tap")
			cmd.Dir = filepath.Join(root, "clients", "js")
			cmd.Env = append(os.Environ(),
				"EDGE_ORDERS_URL="+w.URL(),
				"EDGE_ORDERS_OMS_CONTROL="+control,
				"EDGE_ORDERS_MODE="+w.mode,
			)
			out, err := cmd.CombinedOutput()
			text := string(out)
			pass, fail, skipped := tapCount(text, "pass"), tapCount(text, "fail"), tapCount(text, "skipped")
			if err != nil || fail != 0 || pass <= 0 {
				t.Fatalf("node --test in clients/js: %v; %d passed, %d failed\n%s", err, pass, fail, text)
			}
			// With the Worker's address set, no end-to-end test may skip.
			if skipped != 0 || strings.Contains(text, "# SKIP") {
				t.Fatalf("node --test skipped tests with a Worker to test against\n%s", text)
			}
			if !strings.Contains(text, "against the Worker ("+w.mode+")") {
				t.Fatalf("node --test ran no end-to-end test of the %s Worker\n%s", w.mode, text)
			}
			t.Logf("node --test in clients/js against the %s Worker: %d passed", w.mode, pass)
		})
	}
}
