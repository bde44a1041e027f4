//go:build !js

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHostileInput sends what a broken or malicious client might and checks
// each gets a clear 4xx, stores nothing, and leaves the Worker serving.
func TestHostileInput(t *testing.T) {
	shareWorkers(t)
	forEachMode(t, func(t *testing.T, w *target) {
		longest := strings.Repeat("k", 255)
		cases := []struct {
			name   string
			key    string
			body   string
			status int
			code   string
		}{
			{"key over 255 characters", longest + "k", validOrder, 400, "invalid_idempotency_key"},
			{"key with a tab", "tab\there", validOrder, 400, "invalid_idempotency_key"},
			{"key with non-ASCII bytes", "cl\xc3\xa9", validOrder, 400, "invalid_idempotency_key"},
			{"body over 64 KiB", "big", `{"symbol":"` + strings.Repeat("A", 64<<10) + `","side":"buy","quantity":1}`, 413, "body_too_large"},
			{"malformed JSON", "malformed", `{"symbol":"MSFT","side":"buy",`, 422, "invalid_order"},
			{"absurdly nested JSON", "nested", `{"symbol":"MSFT","side":"buy","quantity":1,"x":` + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + `}`, 422, "invalid_order"},
			{"binary garbage", "garbage", "\x00\xff\xfe{\x01", 422, "invalid_order"},
		}
		// The keys of the refused orders: none may leave a claim behind,
		// which one listing (a wrangler CLI run, seconds) checks for all.
		refused := map[string]string{}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				key := newKey(t) + c.key
				if c.status == 400 {
					key = c.key
				}
				wantProblem(t, w.post(t, key, c.body), c.status, c.code)
				if c.status != 400 {
					refused["pending:"+key] = c.name
				}
			})
		}
		if w.mode == "kv" {
			for _, k := range w.kvList(t, "pending:") {
				if name, ok := refused[k.Name]; ok {
					t.Errorf("%s: left a claim behind: %s", name, k.Name)
				}
			}
		}

		t.Run("chunked body over the limit without Content-Length", func(t *testing.T) {
			pr, pw := io.Pipe()
			go func() {
				chunk := strings.Repeat("A", 4096)
				pw.Write([]byte(`{"symbol":"`))
				for i := 0; i < 64; i++ {
					if _, err := pw.Write([]byte(chunk)); err != nil {
						break
					}
				}
				pw.Write([]byte(`","side":"buy","quantity":1}`))
				pw.Close()
			}()
			req, _ := http.NewRequest(http.MethodPost, w.URL(), pr)
			req.Header.Set("Idempotency-Key", newKey(t))
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			wantProblem(t, response{status: resp.StatusCode, header: resp.Header, body: string(b)}, 413, "body_too_large")
		})

		t.Run("a 255-character key works", func(t *testing.T) {
			if got := w.post(t, longest, validOrder); got.status != 201 {
				t.Fatalf("got %d %s, want 201", got.status, got.body)
			}
		})

		t.Run("the Worker keeps serving", func(t *testing.T) {
			for i := 0; i < 3; i++ {
				if got := w.post(t, fmt.Sprint(newKey(t), i), validOrder); got.status != 201 {
					t.Fatalf("got %d %s, want 201", got.status, got.body)
				}
			}
		})
	})
}
