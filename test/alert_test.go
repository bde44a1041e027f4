//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// startOwnFakeOMS starts a fake OMS of t's own, stopped as t ends.
func startOwnFakeOMS(t *testing.T) *fakeOMS {
	t.Helper()
	oms, err := startFakeOMS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oms.stop)
	return oms
}

// giveUpVars are the vars of a Worker that calls oms and whose settler
// gives up soonest: SETTLE_MAX_AGE_SECONDS at its least, 60 s.
func giveUpVars(oms *fakeOMS) map[string]string {
	return map[string]string{
		"OMS_URL": oms.URL, "OMS_TOKEN": omsToken, "OMS_TIMEOUT_MS": fmt.Sprint(omsTimeout.Milliseconds()),
		"SETTLE_MAX_AGE_SECONDS": "60",
		// wrangler dev's KV reads exactly: the give-up's check need not
		// wait out Cloudflare's minute.
		"KV_READ_LAG_SECONDS": "5",
	}
}

// pagerRoutingKey is the stand-in pager's integration key.
const pagerRoutingKey = "R0UT1NGKEY0123456789abcdef0pager"

// standInPager takes PagerDuty Events API v2 triggers on loopback. It
// refuses the first event of each dedup_key with a 503, as a pager that is
// down does, and takes every later one (202), so that each page the
// Worker owes must be sent again to arrive.
type standInPager struct {
	URL string

	mu     sync.Mutex
	events []pagerEvent
}

// pagerEvent is one event the stand-in received.
type pagerEvent struct {
	Status      int    `json:"-"`
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	DedupKey    string `json:"dedup_key"`
	Payload     struct {
		Summary  string `json:"summary"`
		Severity string `json:"severity"`
		Class    string `json:"class"`
		Details  struct {
			Key     string `json:"idempotency_key"`
			OrderID string `json:"order_id"`
		} `json:"custom_details"`
	} `json:"payload"`
}

func startPager(t *testing.T) *standInPager {
	p := &standInPager{}
	mux := http.NewServeMux()
	// The path's token stands for the secret a webhook URL may carry.
	mux.HandleFunc("POST /hooks/s3cr3t-path-token/enqueue", func(w http.ResponseWriter, r *http.Request) {
		var e pagerEvent
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &e) != nil || e.RoutingKey != pagerRoutingKey || e.EventAction != "trigger" || e.DedupKey == "" {
			http.Error(w, `{"status":"invalid event"}`, http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		e.Status = http.StatusAccepted
		if !slices.ContainsFunc(p.events, func(seen pagerEvent) bool { return seen.DedupKey == e.DedupKey }) {
			e.Status = http.StatusServiceUnavailable
		}
		p.events = append(p.events, e)
		p.mu.Unlock()
		w.WriteHeader(e.Status)
		fmt.Fprintf(w, `{"status":"success","message":"Event processed","dedup_key":%q}`, e.DedupKey)
	})
	p.URL = serveLoopback(t, mux) + "/hooks/s3cr3t-path-token/enqueue"
	return p
}

// of returns the events received for orderID, in order.
func (p *standInPager) of(orderID string) []pagerEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	var got []pagerEvent
	for _, e := range p.events {
		if e.Payload.Details.OrderID == orderID {
			got = append(got, e)
		}
	}
	return got
}

// waitTaken waits until the pager took an event for orderID.
func (p *standInPager) waitTaken(t *testing.T, orderID string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !slices.ContainsFunc(p.of(orderID), func(e pagerEvent) bool { return e.Status == http.StatusAccepted }) {
		if time.Now().After(deadline) {
			t.Fatalf("the pager took no event for order %s within %v; it got %+v", orderID, within, p.of(orderID))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// wantPagedOnce fails t unless orderID's events are one refused and one
// taken, of class kind, naming key under the order's own dedup_key.
func wantPagedOnce(t *testing.T, p *standInPager, orderID, kind, key string) {
	t.Helper()
	got := p.of(orderID)
	if len(got) != 2 || got[0].Status != http.StatusServiceUnavailable || got[1].Status != http.StatusAccepted {
		t.Fatalf("events for order %s: %+v; want one refused, then one taken", orderID, got)
	}
	for _, e := range got {
		if e.DedupKey != "edge-orders/order/"+orderID || e.Payload.Class != kind || e.Payload.Details.Key != key {
			t.Errorf("event %+v; want dedup_key edge-orders/order/%s, class %s, key %s", e, orderID, kind, key)
		}
	}
}

// uncolored is line without the terminal colours wrangler writes even
// under NO_COLOR.
func uncolored(line string) string {
	return regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(line, "")
}

// waitLogged waits until w's log has a line with every one of parts.
func waitLogged(t *testing.T, w *target, within time.Duration, parts ...string) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, line := range strings.Split(w.Logs(), "\n") {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q within %v", parts, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestTheWorkerPagesOncePerUnresolvedOrderAndDeadLetter runs the Worker of
// each mode with ALERT_WEBHOOK_URL and ALERT_ROUTING_KEY set (as secrets)
// against a stand-in for PagerDuty that refuses each order's first event.
// An order whose every OMS answer is lost becomes unresolved once
// SETTLE_MAX_AGE_SECONDS (60 s, the least) passed: the Worker pages, is
// refused, pages again, and the key is unresolved only then; one page per
// order arrives. In KV mode a settle message that keeps failing (the test
// entry fails it before the Worker sees it) reaches the dead-letter queue,
// whose consumer pages for it, again after a refusal; and the unresolved
// order's own letter pages no more. The error lines go out through
// console.error. No secret reaches the log.
func TestTheWorkerPagesOncePerUnresolvedOrderAndDeadLetter(t *testing.T) {
	requireWorker(t)
	t.Parallel()
	pager := startPager(t)
	env := filepath.Join(t.TempDir(), "alert.vars")
	if err := os.WriteFile(env, []byte("ALERT_WEBHOOK_URL="+pager.URL+"\nALERT_ROUTING_KEY="+pagerRoutingKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"kv", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			oms := startOwnFakeOMS(t)
			w := startWorker(t, mode, wrappedOptions(wranglerdev.Options{EnvFile: env, Vars: giveUpVars(oms)}))
			lost := slices.Repeat([]step{drop}, 60)
			// KV mode's dead letter: its first page is refused, and the
			// letter comes back a minute later (app.DeadLetterRetryDelay),
			// while the unresolved order below runs.
			var deadOrder, deadKey string
			if mode == "kv" {
				t.Run("a dead letter is paged", func(t *testing.T) {
					symbol := "PAGE-DLQ"
					deadKey = newKey(t)
					oms.script(symbol, lost...)
					w.setting(t, `{"failQueue":"edge-orders-settle"}`)
					wantUnknown(t, w.post(t, deadKey, gatewayOrder(symbol)))
					deadOrder = oms.orderIDs(symbol)[0]
					waitLogged(t, w, time.Minute, `"outcome":"alert_failed"`, `"key":"`+deadKey+`"`)
					w.setting(t, `{"failQueue":""}`)
					if n := w.wrappedStats(t).FailedMessages; n < 11 {
						t.Errorf("settle messages failed: %d, want the first and its 10 retries", n)
					}
				})
			}
			t.Run("an unresolved order pages once, again after the pager refused it", func(t *testing.T) {
				symbol, key := "PAGE-"+strings.ToUpper(mode), newKey(t)
				oms.script(symbol, lost...)
				wantUnknown(t, w.post(t, key, gatewayOrder(symbol)))
				orderID := oms.orderIDs(symbol)[0]
				pager.waitTaken(t, orderID, 150*time.Second)
				// The give-up is stored once the pager took the page.
				deadline := time.Now().Add(20 * time.Second)
				for got := w.lookup(t, key); !strings.Contains(got.body, `"outcome_unresolved"`); got = w.lookup(t, key) {
					if time.Now().After(deadline) {
						t.Fatalf("lookup after the page = %d %s, want outcome_unresolved", got.status, got.body)
					}
					time.Sleep(200 * time.Millisecond)
				}
				if mode == "kv" {
					// Its letter is consumed, and pages no more: the key
					// was paged as the settler gave up.
					waitLogged(t, w, 30*time.Second, `"outcome":"dead_letter"`, `"key":"`+key+`"`)
				}
				wantPagedOnce(t, pager, orderID, "order_unresolved", key)
				// Error lines go out through console.error, which wrangler
				// prints after "✘ [ERROR]"; the others through console.log.
				for _, outcome := range []string{"alert_failed", "order_unresolved"} {
					line := uncolored(waitLogged(t, w, 5*time.Second, `"outcome":"`+outcome+`"`, `"key":"`+key+`"`))
					if !strings.Contains(line, `"level":"error"`) || !strings.Contains(line, "[ERROR] {") {
						t.Errorf("%s line %q, want level error, through console.error", outcome, line)
					}
				}
				placed := newKey(t) + "-placed"
				if got := w.post(t, placed, gatewayOrder("PAGE-PLACED")); got.status != http.StatusCreated {
					t.Fatalf("an order the OMS takes = %d %s, want 201", got.status, got.body)
				}
				if line := uncolored(waitLogged(t, w, 5*time.Second, `"outcome":"created"`, `"key":"`+placed+`"`)); !strings.HasPrefix(strings.TrimSpace(line), "{") {
					t.Errorf("created line %q, want it as console.log prints it, the JSON alone", line)
				}
			})
			if mode == "kv" {
				t.Run("a dead letter pages once, again after the pager refused it", func(t *testing.T) {
					pager.waitTaken(t, deadOrder, 2*time.Minute)
					wantPagedOnce(t, pager, deadOrder, "dead_letter", deadKey)
				})
			}
			if logs := w.Logs(); strings.Contains(logs, "s3cr3t-path-token") || strings.Contains(logs, pagerRoutingKey) {
				t.Errorf("the log shows a secret of the pager")
			}
		})
	}
}
