//go:build !js

package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestContract walks every answer of the contract (api/openapi.yaml).
func TestContract(t *testing.T) {
	shareWorkers(t)
	forEachMode(t, func(t *testing.T, w *target) {

		t.Run("any method but GET, HEAD and POST is 405 with Allow", func(t *testing.T) {
			for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
				got := w.send(t, method, "", "Idempotency-Key", newKey(t))
				wantProblem(t, got, 405, "method_not_allowed")
				if got.header.Get("Allow") != "GET, HEAD, POST" {
					t.Errorf("%s Allow = %q, want GET, HEAD, POST", method, got.header.Get("Allow"))
				}
			}
		})

		t.Run("GET and HEAD without Idempotency-Key are 400 with the policy link", func(t *testing.T) {
			got := w.send(t, http.MethodGet, "")
			wantProblem(t, got, 400, "missing_idempotency_key")
			head := w.send(t, http.MethodHead, "")
			if head.status != 400 || head.header.Get("Link") != got.header.Get("Link") || got.header.Get("Link") == "" {
				t.Errorf("HEAD = %d, Link %q; want 400 and GET's Link %q", head.status, head.header.Get("Link"), got.header.Get("Link"))
			}
		})

		t.Run("POST without Idempotency-Key is 400", func(t *testing.T) {
			wantProblem(t, w.send(t, http.MethodPost, validOrder), 400, "missing_idempotency_key")
		})

		t.Run("new key and valid order is 201 with a receipt", func(t *testing.T) {
			got := w.post(t, newKey(t), validOrder)
			if got.status != 201 {
				t.Fatalf("got %d %s, want 201", got.status, got.body)
			}
			shape := regexp.MustCompile(`^\{"orderId":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}","status":"accepted","symbol":"MSFT","side":"buy","quantity":100,"acceptedAt":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"\}$`)
			if !shape.MatchString(got.body) {
				t.Fatalf("receipt %s does not have the reference's shape", got.body)
			}
			if got.header.Get("Idempotent-Replay") != "" {
				t.Fatalf("a first submission carries Idempotent-Replay: %q", got.header.Get("Idempotent-Replay"))
			}
			accepted, err := time.Parse(time.RFC3339, decodeReceipt(t, got.body).AcceptedAt)
			if err != nil || time.Since(accepted).Abs() > time.Minute {
				t.Fatalf("acceptedAt %v (%v) is not now", accepted, err)
			}
		})

		t.Run("replay returns the identical body with Idempotent-Replay", func(t *testing.T) {
			key := newKey(t)
			first := w.post(t, key, validOrder)
			if first.status != 201 {
				t.Fatalf("first = %d %s, want 201", first.status, first.body)
			}
			for i := 0; i < 3; i++ {
				again := w.post(t, key, validOrder)
				if again.status != 200 || again.body != first.body || again.header.Get("Idempotent-Replay") != "true" {
					t.Fatalf("retry %d = %d %s replay=%q, want 200 %s replay=true", i+1, again.status, again.body, again.header.Get("Idempotent-Replay"), first.body)
				}
			}
		})

		if w.mode == "kv" {
			// The ledger's claims cannot be planted from outside; there
			// TestInFlightDuplicate holds one with a slowed commit.
			t.Run("key claimed in flight is 409 with Retry-After", func(t *testing.T) {
				key := newKey(t)
				w.kvPut(t, "pending:"+key, "1") // a claim held by a request elsewhere
				got := w.post(t, key, validOrder)
				p := wantProblem(t, got, 409, "in_progress")
				if p.RetryAfter == nil || *p.RetryAfter != 60 || got.header.Get("Retry-After") != "60" {
					t.Fatalf("got %s Retry-After=%q, want retryAfter 60 in body and header", got.body, got.header.Get("Retry-After"))
				}
				if keys := w.kvList(t, "result:"+key); len(keys) != 0 {
					t.Fatalf("a 409 stored %v", keys)
				}
				wantProblem(t, w.lookup(t, key), 409, "in_progress")
			})
		}

		t.Run("GET with a key looks the receipt up and changes nothing", func(t *testing.T) {
			key := newKey(t)
			wantProblem(t, w.lookup(t, key), 404, "not_found")
			first := w.post(t, key, validOrder)
			if first.status != 201 {
				t.Fatalf("the POST after a lookup = %d %s, want 201: the lookup created something", first.status, first.body)
			}
			got := w.lookup(t, key)
			if got.status != 200 || got.body != first.body || got.header.Get("Idempotent-Replay") != "true" || got.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("lookup = %d %s %v, want 200 with the receipt %s, Idempotent-Replay and no-store", got.status, got.body, got.header, first.body)
			}
		})

		t.Run("every response says nosniff and receipts say no-store", func(t *testing.T) {
			got := w.post(t, newKey(t), validOrder)
			problem := w.send(t, http.MethodPost, validOrder)
			if got.header.Get("Cache-Control") != "no-store" || got.header.Get("X-Content-Type-Options") != "nosniff" || problem.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("receipt headers %v, problem headers %v", got.header, problem.header)
			}
		})

		t.Run("invalid order is 422 and does not poison the key", func(t *testing.T) {
			key := newKey(t)
			for _, body := range []string{`{"symbol":"MSFT","side":"hold","quantity":100}`, `not json`, ``, `{"symbol":"MSFT","side":"buy","quantity":1.5}`} {
				wantProblem(t, w.post(t, key, body), 422, "invalid_order")
			}
			// KV's claims are keys to list; the ledger's are its object's
			// rows, which the lookup and the corrected retry below find free.
			if w.mode == "kv" {
				if keys := w.kvList(t, "pending:"+key); len(keys) != 0 {
					t.Fatalf("claim left behind after 422: %v", keys)
				}
			}
			wantProblem(t, w.lookup(t, key), 404, "not_found")
			if got := w.post(t, key, validOrder); got.status != 201 {
				t.Fatalf("corrected retry = %d %s, want 201", got.status, got.body)
			}
		})

		if w.mode != "kv" {
			return // the rest reads the reference's KV layout
		}
		t.Run("a stored receipt keeps a 24 h TTL and the claim is released after it", func(t *testing.T) {
			key := newKey(t)
			if got := w.post(t, key, validOrder); got.status != 201 {
				t.Fatalf("got %d %s, want 201", got.status, got.body)
			}
			results := w.kvList(t, "result:"+key)
			if len(results) != 1 {
				t.Fatalf("result keys = %v, want one", results)
			}
			if ttl := time.Until(time.Unix(results[0].Expiration, 0)); ttl < 23*time.Hour || ttl > 24*time.Hour+time.Minute {
				t.Fatalf("receipt expires in %v, want about 24h", ttl)
			}
			// Check, claim, write, release, as the reference does; the
			// release runs after the response (waitUntil), so it is awaited.
			deadline := time.Now().Add(10 * time.Second)
			for pending := w.kvList(t, "pending:"+key); len(pending) != 0; pending = w.kvList(t, "pending:"+key) {
				if time.Now().After(deadline) {
					t.Fatalf("claim keys = %v 10 s after the response, want the claim released", pending)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	})
}

// TestReferenceLayoutReplays stores a receipt the way the TypeScript Worker
// writes it and checks the Go Worker replays it byte for byte, from real
// KV, and places nothing. The reference stored a key as its header came:
// a client that sent the draft's quoted form left its receipt under
// result:"<key>", quotes and all, which the Go Worker, reading the quoted
// form as the key itself, replays to a retry that repeats the header.
func TestReferenceLayoutReplays(t *testing.T) {
	shareWorkers(t)
	requireWorker(t)
	w := kvWorker
	stored := `{"orderId":"0b4f4c2e-3f0e-4b8e-9d47-0d7a1f7c2b11","status":"accepted","symbol":"AAPL","side":"sell","quantity":7,"acceptedAt":"2026-01-02T03:04:05.678Z"}`
	for _, quoted := range []bool{false, true} {
		key := newKey(t)
		sent := key
		if quoted {
			sent = `"` + key + `"`
		}
		w.kvPut(t, "result:"+sent, stored)
		got := w.post(t, sent, `{"symbol":"AAPL","side":"sell","quantity":7}`)
		if got.status != 200 || got.body != stored || got.header.Get("Idempotent-Replay") != "true" {
			t.Fatalf("stored under result:%s, Idempotency-Key: %s = %d %s replay=%q, want 200 with the stored body", sent, sent, got.status, got.body, got.header.Get("Idempotent-Replay"))
		}
		if keys := w.kvList(t, "result:"+key); quoted && len(keys) != 0 {
			t.Errorf("stored %v, want no receipt of the Worker's own", keys)
		}
	}
}

// TestConcurrentRetriesPlaceOneOrder fires many requests with one key at once.
func TestConcurrentRetriesPlaceOneOrder(t *testing.T) {
	shareWorkers(t)
	forEachMode(t, func(t *testing.T, w *target) {
		const n = 40
		key := newKey(t)
		responses := make([]response, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range responses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				responses[i] = w.post(t, key, validOrder)
			}()
		}
		close(start)
		wg.Wait()

		created, replayed, inProgress := 0, 0, 0
		var receiptBody string
		for _, r := range responses {
			switch r.status {
			case 201:
				created++
				receiptBody = r.body
			case 200:
				replayed++
			case 409:
				inProgress++
			default:
				t.Fatalf("unexpected %d %s", r.status, r.body)
			}
		}
		if created != 1 {
			t.Fatalf("%d requests placed an order (%d replays, %d in progress), want exactly 1", created, replayed, inProgress)
		}
		if inProgress != 0 {
			t.Fatalf("%d duplicates were answered 409; with a %v wait they should all see the first request finish", inProgress, sharedWait)
		}
		for _, r := range responses {
			if r.status == 200 && r.body != receiptBody {
				t.Fatalf("replay %s differs from the receipt %s", r.body, receiptBody)
			}
		}
		if final := w.post(t, key, validOrder); final.status != 200 || final.body != receiptBody {
			t.Fatalf("final retry = %d %s, want the receipt %s", final.status, final.body, receiptBody)
		}
		t.Logf("%d requests: 1 created, %d replayed, %d in progress", n, replayed, inProgress)
	})
}

// TestDistinctKeysPlaceDistinctOrders checks that concurrent requests with
// different keys do not block or replay each other.
func TestDistinctKeysPlaceDistinctOrders(t *testing.T) {
	shareWorkers(t)
	forEachMode(t, func(t *testing.T, w *target) {
		const n = 20
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got := w.post(t, newKey(t)+"-"+strings.Repeat("x", i), validOrder)
				if got.status != 201 {
					t.Errorf("key %d = %d %s, want 201", i, got.status, got.body)
					return
				}
				r, err := parseReceipt(got.body)
				if err != nil {
					t.Errorf("key %d: %v", i, err)
					return
				}
				ids[i] = r.OrderID
			}()
		}
		wg.Wait()
		seen := map[string]bool{}
		for _, id := range ids {
			if id == "" {
				continue // reported above
			}
			if seen[id] {
				t.Fatalf("order id %s handed out twice", id)
			}
			seen[id] = true
		}
	})
}
