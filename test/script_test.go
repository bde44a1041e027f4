//go:build !js

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSubmitOrderScript runs submit-order.sh against the Worker, and
// against servers that break the contract, which it must reject.
func TestSubmitOrderScript(t *testing.T) {
	shareWorkers(t)
	requireWorker(t)

	forEachMode(t, func(t *testing.T, w *target) {
		out, err := exec.Command("bash", "../submit-order.sh", w.URL()).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "OK:") {
			t.Fatalf("submit-order.sh: %v\n%s", err, out)
		}
	})

	// Each server answers the first POST with a 201 and breaks one rule on the retry.
	broken := map[string]func(w http.ResponseWriter, n int64){
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
		"a replay with another body": func(w http.ResponseWriter, n int64) {
			if n > 1 {
				w.Header().Set("Idempotent-Replay", "true")
				w.WriteHeader(200)
			} else {
				w.WriteHeader(201)
			}
			fmt.Fprintf(w, `{"orderId":"%d"}`, n)
		},
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
