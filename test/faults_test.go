//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault injection, short enough for every make test; `make chaos` runs it
// longer through the environment variables below.
const (
	faultKeys      = 16
	faultBurst     = 4
	faultRetryWait = 50 * time.Millisecond
	// faultPatience is how long a key's retries go on: past the claim lease
	// (PENDING_TTL_SECONDS, 60), since a claim whose answer and release were
	// both lost blocks its key until the lease ends, and no longer.
	faultPatience = 75 * time.Second
)

// chaosSetting reads an integer or float knob of `make chaos`, or def.
func chaosSetting(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// wrappedStats is what test/wrapped's stats path answers.
type wrappedStats struct {
	Entered           int `json:"entered"`
	Calls             int `json:"calls"`
	FaultsBefore      int `json:"faultsBefore"`
	FaultsAfter       int `json:"faultsAfter"`
	Disconnects       int `json:"disconnects"`
	CancelledRequests int `json:"cancelledRequests"`
	SettleSends       int `json:"settleSends"`
	// FailedMessages are the queue messages failed by failQueue.
	FailedMessages int   `json:"failedMessages"`
	MemoryBytes    int64 `json:"memoryBytes"`
	// HeapBytes is what the Go instance's heap holds live after a
	// collection.
	HeapBytes   int64 `json:"heapBytes"`
	GoValues    int   `json:"goValues"`
	HeldObjects int   `json:"heldObjects"`
	IntoGo      int   `json:"intoGo"`
	OutOfGo     int   `json:"outOfGo"`
	// BridgeCalls are the calls out of Go into bridge.mjs, by name.
	BridgeCalls map[string]int `json:"bridgeCalls"`
	// DataPoints are the points written to METRICS.
	DataPoints int `json:"dataPoints"`
	// Compiler built the Worker: "go" or "tinygo".
	Compiler string `json:"compiler"`
}

// setFaultRate changes the share of storage calls that fail, as
// WRAP_FAULT_RATE sets it at the start.
func (w *target) setFaultRate(t *testing.T, rate float64) {
	t.Helper()
	resp, err := httpClient.Post(w.URL()+"/__wrapped/settings", "application/json", strings.NewReader(fmt.Sprintf(`{"faultRate":%v}`, rate)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("setting the fault rate: %s", resp.Status)
	}
}

// waitEntered waits until n binding calls have started since before, as
// a gate on a request's progress through storage.
func (w *target) waitEntered(t *testing.T, before wrappedStats, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for w.wrappedStats(t).Entered < before.Entered+n {
		if time.Now().After(deadline) {
			t.Fatalf("%d binding calls did not start within 20 s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (w *target) wrappedStats(t *testing.T) wrappedStats {
	t.Helper()
	resp, err := httpClient.Get(w.URL() + "/__wrapped/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s wrappedStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFaultsNeverDuplicate makes a share of storage calls fail, half before
// the call and half after it took effect, and drives every key with a burst
// of concurrent requests and then retries until a 2xx, as clients do. Every
// key must end with exactly one order, every 2xx for a key must be the same
// body, and every failure must be a retryable 409 or 503: never another 5xx,
// never a receipt that was not stored.
func TestFaultsNeverDuplicate(t *testing.T) {
	requireWorker(t)
	// Mostly waiting (a KV claim whose release failed blocks its key for
	// the 60 s lease): run beside the other chaos test, each mode at once.
	t.Parallel()
	rate := chaosSetting("EDGE_ORDERS_FAULT_RATE", "0.2")
	keys, _ := strconv.Atoi(chaosSetting("EDGE_ORDERS_FAULT_KEYS", strconv.Itoa(faultKeys)))
	for _, mode := range []string{"kv", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			w := startWrapped(t, mode, map[string]string{"WRAP_FAULT_RATE": rate})
			failures := map[int]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			// drive sends key k's burst and retries, at most 16 keys at
			// once: a key whose claim's release failed waits out the lease,
			// and the others go on beside it.
			sem := make(chan struct{}, 16)
			drive := func(k int) {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					key := fmt.Sprintf("%s-%d", newKey(t), k)
					var answers []response
					var burst sync.WaitGroup
					got := make([]response, faultBurst)
					for i := range got {
						burst.Add(1)
						go func() { defer burst.Done(); got[i] = w.post(t, key, validOrder) }()
					}
					burst.Wait()
					answers = append(answers, got...)
					giveUp := time.Now().Add(faultPatience)
					for !has2xx(answers) {
						if time.Now().After(giveUp) {
							t.Errorf("key %d: no 2xx in %v: %v", k, faultPatience, statuses(answers))
							return
						}
						time.Sleep(faultRetryWait)
						answers = append(answers, w.post(t, key, validOrder))
					}
					// A lookup, retried likewise, must find the one receipt.
					// A key whose receipt was not stored (over the ledger,
					// a commit after the 2xx that failed; over KV, a 503)
					// is stored by a retry, as the lookup's outcome_unknown
					// says, with the same bytes, or by the ledger's alarm.
					for {
						l := w.lookup(t, key)
						if l.status == 200 {
							answers = append(answers, l)
							break
						}
						if time.Now().After(giveUp) || (l.status != 503 && l.status != 409) {
							t.Errorf("key %d: lookup = %d %s", k, l.status, l.body)
							break
						}
						if strings.Contains(l.body, `"error":"outcome_unknown"`) {
							answers = append(answers, w.post(t, key, validOrder))
						}
						time.Sleep(faultRetryWait)
					}
					orders, bodies := map[string]bool{}, map[string]bool{}
					for _, a := range answers {
						switch {
						case a.status == 201 || a.status == 200:
							r, err := parseReceipt(a.body)
							if err != nil {
								t.Errorf("key %d: %v", k, err)
								continue
							}
							orders[r.OrderID] = true
							bodies[a.body] = true
						case a.status == 409 || a.status == 503:
							mu.Lock()
							failures[a.status]++
							mu.Unlock()
						default:
							t.Errorf("key %d: %d %s, want only 2xx, 409 or 503", k, a.status, a.body)
						}
					}
					if len(orders) != 1 || len(bodies) != 1 {
						t.Errorf("key %d: %d order ids and %d distinct bodies, want one of each: %v", k, len(orders), len(bodies), statuses(answers))
					}
				}()
			}
			for k := range keys {
				drive(k)
			}
			wg.Wait()
			// A few ledger keys make few calls: more keys are driven until
			// both kinds of fault have been injected, up to 4 times as many.
			bothKinds := func() bool { s := w.wrappedStats(t); return s.FaultsBefore > 0 && s.FaultsAfter > 0 }
			for k := keys; k < 4*keys && !bothKinds(); k += 4 {
				for j := k; j < k+4; j++ {
					drive(j)
				}
				wg.Wait()
			}
			s := w.wrappedStats(t)
			if s.FaultsBefore == 0 || s.FaultsAfter == 0 {
				t.Fatalf("faults injected: %d before, %d after, in %d calls; the check needs both", s.FaultsBefore, s.FaultsAfter, s.Calls)
			}
			t.Logf("%s: %d keys, fault rate %s: %d calls, %d faults before and %d after; answers 409: %d, 503: %d",
				mode, keys, rate, s.Calls, s.FaultsBefore, s.FaultsAfter, failures[409], failures[503])
		})
	}
}

func has2xx(rs []response) bool {
	for _, r := range rs {
		if r.status == http.StatusOK || r.status == http.StatusCreated {
			return true
		}
	}
	return false
}

func statuses(rs []response) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.status
	}
	return out
}
