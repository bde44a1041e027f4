//go:build !js

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRetriesUnderClientTimeouts is the design note's own check: the same POST
// under one key, sent 10 times by a client that gives up early on most of
// them, places one order and replays the same response.
func TestRetriesUnderClientTimeouts(t *testing.T) {
	forEachMode(t, func(t *testing.T, w *target) {
		key := newKey(t)
		var bodies []string
		created, timedOut := 0, 0
		for attempt := 1; attempt <= 10; attempt++ {
			// The first attempts give up after a millisecond or two, long before the
			// Worker answers; the last ones wait, as a patient client would.
			timeout := time.Duration(attempt) * time.Millisecond
			if attempt > 7 {
				timeout = 10 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, w.URL(), strings.NewReader(validOrder))
			req.Header.Set("Idempotency-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
				timedOut++
				continue
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			if err != nil {
				timedOut++
				continue
			}
			switch resp.StatusCode {
			case 201:
				created++
				bodies = append(bodies, string(b))
			case 200:
				bodies = append(bodies, string(b))
			case 409: // the first attempt is still in flight
			default:
				t.Fatalf("attempt %d = %d %s", attempt, resp.StatusCode, b)
			}
		}
		if timedOut == 0 || len(bodies) == 0 {
			t.Fatalf("%d attempts timed out and %d answered; the check needs both", timedOut, len(bodies))
		}
		if created > 1 {
			t.Fatalf("%d attempts got a 201, want at most one", created)
		}
		for _, b := range bodies[1:] {
			if b != bodies[0] {
				t.Fatalf("responses differ:\n%s\n%s", bodies[0], b)
			}
		}
		// An attempt the client abandoned still ran to the end in the Worker, so
		// count the orders the Worker says it placed, not the 201s seen.
		placed := w.countLog(t, fmt.Sprintf(`"outcome":"created","key":%q`, key), 10*time.Second)
		if placed != 1 {
			t.Fatalf("the Worker logged %d orders placed for the key, want 1", placed)
		}
		if id := decodeReceipt(t, bodies[0]).OrderID; !strings.Contains(w.Logs(), id) {
			t.Fatalf("the replayed order %s is not the one the Worker logged", id)
		}
		t.Logf("10 attempts: %d timed out, %d answered, %d saw the 201", timedOut, len(bodies), created)
	})
}
