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

// TestContract walks every row of the README's contract table.
func TestContract(t *testing.T) {
	requireWorker(t)

	t.Run("any method but POST is 405 with Allow", func(t *testing.T) {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
			got := send(t, method, "", "Idempotency-Key", newKey(t))
			if method != http.MethodHead {
				wantProblem(t, got, 405, "method_not_allowed")
			}
			if got.header.Get("Allow") != "POST" {
				t.Errorf("%s Allow = %q, want POST", method, got.header.Get("Allow"))
			}
		}
	})

	t.Run("POST without Idempotency-Key is 400", func(t *testing.T) {
		wantProblem(t, send(t, http.MethodPost, validOrder), 400, "missing_idempotency_key")
	})

	t.Run("new key and valid order is 201 with a receipt", func(t *testing.T) {
		got := post(t, newKey(t), validOrder)
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
		first := post(t, key, validOrder)
		if first.status != 201 {
			t.Fatalf("first = %d %s, want 201", first.status, first.body)
		}
		for i := 0; i < 3; i++ {
			again := post(t, key, validOrder)
			if again.status != 200 || again.body != first.body || again.header.Get("Idempotent-Replay") != "true" {
				t.Fatalf("retry %d = %d %s replay=%q, want 200 %s replay=true", i+1, again.status, again.body, again.header.Get("Idempotent-Replay"), first.body)
			}
		}
	})

	t.Run("key claimed in flight is 409 with Retry-After", func(t *testing.T) {
		key := newKey(t)
		kvPut(t, "pending:"+key, "1") // a claim held by a request elsewhere
		got := post(t, key, validOrder)
		p := wantProblem(t, got, 409, "in_progress")
		if p.RetryAfter == nil || *p.RetryAfter != 60 || got.header.Get("Retry-After") != "60" {
			t.Fatalf("got %s Retry-After=%q, want retryAfter 60 in body and header", got.body, got.header.Get("Retry-After"))
		}
		if keys := kvList(t, "result:"+key); len(keys) != 0 {
			t.Fatalf("a 409 stored %v", keys)
		}
	})

	t.Run("invalid order is 422 and does not poison the key", func(t *testing.T) {
		key := newKey(t)
		for _, body := range []string{`{"symbol":"MSFT","side":"hold","quantity":100}`, `not json`, ``, `{"symbol":"MSFT","side":"buy","quantity":1.5}`} {
			wantProblem(t, post(t, key, body), 422, "invalid_order")
		}
		if keys := kvList(t, "pending:"+key); len(keys) != 0 {
			t.Fatalf("claim left behind after 422: %v", keys)
		}
		if got := post(t, key, validOrder); got.status != 201 {
			t.Fatalf("corrected retry = %d %s, want 201", got.status, got.body)
		}
	})

	t.Run("a stored receipt keeps a 24 h TTL and the claim is released", func(t *testing.T) {
		key := newKey(t)
		if got := post(t, key, validOrder); got.status != 201 {
			t.Fatalf("got %d %s, want 201", got.status, got.body)
		}
		results := kvList(t, "result:"+key)
		if len(results) != 1 {
			t.Fatalf("result keys = %v, want one", results)
		}
		if ttl := time.Until(time.Unix(results[0].Expiration, 0)); ttl < 23*time.Hour || ttl > 24*time.Hour+time.Minute {
			t.Fatalf("receipt expires in %v, want about 24h", ttl)
		}
		if pending := kvList(t, "pending:"+key); len(pending) != 0 {
			t.Fatalf("claim not released: %v", pending)
		}
	})
}

// TestReferenceLayoutReplays stores a receipt the way the TypeScript Worker
// writes it and checks the Go Worker replays it byte for byte.
func TestReferenceLayoutReplays(t *testing.T) {
	requireWorker(t)
	key := newKey(t)
	stored := `{"orderId":"0b4f4c2e-3f0e-4b8e-9d47-0d7a1f7c2b11","status":"accepted","symbol":"AAPL","side":"sell","quantity":7,"acceptedAt":"2026-01-02T03:04:05.678Z"}`
	kvPut(t, "result:"+key, stored)
	got := post(t, key, `{"symbol":"AAPL","side":"sell","quantity":7}`)
	if got.status != 200 || got.body != stored || got.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("got %d %s replay=%q, want 200 with the stored body", got.status, got.body, got.header.Get("Idempotent-Replay"))
	}
}

// TestConcurrentRetriesPlaceOneOrder fires many requests with one key at once.
func TestConcurrentRetriesPlaceOneOrder(t *testing.T) {
	requireWorker(t)
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
			responses[i] = post(t, key, validOrder)
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
	for _, r := range responses {
		if r.status == 200 && r.body != receiptBody {
			t.Fatalf("replay %s differs from the receipt %s", r.body, receiptBody)
		}
	}
	if final := post(t, key, validOrder); final.status != 200 || final.body != receiptBody {
		t.Fatalf("final retry = %d %s, want the receipt %s", final.status, final.body, receiptBody)
	}
	t.Logf("%d requests: 1 created, %d replayed, %d in progress", n, replayed, inProgress)
}

// TestDistinctKeysPlaceDistinctOrders checks that concurrent requests with
// different keys do not block or replay each other.
func TestDistinctKeysPlaceDistinctOrders(t *testing.T) {
	requireWorker(t)
	const n = 20
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := post(t, newKey(t)+"-"+strings.Repeat("x", i), validOrder)
			if got.status != 201 {
				t.Errorf("key %d = %d %s, want 201", i, got.status, got.body)
				return
			}
			ids[i] = decodeReceipt(t, got.body).OrderID
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("order id %s handed out twice", id)
		}
		seen[id] = true
	}
}
