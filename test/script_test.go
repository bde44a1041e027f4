//go:build !js

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSubmitOrderScript runs submit-order.sh, through make smoke, against
// the Worker, and against servers that break the contract, which it must
// reject: a second order, a replay or lookup without its header or with
// another body.
func TestSubmitOrderScript(t *testing.T) {
	shareWorkers(t)
	requireWorker(t)

	forEachMode(t, func(t *testing.T, w *target) {
		// make smoke is the check for a deployed Worker: this script.
		smoke := exec.Command("make", "-s", "smoke", "URL="+w.URL())
		smoke.Dir = root
		out, err := smoke.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "OK:") {
			t.Fatalf("make smoke: %v\n%s", err, out)
		}
		// Sent bare, this key would be a list, which the Worker refuses.
		cmd := exec.Command("bash", "../submit-order.sh", w.URL())
		cmd.Env = append(os.Environ(), "IDEMPOTENCY_KEY="+`"q",`+newKey(t))
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "OK:") {
			t.Fatalf("submit-order.sh with a key that needs quoting: %v\n%s", err, out)
		}
	})

	// Each server answers the first POST with a 201 and breaks one rule on
	// the retry (n 2) or the lookup (n 3).
	broken := map[string]func(w http.ResponseWriter, n int64){
		"a lookup that finds nothing": func(w http.ResponseWriter, n int64) {
			switch n {
			case 1:
				w.WriteHeader(201)
			case 2:
				w.Header().Set("Idempotent-Replay", "true")
				w.WriteHeader(200)
			default:
				w.WriteHeader(404)
			}
			fmt.Fprint(w, `{"orderId":"1"}`)
		},
		"a lookup with another body": replaying(func(n int64) int64 { return n/3 + 1 }),
		"a second order on retry": func(w http.ResponseWriter, n int64) {
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"orderId":"%d"}`, n)
		},
		"a replay without the header": func(w http.ResponseWriter, n int64) {
			if n > 1 {
				w.WriteHeader(200)
			} else {
				w.WriteHeader(201)
			}
			fmt.Fprint(w, `{"orderId":"1"}`)
		},
		"a replay with another body": replaying(func(n int64) int64 { return n }),
	}
	for name, answer := range broken {
		t.Run("fails against "+name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				answer(w, calls.Add(1))
			}))
			defer srv.Close()
			out, err := exec.Command("bash", "../submit-order.sh", srv.URL).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "FAIL:") {
				t.Fatalf("submit-order.sh passed a broken server: %v\n%s", err, out)
			}
		})
	}
}

// replaying answers the first call 201 and every later one a 200 replay,
// each with the orderId that id gives the call's number.
func replaying(id func(n int64) int64) func(w http.ResponseWriter, n int64) {
	return func(w http.ResponseWriter, n int64) {
		if n > 1 {
			w.Header().Set("Idempotent-Replay", "true")
			w.WriteHeader(200)
		} else {
			w.WriteHeader(201)
		}
		fmt.Fprintf(w, `{"orderId":"%d"}`, id(n))
	}
}

// TestSubmitOrderScriptSendsTheKeyAsItsString checks, without a Worker,
// that submit-order.sh sends its key as the Structured Field string that
// names exactly it, and refuses a key no header can carry.
func TestSubmitOrderScriptSendsTheKeyAsItsString(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	tests := []struct{ name, key, want string }{
		{"a plain key is quoted", "order-42", `"order-42"`},
		{"quotes and backslashes are escaped", `a"b\c`, `"a\"b\\c"`},
		{"a comma stays in the one key", "a,b", `"a,b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got atomic.Value
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Store(r.Header.Get("Idempotency-Key"))
				w.WriteHeader(201)
			}))
			defer srv.Close()
			cmd := exec.Command("bash", "../submit-order.sh", srv.URL)
			cmd.Env = append(os.Environ(), "IDEMPOTENCY_KEY="+tc.key)
			out, _ := cmd.CombinedOutput()
			if got, _ := got.Load().(string); got != tc.want {
				t.Errorf("Idempotency-Key = %s, want %s\n%s", got, tc.want, out)
			}
		})
	}
	t.Run("a key that is not printable ASCII is refused", func(t *testing.T) {
		cmd := exec.Command("bash", "../submit-order.sh", "http://127.0.0.1:9")
		cmd.Env = append(os.Environ(), "IDEMPOTENCY_KEY=caf\u00e9")
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "printable ASCII") {
			t.Errorf("submit-order.sh = %v, want a refusal\n%s", err, out)
		}
	})
}

// TestMakeDevRunsOpenBySayingSo runs tools/dev.sh (make dev) in print mode
// over several .dev.vars: without API_TOKENS or OPEN_ACCESS there, it
// passes OPEN_ACCESS=true; a token list goes to wrangler in a file, never
// on the command line; every other line is passed as a --var, since
// wrangler reads .dev.vars for declared names only.
func TestMakeDevRunsOpenBySayingSo(t *testing.T) {
	const token = "desk-a:0123456789abcdef0123456789abcdef"
	tests := []struct {
		name, devVars string
		want, not     []string
	}{
		{"without .dev.vars it runs open", "", []string{"--var\nOPEN_ACCESS:true\n", "--env-file\n"}, nil},
		{"API_TOKENS turns it off", "API_TOKENS=" + token + "\n", []string{"--env-file\n"}, []string{"OPEN_ACCESS", token}},
		{"an OPEN_ACCESS of its own is kept", "OPEN_ACCESS=false\n", []string{"--var\nOPEN_ACCESS:false\n"}, []string{"OPEN_ACCESS:true"}},
		{"other lines are passed on", "# local\nOMS_URL=\"http://127.0.0.1:9000/orders\"\nADMIN_TOKENS=ops:fedcba9876543210fedcba\n",
			[]string{"--var\nOMS_URL:http://127.0.0.1:9000/orders\n", "--var\nADMIN_TOKENS:ops:fedcba9876543210fedcba\n", "--var\nOPEN_ACCESS:true\n"}, nil},
	}
	script, err := filepath.Abs(filepath.Join(root, "tools", "dev.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tc.devVars != "" {
				if err := os.WriteFile(filepath.Join(dir, ".dev.vars"), []byte(tc.devVars), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("bash", script, "--port", "8787")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "DEV_SH_PRINT=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("tools/dev.sh: %v\n%s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("command lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(string(out), n) {
					t.Errorf("command has %q:\n%s", n, out)
				}
			}
		})
	}
}
