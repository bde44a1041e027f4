package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/workers"
)

// deliveringQueue is SETTLE_DLQ whose consumer takes each message at
// once, before the sender goes on (max_batch_timeout = 0).
type deliveringQueue struct {
	q       *queue
	deliver func(body []byte)
}

func (d deliveringQueue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	if err := d.q.Send(ctx, body, delay); err != nil {
		return err
	}
	d.deliver(body)
	return nil
}

// TestAGiveUpsLetterConsumedBeforeTheGiveUpIsStoredIsUnresolved, KV mode:
// the letter is sent before the give-up is stored. Its
// consumer may read the key before the release lands; the letter must
// still be listed unresolved and not paged/alerted as a settle message
// that kept failing.
func TestAGiveUpsLetterConsumedBeforeTheGiveUpIsStoredIsUnresolved(t *testing.T) {
	w := newWorld(t, map[string]string{"ADMIN_TOKENS": "ops:" + opsToken, "SETTLE_MAX_AGE_SECONDS": "60"})
	l := letterWorld{world: w}
	n := 0
	w.env.DeadLetter = deliveringQueue{q: &w.dead, deliver: func(body []byte) {
		n++
		if err := l.worker.QueueMessage(context.Background(), workers.QueueMessage{Queue: config.DefaultDeadLetterQueue, ID: fmt.Sprint("m", n), Attempts: 1, Body: body}); err != nil {
			t.Errorf("delivery: %v", err)
		}
	}}
	l.worker = app.New(w.env)
	l.lose = true
	if resp := l.post(l.worker.Handler, "k"); resp.Status != 503 {
		t.Fatalf("answer = %d %s", resp.Status, resp.Body)
	}
	settleUntil(t, w, l.worker, 0)
	if len(w.dead.sent()) != 1 {
		t.Fatalf("letters sent %d, want 1", len(w.dead.sent()))
	}
	for _, line := range w.lines("dead_letter") {
		if line["level"] == "error" {
			t.Errorf("dead_letter line at error level %v: the give-up's letter taken for a settle message that kept failing", line)
		}
	}
	if got := l.letters("/admin/deadletters"); len(got) != 1 || got[0].State != "unresolved" {
		t.Errorf("letters %+v, want one, unresolved", got)
	}
}
