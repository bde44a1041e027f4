package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/settlequeue"
	"github.com/edge-orders/edge-orders/workers"
)

// letterWorld is a KV-mode Worker with the admin API on, and what it
// answers an admin.
type letterWorld struct {
	*world
	worker *app.Worker
}

func newLetterWorld(t *testing.T, vars map[string]string) letterWorld {
	all := map[string]string{"ADMIN_TOKENS": "ops:" + opsToken}
	for k, v := range vars {
		all[k] = v
	}
	w := newWorld(t, all)
	return letterWorld{world: w, worker: app.New(w.env)}
}

// admin sends an admin request; path may carry a query.
func (l letterWorld) admin(method, path string) *workers.Response {
	header := http.Header{}
	header.Set("Authorization", "Bearer "+opsToken)
	p, q, _ := strings.Cut(path, "?")
	return l.worker.Handler.ServeWorker(context.Background(), &workers.Request{Method: method, Path: p, Query: q, Header: header,
		Body: workers.ReaderBody(strings.NewReader(""))})
}

// deliver hands the Worker a dead-letter queue message about key, as the
// queue delivers message id.
func (l letterWorld) deliver(key intake.Key, id string) error {
	return l.worker.QueueMessage(context.Background(), workers.QueueMessage{Queue: config.DefaultDeadLetterQueue, ID: id, Attempts: 1, Body: settlequeue.Message(key)})
}

type letter struct{ Client, Key, LetterID, State string }

// letters is what GET path answers: a list of letters.
func (l letterWorld) letters(path string) []letter {
	l.t.Helper()
	resp := l.admin("GET", path)
	var got struct{ DeadLetters []letter }
	if resp.Status != 200 || json.Unmarshal(resp.Body, &got) != nil {
		l.t.Fatalf("GET %s = %d %s", path, resp.Status, resp.Body)
	}
	return got.DeadLetters
}

// TestAcknowledgingADeadLetterDeletesOnlyTheLetterItNames: a key with two
// letters (a settle message that kept failing, then the give-up). The
// operator, who read the first, acknowledges it by its letterId: the
// answer and the audit line name it, and the second stays listed. Naming
// it again, once the key holds only the second, is a 409 problem that
// changes nothing, and so is naming none while the key holds two.
func TestAcknowledgingADeadLetterDeletesOnlyTheLetterItNames(t *testing.T) {
	l := newLetterWorld(t, nil)
	key := intake.Key{ID: "k1"}
	if err := l.deliver(key, "first0000000000000000000000000001"); err != nil {
		t.Fatal(err)
	}
	if got := l.letters("/admin/deadletters"); len(got) != 1 || got[0].LetterID != "first0000000000000000000000000001" {
		t.Fatalf("letters %+v, want the first one with its letterId", got)
	}
	l.advance(time.Minute)
	if err := l.deliver(key, "second000000000000000000000000002"); err != nil {
		t.Fatal(err)
	}
	if resp := l.admin("DELETE", "/admin/deadletters/-/k1"); resp.Status != 409 || !strings.Contains(fmt.Sprint(resp.Header), "application/problem+json") ||
		!strings.Contains(string(resp.Body), "dead_letter_changed") {
		t.Fatalf("DELETE naming no letter of a key with two = %d %s, want 409 dead_letter_changed", resp.Status, resp.Body)
	}
	resp := l.admin("DELETE", "/admin/deadletters/-/k1?letterId=first0000000000000000000000000001")
	if resp.Status != 200 || !strings.Contains(string(resp.Body), `"letterId":"first0000000000000000000000000001"`) {
		t.Fatalf("DELETE of the first = %d %s, want 200 naming it", resp.Status, resp.Body)
	}
	if lines := l.lines("acknowledge"); len(lines) != 1 || lines[0]["letterId"] != "first0000000000000000000000000001" {
		t.Errorf("audit lines %v, want one naming the first letter", lines)
	}
	if got := l.letters("/admin/deadletters/-/k1"); len(got) != 1 || got[0].LetterID != "second000000000000000000000000002" {
		t.Fatalf("the key's letters %+v, want the second still", got)
	}
	// A stale page names a letter the key no longer holds.
	if resp := l.admin("DELETE", "/admin/deadletters/-/k1?letterId=gone0000000000000000000000000000"); resp.Status != 409 {
		t.Errorf("DELETE of a letter the key does not hold = %d %s, want 409", resp.Status, resp.Body)
	}
	if got := l.letters("/admin/deadletters"); len(got) != 1 || got[0].LetterID != "second000000000000000000000000002" {
		t.Errorf("letters %+v after the refusals, want the second", got)
	}
	if resp := l.admin("DELETE", "/admin/deadletters/-/k1?letterId=no%20such"); resp.Status != 400 {
		t.Errorf("DELETE with a letterId that is no id = %d %s, want 400", resp.Status, resp.Body)
	}
}

// TestDeadLettersOfDotKeysAndClientsAreReadAndAcknowledgedByQuery: . and
// .. cannot be path segments (URL parsers drop them); the query form
// names them.
func TestDeadLettersOfDotKeysAndClientsAreReadAndAcknowledgedByQuery(t *testing.T) {
	l := newLetterWorld(t, map[string]string{"API_TOKENS": "desk-a:desk-a-token-0123456789"})
	for _, key := range []intake.Key{{Client: ".", ID: ".."}, {Client: "..", ID: "."}, {Client: "desk-a", ID: "a+b c"}} {
		if err := l.deliver(key, "m-"+strings.NewReplacer(".", "d", "+", "p", " ", "s").Replace(key.String())); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ client, key, query string }{
		{".", "..", "client=.&key=.."},
		{"..", ".", "client=%2E%2E&key=%2E"},
		{"desk-a", "a+b c", "client=desk-a&key=a+b%20c"},
	} {
		got := l.letters("/admin/deadletter?" + c.query)
		if len(got) != 1 || got[0].Client != c.client || got[0].Key != c.key {
			t.Fatalf("GET /admin/deadletter?%s = %+v, want the letter of %s's %q", c.query, got, c.client, c.key)
		}
		resp := l.admin("DELETE", "/admin/deadletter?"+c.query+"&letterId="+got[0].LetterID)
		if resp.Status != 200 || !strings.Contains(string(resp.Body), `"key":`+strings.TrimSuffix(jsonString(c.key), "\n")) {
			t.Errorf("DELETE /admin/deadletter?%s = %d %s, want 200", c.query, resp.Status, resp.Body)
		}
	}
	if got := l.letters("/admin/deadletters"); len(got) != 0 {
		t.Errorf("letters %+v, want all acknowledged", got)
	}
	for _, q := range []string{"client=.", "key=..", "client=.&key=..&client=.", "client=.&key=..&state=unknown"} {
		if resp := l.admin("GET", "/admin/deadletter?"+q); resp.Status != 400 {
			t.Errorf("GET /admin/deadletter?%s = %d %s, want 400 invalid_query", q, resp.Status, resp.Body)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestDeadLettersOfClientsNoLongerConfiguredCanBeAcknowledged: a desk
// removed from API_TOKENS, and the open Worker's letters (client -) once
// tokens are set, still have letters listed; each can be acknowledged. A
// client id no token could have had is refused.
func TestDeadLettersOfClientsNoLongerConfiguredCanBeAcknowledged(t *testing.T) {
	l := newLetterWorld(t, map[string]string{"API_TOKENS": "desk-a:desk-a-token-0123456789"})
	for i, key := range []intake.Key{{Client: "desk-gone", ID: "k1"}, {ID: "k2"}} {
		if err := l.deliver(key, "m"+string(rune('1'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.letters("/admin/deadletters"); len(got) != 2 {
		t.Fatalf("letters %+v, want both", got)
	}
	for _, path := range []string{"/admin/deadletters/desk-gone/k1?letterId=m1", "/admin/deadletters/-/k2"} {
		if resp := l.admin("DELETE", path); resp.Status != 200 {
			t.Errorf("DELETE %s = %d %s, want 200", path, resp.Status, resp.Body)
		}
	}
	if got := l.letters("/admin/deadletters"); len(got) != 0 {
		t.Errorf("letters %+v, want none", got)
	}
	if resp := l.admin("DELETE", "/admin/deadletters/desk:x/k1"); resp.Status != 404 || !strings.Contains(string(resp.Body), "unknown_client") {
		t.Errorf("DELETE for a client id no token has = %d %s, want 404 unknown_client", resp.Status, resp.Body)
	}
}

// TestADeadLetterDeliveredAgainAfterItsAcknowledgementDoesNotComeBack: the
// queue delivers a message at least once; a delivery of a letter's
// message after an operator acknowledged it is logged, not listed.
func TestADeadLetterDeliveredAgainAfterItsAcknowledgementDoesNotComeBack(t *testing.T) {
	l := newLetterWorld(t, nil)
	key := intake.Key{ID: "k1"}
	if err := l.deliver(key, "m1"); err != nil {
		t.Fatal(err)
	}
	if resp := l.admin("DELETE", "/admin/deadletters/-/k1?letterId=m1"); resp.Status != 200 {
		t.Fatalf("DELETE = %d %s", resp.Status, resp.Body)
	}
	l.advance(13 * 24 * time.Hour) // within the longest a queue keeps it
	if err := l.deliver(key, "m1"); err != nil {
		t.Fatalf("the delivery again = %v, want it acknowledged", err)
	}
	if got := l.letters("/admin/deadletters"); len(got) != 0 {
		t.Errorf("letters %+v after the delivery again, want none", got)
	}
	if lines := l.lines("dead_letter_acknowledged"); len(lines) != 1 || lines[0]["letterId"] != "m1" {
		t.Errorf("log lines %v, want one naming m1", lines)
	}
}

// TestTheDeadLetterQueueIsNamedByConfiguration: the Worker tells a dead
// letter from a settle message by the queue's name, DEAD_LETTER_QUEUE;
// a misconfigured Worker acknowledges neither kind, so none is lost.
func TestTheDeadLetterQueueIsNamedByConfiguration(t *testing.T) {
	l := newLetterWorld(t, map[string]string{"DEAD_LETTER_QUEUE": "desk-dlq"})
	body := settlequeue.Message(intake.Key{ID: "k1"})
	if err := l.worker.QueueMessage(context.Background(), workers.QueueMessage{Queue: config.DefaultDeadLetterQueue, ID: "m1", Body: body}); err != nil {
		t.Fatal(err)
	}
	if got := l.letters("/admin/deadletters"); len(got) != 0 {
		t.Fatalf("a message of another queue was recorded as a letter: %+v", got)
	}
	if err := l.worker.QueueMessage(context.Background(), workers.QueueMessage{Queue: "desk-dlq", ID: "m2", Body: body}); err != nil {
		t.Fatal(err)
	}
	if got := l.letters("/admin/deadletters"); len(got) != 1 || got[0].LetterID != "m2" {
		t.Fatalf("letters %+v, want m2 from desk-dlq", got)
	}
	broken := app.New(newWorld(t, map[string]string{"RESULT_TTL_SECONDS": "soon"}).env)
	for _, queue := range []string{"desk-dlq", config.DefaultDeadLetterQueue, "edge-orders-settle"} {
		m := workers.QueueMessage{Queue: queue, ID: "m3", Attempts: 100, Body: body}
		if err := broken.QueueMessage(context.Background(), m); err == nil {
			t.Errorf("a misconfigured Worker acknowledged a message of %s: want it retried", queue)
		}
		if d := broken.RetryDelay(m); d != app.DeadLetterRetryMax {
			t.Errorf("a misconfigured Worker retries a message of %s after %v, want the dead letters' %v", queue, d, app.DeadLetterRetryMax)
		}
	}
}

// TestTheDeadLetterConsumerOutlastsTheQueuesRetention: the consumer's own
// retry delays, doubling from a minute to DeadLetterRetryMax, add up over
// max_retries to more than the 14 days Queues keeps a message at most, so
// a storage outage shorter than the queue's retention loses no letter;
// each delay is within the 12 hours Queues takes (delaySeconds), and the
// settle queue keeps its own.
func TestTheDeadLetterConsumerOutlastsTheQueuesRetention(t *testing.T) {
	const queuesMaxRetention, queuesMaxDelay = 14 * 24 * time.Hour, 12 * time.Hour
	l := newLetterWorld(t, nil)
	var total time.Duration
	for attempts := 1; attempts <= app.DeadLetterMaxRetries; attempts++ {
		d := l.worker.RetryDelay(workers.QueueMessage{Queue: config.DefaultDeadLetterQueue, Attempts: attempts})
		if d <= 0 || d > app.DeadLetterRetryMax || d > queuesMaxDelay {
			t.Fatalf("retry delay after attempt %d = %v, want within (0, %v]", attempts, d, app.DeadLetterRetryMax)
		}
		total += d
	}
	if total <= queuesMaxRetention {
		t.Errorf("the retries span %v, want past %v: a letter would be dropped while the queue could still keep it", total, queuesMaxRetention)
	}
	if first := l.worker.RetryDelay(workers.QueueMessage{Queue: config.DefaultDeadLetterQueue, Attempts: 1}); first != app.DeadLetterRetryFirst {
		t.Errorf("first retry after %v, want %v", first, app.DeadLetterRetryFirst)
	}
	if d := l.worker.RetryDelay(workers.QueueMessage{Queue: "edge-orders-settle", Attempts: 50}); d != app.QueueRetryDelay {
		t.Errorf("a settle message's retry delay = %v, want %v", d, app.QueueRetryDelay)
	}
	// A letter whose recording fails is retried, not dropped.
	l.env.KV = failingKV{l.env.KV}
	failing := app.New(l.env)
	if err := failing.QueueMessage(context.Background(), workers.QueueMessage{Queue: config.DefaultDeadLetterQueue, ID: "m1", Body: settlequeue.Message(intake.Key{ID: "k1"})}); err == nil {
		t.Errorf("a letter recorded over a failing KV was acknowledged: want it retried")
	}
}

// failingKV is a namespace whose every call fails, as in a KV outage.
type failingKV struct{ app.Namespace }

var errOutage = errors.New("KV unavailable")

func (failingKV) Get(context.Context, string) (kv.Entry, error) { return kv.Entry{}, errOutage }
func (failingKV) Put(context.Context, string, kv.Entry, kv.PutOptions) error {
	return errOutage
}
func (failingKV) Delete(context.Context, string) error { return errOutage }
func (failingKV) List(context.Context, string, string, int) ([]kv.Listed, string, error) {
	return nil, "", errOutage
}

// TestAGiveUpWhoseLetterCannotBeSentIsRecorded: the settler gave up on a
// key and its send to the dead-letter queue failed. Nothing sends it
// again (the key is final, the sweep passes it by), so the letter is
// recorded for the admin API at once, until an operator acknowledges it,
// rather than lost once the key expires (found by a review).
func TestAGiveUpWhoseLetterCannotBeSentIsRecorded(t *testing.T) {
	l := newLetterWorld(t, map[string]string{"SETTLE_MAX_AGE_SECONDS": "60", "RESULT_TTL_SECONDS": "3600"})
	l.lose = true
	if resp := l.post(l.worker.Handler, "k"); resp.Status != 503 {
		t.Fatalf("answer = %d %s", resp.Status, resp.Body)
	}
	l.dead.err = errors.New("queue send failed")
	for n := 0; n < len(l.settle.sent()) && len(l.lines("order_unresolved")) == 0; n++ {
		l.advance(max(l.settle.delays[n], time.Minute))
		if err := l.worker.SettleMessage(context.Background(), l.settle.sent()[n]); err != nil {
			t.Fatalf("SettleMessage %d = %v", n, err)
		}
	}
	if got := l.lines("order_unresolved"); len(got) != 1 {
		t.Fatalf("order_unresolved lines %+v, want one", got)
	}
	if got := l.lines("dead_letter_unsent"); len(got) != 1 || !strings.Contains(fmt.Sprint(got[0]["error"]), "recorded for the admin API") {
		t.Fatalf("dead_letter_unsent lines %+v, want one saying its letter was recorded", got)
	}
	if got := l.letters("/admin/deadletters"); len(got) != 1 || got[0].Key != "k" || got[0].State != "unresolved" {
		t.Errorf("GET /admin/deadletters = %+v, want the give-up's letter for k, unresolved", got)
	}
	l.advance(3 * time.Hour) // the key expires; the letter stays
	if got := l.letters("/admin/deadletters"); len(got) != 1 {
		t.Errorf("after the key expired: %+v, want the letter still listed", got)
	}
}

// letterPutFailing is a namespace whose writes of dead letters fail while
// failing is set: a KV blip as the give-up's letter is recorded.
type letterPutFailing struct {
	app.Namespace
	failing *atomic.Bool
}

func (n letterPutFailing) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	if n.failing.Load() && strings.HasPrefix(key, "deadletter:") {
		return errors.New("KV write failed")
	}
	return n.Namespace.Put(ctx, key, e, opts)
}

// TestAGiveUpsLetterIsNotLostToOneFailedWrite: the settler gives up on a
// key, its send to the dead-letter queue fails, and so does the one write
// that records its letter instead. The key, not stored unresolved yet,
// stays due and owes the letter: once KV and the queue are back, the
// letter is sent or recorded. (It was lost: the key was stored
// unresolved, final, and the sweep passed it by.)
func TestAGiveUpsLetterIsNotLostToOneFailedWrite(t *testing.T) {
	w := newWorld(t, map[string]string{"ADMIN_TOKENS": "ops:" + opsToken, "SETTLE_MAX_AGE_SECONDS": "60", "RESULT_TTL_SECONDS": "3600"})
	var failing atomic.Bool
	w.env.KV = letterPutFailing{w.env.KV, &failing}
	l := letterWorld{world: w, worker: app.New(w.env)}
	l.lose = true
	if resp := l.post(l.worker.Handler, "k"); resp.Status != 503 {
		t.Fatalf("answer = %d %s", resp.Status, resp.Body)
	}
	l.dead.err = errors.New("queue send failed")
	failing.Store(true)
	n := 0
	settleNext := func() {
		t.Helper()
		l.advance(max(l.settle.delays[n], time.Minute))
		if err := l.worker.SettleMessage(context.Background(), l.settle.sent()[n]); err != nil {
			t.Fatalf("SettleMessage %d = %v", n, err)
		}
		n++
	}
	for ; n < len(l.settle.sent()) && n < 50 && len(l.lines("dead_letter_unsent")) == 0; settleNext() {
	}
	if got := l.lines("dead_letter_unsent"); len(got) != 1 || got[0]["level"] != "error" {
		t.Fatalf("dead_letter_unsent lines %+v, want one alert: the letter neither sent nor recorded", got)
	}
	if got := l.lines("order_unresolved"); len(got) != 0 {
		t.Fatalf("order_unresolved lines %+v, want none: the give-up is not stored while its letter is owed", got)
	}
	// KV and the queue are back: the key, still due, gives up again and
	// sends its letter.
	failing.Store(false)
	l.dead.err = nil
	for ; n < len(l.settle.sent()) && n < 50 && len(l.lines("order_unresolved")) == 0; settleNext() {
	}
	if got := l.lines("order_unresolved"); len(got) != 1 {
		t.Fatalf("order_unresolved lines %+v, want one once the letter was sent", got)
	}
	if got, sent := l.letters("/admin/deadletters"), len(l.dead.sent()); len(got)+sent != 1 {
		t.Errorf("letters listed %+v and sent to SETTLE_DLQ %d, want one letter in all", got, sent)
	}
}
