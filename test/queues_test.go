//go:build !js

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/config"
)

// TestWranglerQueuesMatchTheWorker checks wrangler.toml's queues against
// what the Worker assumes of them: the dead-letter queue that the settle
// queue's consumer sends to, that SETTLE_DLQ produces to and that the
// Worker consumes is the one DEAD_LETTER_QUEUE names (config's default
// too), and its consumer retries as app.DeadLetterRetryDelay counts on:
// app.DeadLetterMaxRetries times, retry_delay app.DeadLetterRetryMax.
func TestWranglerQueuesMatchTheWorker(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "wrangler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	toml := string(b)
	// Top level only: the environments below declare no queues.
	if i := strings.Index(toml, "\n[env."); i >= 0 {
		toml = toml[:i]
	}
	setting := func(block, name string) string {
		m := regexp.MustCompile(`(?m)^` + name + ` = "?([^"\n]*)"?$`).FindStringSubmatch(block)
		if m == nil {
			return ""
		}
		return m[1]
	}
	name := setting(toml[strings.Index(toml, "[vars]"):], config.DeadLetterQueueVar)
	if name == "" || name != config.DefaultDeadLetterQueue {
		t.Fatalf("[vars] %s = %q, want config.DefaultDeadLetterQueue %q", config.DeadLetterQueueVar, name, config.DefaultDeadLetterQueue)
	}
	blocks := regexp.MustCompile(`(?m)^\[\[queues\.(producers|consumers)\]\]\n((?:[a-z_]+ = .*\n)+)`).FindAllStringSubmatch(toml, -1)
	var produced, consumed, deadLettered bool
	for _, blk := range blocks {
		kind, body := blk[1], blk[2]
		switch {
		case kind == "producers" && setting(body, "binding") == app.DeadLetterBinding:
			produced = setting(body, "queue") == name
		case kind == "consumers" && setting(body, "queue") == name:
			consumed = true
			if got := setting(body, "max_retries"); got != strconv.Itoa(app.DeadLetterMaxRetries) {
				t.Errorf("the dead-letter queue's max_retries = %q, want %d", got, app.DeadLetterMaxRetries)
			}
			if got := setting(body, "retry_delay"); got != strconv.Itoa(int(app.DeadLetterRetryMax.Seconds())) {
				t.Errorf("the dead-letter queue's retry_delay = %q, want %v in seconds", got, app.DeadLetterRetryMax)
			}
		case kind == "consumers":
			deadLettered = setting(body, "dead_letter_queue") == name
			if got := setting(body, "retry_delay"); got != strconv.Itoa(int(app.QueueRetryDelay.Seconds())) {
				t.Errorf("the settle queue's retry_delay = %q, want %v in seconds", got, app.QueueRetryDelay)
			}
		}
	}
	if !produced || !consumed || !deadLettered {
		t.Errorf("%s produces to %s: %v; consumed: %v; the settle queue's dead_letter_queue: %v; want all", app.DeadLetterBinding, name, produced, consumed, deadLettered)
	}
}
