package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/edge-orders/edge-orders/client"
	"github.com/edge-orders/edge-orders/intake"
)

// msft is the order most tests place.
var msft = client.Order{Symbol: "MSFT", Side: client.Buy, Quantity: 100}

// sleeper records the waits a client asks for and returns at once, so
// that retry tests take no time.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeper) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// newClient returns a client for w that records its waits instead of
// waiting. opts may be nil.
func newClient(w *worker, opts *client.Options) (*client.Client, *sleeper) {
	s := &sleeper{}
	o := client.Options{}
	if opts != nil {
		o = *opts
	}
	if o.Sleep == nil {
		o.Sleep = s.sleep
	}
	c, err := client.New(w.srv.URL, &o)
	if err != nil {
		panic(err) // no test here passes a token New refuses
	}
	return c, s
}

// asError returns err as a *client.Error, failing the test if it is not one.
func asError(t *testing.T, err error) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want a *client.Error", err, err)
	}
	return e
}

// wantSameKey fails unless the worker saw n requests, all under key.
func wantSameKey(t *testing.T, w *worker, n int, key string) {
	t.Helper()
	keys := w.keys()
	if len(keys) != n {
		t.Fatalf("worker saw %d requests, want %d", len(keys), n)
	}
	for i, k := range keys {
		if k != key {
			t.Errorf("request %d Idempotency-Key = %q, want %q", i+1, k, key)
		}
	}
}

func TestSubmitPlacesOrder(t *testing.T) {
	tests := []struct {
		name     string
		token    string
		wantAuth string
	}{
		{"open Worker gets no Authorization", "", ""},
		{"token is sent as a bearer token", "tok-0123456789abcdef", "Bearer tok-0123456789abcdef"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, tc.token)
			c, s := newClient(w, &client.Options{Token: tc.token})
			res, err := c.Submit(t.Context(), msft)
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}

			reqs := w.requests()
			if len(reqs) != 1 {
				t.Fatalf("worker saw %d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if got.method != http.MethodPost {
				t.Errorf("method = %s, want POST", got.method)
			}
			if key, err := uuid.Parse(got.key); err != nil || key.Version() != 4 || key.String() != got.key {
				t.Errorf("Idempotency-Key = %q, want a lowercase version 4 UUID", got.key)
			}
			if got.contentType != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got.contentType)
			}
			if got.authorization != tc.wantAuth {
				t.Errorf("Authorization = %q, want %q", got.authorization, tc.wantAuth)
			}
			if want := `{"symbol":"MSFT","side":"buy","quantity":100}`; got.body != want {
				t.Errorf("body = %s, want %s", got.body, want)
			}

			if res.StatusCode != http.StatusCreated || res.Replay || res.Attempts != 1 || res.Key != got.key {
				t.Errorf("result status %d replay %v attempts %d key %q, want 201 false 1 %q",
					res.StatusCode, res.Replay, res.Attempts, res.Key, got.key)
			}
			r := res.Receipt
			wantTime := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
			if r.Status != "accepted" || r.Symbol != "MSFT" || r.Side != client.Buy || r.Quantity != 100 || !r.AcceptedAt.Equal(wantTime) {
				t.Errorf("receipt = %+v, want accepted MSFT buy 100 at %s", r, wantTime)
			}
			if _, err := uuid.Parse(r.OrderID); err != nil {
				t.Errorf("OrderID = %q, want a UUID", r.OrderID)
			}
			var echoed client.Receipt
			if err := json.Unmarshal(res.Raw, &echoed); err != nil || echoed != r {
				t.Errorf("Raw = %s, want the receipt's JSON", res.Raw)
			}
			if waits := s.recorded(); len(waits) != 0 {
				t.Errorf("waits = %v, want none", waits)
			}
		})
	}
}

func TestSubmitMintsAKeyPerOrder(t *testing.T) {
	w := newWorker(t, "")
	c, _ := newClient(w, nil)
	first, err := c.Submit(t.Context(), msft)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Submit(t.Context(), msft)
	if err != nil {
		t.Fatal(err)
	}
	if first.Key == second.Key {
		t.Errorf("both orders were sent under key %q, want one key per order", first.Key)
	}
	if first.Receipt.OrderID == second.Receipt.OrderID || second.Replay {
		t.Errorf("second order replay %v id %s, want a second order", second.Replay, second.Receipt.OrderID)
	}
}

func TestSubmitWithKeyReplays(t *testing.T) {
	w := newWorker(t, "")
	c, _ := newClient(w, nil)
	first, err := c.SubmitWithKey(t.Context(), "order-42", msft)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.SubmitWithKey(t.Context(), "order-42", msft)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replay || again.StatusCode != http.StatusOK {
		t.Errorf("retry replay %v status %d, want true 200", again.Replay, again.StatusCode)
	}
	if string(again.Raw) != string(first.Raw) {
		t.Errorf("replayed receipt = %s, want %s byte for byte", again.Raw, first.Raw)
	}
	if again.Receipt != first.Receipt {
		t.Errorf("replayed receipt = %+v, want %+v", again.Receipt, first.Receipt)
	}
	wantSameKey(t, w, 2, "order-42")
}

func TestRetriesUnderTheSameKey(t *testing.T) {
	unavailable := fail(503, "storage_unavailable", "Retry-After", "1")
	inProgress := func(rw http.ResponseWriter, r *http.Request) { writeInProgress(rw) }
	tests := []struct {
		name   string
		script []step
		// wantAttempts is the client's count; net/http itself resends a
		// request whose reused connection closes before any response, as it
		// does for requests with an Idempotency-Key, so the worker may see
		// one more.
		wantAttempts int
	}{
		{"503 storage_unavailable, then placed", []step{unavailable}, 2},
		{"503 outcome_unknown, then placed", []step{fail(503, "outcome_unknown", "Retry-After", "2")}, 2},
		{"409 in_progress twice, then placed", []step{inProgress, inProgress}, 3},
		{"dropped connection, then placed", []step{drop}, 2},
		{"response cut off mid-body, then placed", []step{truncate}, 2},
		{"503 without a problem body, then placed", []step{raw(503, "text/html", "<h1>busy</h1>")}, 2},
		{"every retryable failure in turn, then placed", []step{unavailable, inProgress, drop, truncate}, 4},
		{"502 from a proxy, then placed", []step{raw(502, "text/html", "<h1>Bad gateway</h1>")}, 2},
		{"500 internal_error, then placed", []step{fail(500, "internal_error")}, 2},
		{"500 from the platform, then placed", []step{raw(500, "text/html", "<h1>Worker threw exception</h1>")}, 2},
		{"504 from a proxy, then placed", []step{raw(504, "text/plain", "gateway timeout")}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "", tc.script...)
			c, s := newClient(w, &client.Options{MaxAttempts: 10})
			res, err := c.SubmitWithKey(t.Context(), "k-1", msft)
			if err != nil {
				t.Fatalf("SubmitWithKey: %v", err)
			}
			if res.Attempts != tc.wantAttempts || res.StatusCode != http.StatusCreated || res.Replay {
				t.Errorf("attempts %d status %d replay %v, want %d 201 false", res.Attempts, res.StatusCode, res.Replay, tc.wantAttempts)
			}
			wantSameKey(t, w, len(tc.script)+1, "k-1")
			if got := len(s.recorded()); got != tc.wantAttempts-1 {
				t.Errorf("waited %d times, want %d", got, tc.wantAttempts-1)
			}
		})
	}
}

func TestDroppedConnectionWithBodyIsRetried(t *testing.T) {
	// The dropped request's body must be sent again in full on the retry.
	w := newWorker(t, "", drop)
	c, _ := newClient(w, nil)
	if _, err := c.SubmitWithKey(t.Context(), "k-drop", msft); err != nil {
		t.Fatal(err)
	}
	reqs := w.requests()
	if len(reqs) != 2 {
		t.Fatalf("worker saw %d requests, want 2", len(reqs))
	}
	if reqs[0].body != reqs[1].body || reqs[0].key != reqs[1].key {
		t.Errorf("retry = %+v, want the same key and body as %+v", reqs[1], reqs[0])
	}
}

func TestFinalErrorsAreNotRetried(t *testing.T) {
	tests := []struct {
		name         string
		step         step
		wantStatus   int
		wantCode     string
		wantSentinel error // nil: none
		wantRetry    time.Duration
	}{
		{"422 invalid_order", fail(422, "invalid_order"), 422, "invalid_order", client.ErrInvalidOrder, 0},
		{"422 idempotency_key_reused", fail(422, "idempotency_key_reused"), 422, "idempotency_key_reused", client.ErrKeyReused, 0},
		{"400 missing_idempotency_key", fail(400, "missing_idempotency_key"), 400, "missing_idempotency_key", client.ErrInvalidKey, 0},
		{"400 invalid_idempotency_key", fail(400, "invalid_idempotency_key"), 400, "invalid_idempotency_key", client.ErrInvalidKey, 0},
		{"401 unauthorized", fail(401, "unauthorized", "WWW-Authenticate", `Bearer realm="edge-orders"`), 401, "unauthorized", client.ErrUnauthorized, 0},
		{"405 method_not_allowed", fail(405, "method_not_allowed", "Allow", "GET, HEAD, POST"), 405, "method_not_allowed", nil, 0},
		{"413 body_too_large", fail(413, "body_too_large"), 413, "body_too_large", nil, 0},
		{"429 rate_limited, even with Retry-After", fail(429, "rate_limited", "Retry-After", "30"), 429, "rate_limited", client.ErrRateLimited, 30 * time.Second},
		{"500 misconfigured", fail(500, "misconfigured"), 500, "misconfigured", nil, 0},
		{"501 page from a proxy", raw(501, "text/html", "<h1>Not implemented</h1>"), 501, "", nil, 0},
		{"404 on a POST", fail(404, "not_found"), 404, "not_found", client.ErrNotFound, 0},
		{"503 outcome_unresolved, though a 503", fail(503, "outcome_unresolved", "Retry-After", "1"), 503, "outcome_unresolved", client.ErrOutcomeUnresolved, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "", tc.step)
			c, s := newClient(w, nil)
			res, err := c.SubmitWithKey(t.Context(), "k-final", msft)
			if err == nil {
				t.Fatalf("SubmitWithKey = %+v, want an error", res)
			}
			e := asError(t, err)
			if e.StatusCode != tc.wantStatus || e.Problem.Code != tc.wantCode || e.Attempts != 1 || e.Key != "k-final" || e.Method != http.MethodPost {
				t.Errorf("error status %d code %q attempts %d key %q method %s, want %d %q 1 k-final POST",
					e.StatusCode, e.Problem.Code, e.Attempts, e.Key, e.Method, tc.wantStatus, tc.wantCode)
			}
			if tc.wantSentinel != nil && !errors.Is(err, tc.wantSentinel) {
				t.Errorf("errors.Is(%v, %v) = false, want true", err, tc.wantSentinel)
			}
			if tc.wantSentinel == nil {
				for _, s := range []error{client.ErrInvalidOrder, client.ErrKeyReused, client.ErrInvalidKey, client.ErrUnauthorized,
					client.ErrRateLimited, client.ErrNotFound, client.ErrInProgress, client.ErrStorageUnavailable} {
					if errors.Is(err, s) {
						t.Errorf("errors.Is(%v, %v) = true, want false", err, s)
					}
				}
			}
			if e.RetryAfter != tc.wantRetry {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tc.wantRetry)
			}
			if client.IsRetryable(err) || e.Retryable() {
				t.Errorf("IsRetryable(%v) = true, want false", err)
			}
			wantSameKey(t, w, 1, "k-final")
			if waits := s.recorded(); len(waits) != 0 {
				t.Errorf("waits = %v, want none", waits)
			}
		})
	}
}

func TestProblemFields(t *testing.T) {
	w := newWorker(t, "", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/problem+json")
		rw.WriteHeader(422)
		rw.Write([]byte(`{"type":"tag:edge-orders,2026:invalid_order","title":"Invalid order","status":422,"detail":"The body must be...","error":"invalid_order"}`))
	})
	c, _ := newClient(w, nil)
	_, err := c.SubmitWithKey(t.Context(), "k", msft)
	e := asError(t, err)
	want := client.Problem{Type: "tag:edge-orders,2026:invalid_order", Title: "Invalid order", Status: 422,
		Detail: "The body must be...", Code: "invalid_order"}
	if e.Problem != want {
		t.Errorf("Problem = %+v, want %+v", e.Problem, want)
	}
	if !strings.Contains(e.Error(), "invalid_order") || !strings.Contains(e.Error(), `"k"`) {
		t.Errorf("Error() = %q, want the code and the key", e.Error())
	}
}

func TestWorkerBehavioursComeBackTyped(t *testing.T) {
	t.Run("an invalid order is ErrInvalidOrder", func(t *testing.T) {
		w := newWorker(t, "")
		c, _ := newClient(w, nil)
		_, err := c.Submit(t.Context(), client.Order{Symbol: "MSFT", Side: "hold", Quantity: 1})
		if !errors.Is(err, client.ErrInvalidOrder) {
			t.Errorf("error = %v, want ErrInvalidOrder", err)
		}
	})
	t.Run("a key reused for another order is ErrKeyReused", func(t *testing.T) {
		w := newWorker(t, "")
		c, _ := newClient(w, nil)
		if _, err := c.SubmitWithKey(t.Context(), "k", msft); err != nil {
			t.Fatal(err)
		}
		_, err := c.SubmitWithKey(t.Context(), "k", client.Order{Symbol: "MSFT", Side: client.Sell, Quantity: 100})
		if !errors.Is(err, client.ErrKeyReused) {
			t.Errorf("error = %v, want ErrKeyReused", err)
		}
	})
	t.Run("a missing token is ErrUnauthorized with its challenge", func(t *testing.T) {
		w := newWorker(t, "secret-0123456789abcdef")
		c, _ := newClient(w, nil)
		_, err := c.Submit(t.Context(), msft)
		if !errors.Is(err, client.ErrUnauthorized) {
			t.Fatalf("error = %v, want ErrUnauthorized", err)
		}
		if got, want := asError(t, err).Header.Get("WWW-Authenticate"), `Bearer realm="edge-orders"`; got != want {
			t.Errorf("WWW-Authenticate = %q, want %q", got, want)
		}
	})
}

func TestConcurrentSubmitsPlaceOneOrder(t *testing.T) {
	w := newWorker(t, "")
	hold, placing := make(chan struct{}), make(chan struct{})
	w.gateway.hold, w.gateway.placing = hold, placing
	first := make(chan *client.Result, 1)
	go func() {
		c, _ := newClient(w, nil)
		res, err := c.SubmitWithKey(context.Background(), "shared", msft)
		if err != nil {
			t.Errorf("first SubmitWithKey: %v", err)
		}
		first <- res
	}()
	select {
	case <-placing:
	case res := <-first:
		// It never reached the gateway (a Worker that answers 500, say):
		// nothing would ever release the wait.
		t.Fatalf("the first submission ended before its order reached the gateway: %+v", res)
	}
	// The second submission meets the first's claim (409); its wait lets the
	// first finish, and its retry replays the first's receipt.
	var firstRes *client.Result
	c := mustNew(t, w.srv.URL, &client.Options{Sleep: func(ctx context.Context, d time.Duration) error {
		if firstRes == nil {
			close(hold)
			firstRes = <-first
		}
		return nil
	}})
	second, err := c.SubmitWithKey(t.Context(), "shared", msft)
	if err != nil {
		t.Fatalf("second SubmitWithKey: %v", err)
	}
	if firstRes == nil {
		t.Fatal("the second submission never waited, want a 409 first")
	}
	if second.Attempts != 2 || !second.Replay {
		t.Errorf("second attempts %d replay %v, want 2 true", second.Attempts, second.Replay)
	}
	if string(second.Raw) != string(firstRes.Raw) {
		t.Errorf("second receipt = %s, want the first's %s", second.Raw, firstRes.Raw)
	}
	wantSameKey(t, w, 3, "shared")
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	tests := []struct {
		name         string
		step         step
		wantSentinel error
	}{
		{"503 every time is ErrStorageUnavailable", fail(503, "storage_unavailable", "Retry-After", "1"), client.ErrStorageUnavailable},
		{"409 every time is ErrInProgress", func(rw http.ResponseWriter, r *http.Request) { writeInProgress(rw) }, client.ErrInProgress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "", repeat(3, tc.step)...)
			c, s := newClient(w, &client.Options{MaxAttempts: 3})
			_, err := c.SubmitWithKey(t.Context(), "k-max", msft)
			if !errors.Is(err, tc.wantSentinel) {
				t.Fatalf("error = %v, want %v", err, tc.wantSentinel)
			}
			if e := asError(t, err); e.Attempts != 3 {
				t.Errorf("Attempts = %d, want 3", e.Attempts)
			}
			if !client.IsRetryable(err) {
				t.Errorf("IsRetryable(%v) = false, want true", err)
			}
			wantSameKey(t, w, 3, "k-max")
			if got := len(s.recorded()); got != 2 {
				t.Errorf("waited %d times, want 2", got)
			}
		})
	}
}

func TestTransportFailureWrapsTheCause(t *testing.T) {
	w := newWorker(t, "", repeat(3, drop)...)
	c, _ := newClient(w, &client.Options{MaxAttempts: 3})
	_, err := c.SubmitWithKey(t.Context(), "k-net", msft)
	e := asError(t, err)
	if e.StatusCode != 0 || e.Attempts != 3 {
		t.Errorf("status %d attempts %d, want 0 3", e.StatusCode, e.Attempts)
	}
	var urlErr *url.Error
	if !errors.As(err, &urlErr) {
		t.Errorf("error = %v, want it to wrap the *url.Error", err)
	}
	if !client.IsRetryable(err) {
		t.Errorf("IsRetryable(%v) = false, want true: the outcome is unknown", err)
	}
	wantSameKey(t, w, 3, "k-net")
}

func TestUnreachableWorker(t *testing.T) {
	w := newWorker(t, "")
	w.srv.Close()
	c, _ := newClient(w, &client.Options{MaxAttempts: 2})
	_, err := c.Submit(t.Context(), msft)
	if e := asError(t, err); e.StatusCode != 0 || e.Attempts != 2 || e.Err == nil {
		t.Errorf("error status %d attempts %d cause %v, want 0 2 and a cause", e.StatusCode, e.Attempts, e.Err)
	}
}

func TestWaits(t *testing.T) {
	// now is a whole second, as HTTP dates are.
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name         string
		step         step
		base, max    time.Duration
		wantMin      time.Duration
		wantMax      time.Duration
		wantAttempts int
	}{
		{"503's Retry-After seconds are the least wait", fail(503, "storage_unavailable", "Retry-After", "7"),
			time.Millisecond, time.Millisecond, 7 * time.Second, 7 * time.Second, 2},
		{"503's Retry-After date is the least wait", fail(503, "storage_unavailable", "Retry-After", now.Add(9*time.Second).Format(http.TimeFormat)),
			time.Millisecond, time.Millisecond, 9 * time.Second, 9 * time.Second, 2},
		{"503's Retry-After date in the past leaves the backoff", fail(503, "storage_unavailable", "Retry-After", now.Add(-time.Hour).Format(http.TimeFormat)),
			time.Second, time.Second, 0, time.Second, 2},
		{"a longer backoff beats a shorter Retry-After on 503", fail(503, "storage_unavailable", "Retry-After", "0"),
			time.Minute, time.Minute, 0, time.Minute, 2},
		{"409's retryAfter in the body caps the backoff", raw(409, "application/problem+json",
			`{"type":"tag:edge-orders,2026:in_progress","title":"t","status":409,"detail":"d","error":"in_progress","retryAfter":2}`),
			time.Hour, time.Hour, 0, 2 * time.Second, 2},
		{"409's Retry-After header caps the backoff", fail(409, "in_progress", "Retry-After", "1"),
			time.Hour, time.Hour, 0, time.Second, 2},
		{"409 without a hint backs off", fail(409, "in_progress"),
			50 * time.Millisecond, time.Second, 0, 50 * time.Millisecond, 2},
		{"409 with a hint longer than the backoff keeps the backoff", func(rw http.ResponseWriter, r *http.Request) { writeInProgress(rw) },
			50 * time.Millisecond, time.Second, 0, 50 * time.Millisecond, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for range 20 { // the backoff is random: try it more than once
				w := newWorker(t, "", tc.step)
				c, s := newClient(w, &client.Options{BaseDelay: tc.base, MaxDelay: tc.max, Now: func() time.Time { return now }})
				res, err := c.SubmitWithKey(t.Context(), "k-wait", msft)
				if err != nil {
					t.Fatalf("SubmitWithKey: %v", err)
				}
				if res.Attempts != tc.wantAttempts {
					t.Errorf("attempts = %d, want %d", res.Attempts, tc.wantAttempts)
				}
				waits := s.recorded()
				if len(waits) != 1 || waits[0] < tc.wantMin || waits[0] > tc.wantMax {
					t.Fatalf("waits = %v, want one in [%v, %v]", waits, tc.wantMin, tc.wantMax)
				}
			}
		})
	}
}

func TestRetryAfterCappedByDeadline(t *testing.T) {
	tests := []struct {
		name         string
		retryAfter   string
		deadline     time.Duration
		wantWaits    []time.Duration
		wantErr      error // nil: placed
		wantAttempts int
	}{
		{"a wait past the deadline stops at once with the last error", "60", 10 * time.Second, nil, client.ErrStorageUnavailable, 1},
		{"a wait within the deadline is waited", "2", 10 * time.Second, []time.Duration{2 * time.Second}, nil, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "", fail(503, "storage_unavailable", "Retry-After", tc.retryAfter))
			c, s := newClient(w, &client.Options{BaseDelay: time.Millisecond})
			ctx, cancel := context.WithTimeout(t.Context(), tc.deadline)
			defer cancel()
			res, err := c.SubmitWithKey(ctx, "k-deadline", msft)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				e := asError(t, err)
				if e.Attempts != tc.wantAttempts || e.RetryAfter != time.Minute {
					t.Errorf("attempts %d RetryAfter %v, want %d 1m0s", e.Attempts, e.RetryAfter, tc.wantAttempts)
				}
			} else if res.Attempts != tc.wantAttempts {
				t.Errorf("attempts = %d, want %d", res.Attempts, tc.wantAttempts)
			}
			if waits := s.recorded(); !slices.Equal(waits, tc.wantWaits) {
				t.Errorf("waits = %v, want %v", waits, tc.wantWaits)
			}
		})
	}
}

func TestCancelWhileWaitingReturnsTheLastError(t *testing.T) {
	// The default sleep, with a wait (the longest there is) far longer than
	// the test, and a call timeout longer still: only the cancellation can
	// end the wait.
	w := newWorker(t, "", fail(503, "storage_unavailable", "Retry-After", strconv.Itoa(int(client.MaxRetryWait/time.Second))))
	c := mustNew(t, w.srv.URL, &client.Options{CallTimeout: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.SubmitWithKey(ctx, "k-cancel", msft)
	if !errors.Is(err, client.ErrStorageUnavailable) {
		t.Errorf("error = %v, want the last attempt's ErrStorageUnavailable", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("returned after %v, want soon after the cancellation", elapsed)
	}
	wantSameKey(t, w, 1, "k-cancel")
}

func TestBackoffIsJittered(t *testing.T) {
	// Eight 503s without Retry-After: each wait is full jitter under its
	// doubling ceiling, and they are not all alike.
	const base, maxDelay = 100 * time.Millisecond, 500 * time.Millisecond
	ceilings := []time.Duration{100, 200, 400, 500, 500, 500, 500, 500}
	var all []time.Duration
	for range 50 {
		w := newWorker(t, "", repeat(len(ceilings), fail(503, "storage_unavailable"))...)
		c, s := newClient(w, &client.Options{MaxAttempts: len(ceilings) + 1, BaseDelay: base, MaxDelay: maxDelay})
		if _, err := c.Submit(t.Context(), msft); err != nil {
			t.Fatal(err)
		}
		waits := s.recorded()
		if len(waits) != len(ceilings) {
			t.Fatalf("waits = %v, want %d", waits, len(ceilings))
		}
		for i, d := range waits {
			if ceiling := ceilings[i] * time.Millisecond; d < 0 || d > ceiling {
				t.Errorf("wait %d = %v, want in [0, %v]", i+1, d, ceiling)
			}
		}
		all = append(all, waits...)
	}
	slices.Sort(all)
	if len(slices.Compact(all)) < len(all)/2 {
		t.Errorf("waits have %d distinct values of %d, want them spread by jitter", len(slices.Compact(all)), len(all))
	}
}

func TestInvalidInputSendsNothing(t *testing.T) {
	tests := []struct {
		name  string
		key   string
		order client.Order
		want  error
	}{
		{"empty key", "", msft, client.ErrInvalidKey},
		{"key of 256 characters", strings.Repeat("k", client.MaxKeyBytes+1), msft, client.ErrInvalidKey},
		{"key with a control character", "k\n", msft, client.ErrInvalidKey},
		{"key with a non-ASCII character", "clé", msft, client.ErrInvalidKey},
		{"quantity above 2^53-1", "k", client.Order{Symbol: "MSFT", Side: client.Buy, Quantity: client.MaxQuantity + 1}, client.ErrQuantityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "")
			c, _ := newClient(w, nil)
			if _, err := c.SubmitWithKey(t.Context(), tc.key, tc.order); !errors.Is(err, tc.want) {
				t.Errorf("SubmitWithKey error = %v, want %v", err, tc.want)
			}
			if tc.want == client.ErrInvalidKey {
				if _, err := c.Lookup(t.Context(), tc.key); !errors.Is(err, tc.want) {
					t.Errorf("Lookup error = %v, want %v", err, tc.want)
				}
			}
			if n := len(w.requests()); n != 0 {
				t.Errorf("worker saw %d requests, want none", n)
			}
		})
	}
	t.Run("longest key and largest quantity are sent", func(t *testing.T) {
		w := newWorker(t, "")
		c, _ := newClient(w, nil)
		key := strings.Repeat("k", client.MaxKeyBytes)
		res, err := c.SubmitWithKey(t.Context(), key, client.Order{Symbol: "MSFT", Side: client.Sell, Quantity: client.MaxQuantity})
		if err != nil || res.Receipt.Quantity != client.MaxQuantity {
			t.Errorf("SubmitWithKey = %+v, %v; want quantity %d", res, err, int64(client.MaxQuantity))
		}
	})
}

func TestUnusableSuccess(t *testing.T) {
	tests := []struct {
		name string
		step step
		want error
	}{
		{"201 with an empty object", raw(201, "application/json", `{}`), client.ErrMalformedReceipt},
		{"201 with a page", raw(201, "text/html", `<p>ok</p>`), client.ErrMalformedReceipt},
		{"200 with a receipt missing acceptedAt", raw(200, "application/json", `{"orderId":"x","status":"accepted"}`, "Idempotent-Replay", "true"), client.ErrMalformedReceipt},
		{"204 No Content", raw(204, "application/json", ``), client.ErrUnexpectedResponse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "", tc.step)
			c, _ := newClient(w, nil)
			_, err := c.Submit(t.Context(), msft)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
			if client.IsRetryable(err) {
				t.Errorf("IsRetryable(%v) = true, want false", err)
			}
			if n := len(w.requests()); n != 1 {
				t.Errorf("worker saw %d requests, want 1", n)
			}
		})
	}
}

func TestProblemWithAWrongMemberKeepsItsCode(t *testing.T) {
	const unknown = `{"type":"tag:edge-orders,2026:outcome_unknown","status":503,"error":"outcome_unknown","orderId":"o-1","attempts":2,"nextAttemptAt":"2026-01-02T03:04:09.678Z"`
	tests := []struct {
		name string
		step step
		want error
		// wantProblem is the problem's members that survive; nil: not checked.
		wantProblem *client.Problem
	}{
		{"retryAfter that is not a number", raw(409, "application/problem+json",
			`{"type":"tag:edge-orders,2026:in_progress","status":409,"error":"in_progress","retryAfter":"soon"}`), client.ErrInProgress, nil},
		{"nextAttemptAt that is not a time", raw(503, "application/problem+json", strings.Replace(unknown, "2026-01-02T03:04:09.678Z", "soon", 1)+`}`),
			client.ErrOutcomeUnknown, &client.Problem{Type: "tag:edge-orders,2026:outcome_unknown", Status: 503, Code: "outcome_unknown", OrderID: "o-1", Attempts: 2}},
		{"nextAttemptAt that is a number", raw(503, "application/problem+json", strings.Replace(unknown, `"2026-01-02T03:04:09.678Z"`, "5", 1)+`}`),
			client.ErrOutcomeUnknown, &client.Problem{Type: "tag:edge-orders,2026:outcome_unknown", Status: 503, Code: "outcome_unknown", OrderID: "o-1", Attempts: 2}},
		{"attempts that is not a number", raw(503, "application/problem+json", strings.Replace(unknown, `"attempts":2`, `"attempts":"two"`, 1)+`}`),
			client.ErrOutcomeUnknown, &client.Problem{Type: "tag:edge-orders,2026:outcome_unknown", Status: 503, Code: "outcome_unknown", OrderID: "o-1",
				NextAttemptAt: time.Date(2026, 1, 2, 3, 4, 9, 678e6, time.UTC)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "", tc.step)
			c, _ := newClient(w, &client.Options{MaxAttempts: 1})
			_, err := c.Submit(t.Context(), msft)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
			if got := asError(t, err).Problem; tc.wantProblem != nil && got != *tc.wantProblem {
				t.Errorf("Problem = %+v, want %+v", got, *tc.wantProblem)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	inProgress := func(rw http.ResponseWriter, r *http.Request) { writeInProgress(rw) }
	tests := []struct {
		name         string
		place        bool // submit under the key first
		script       []step
		wantErr      error // nil: the receipt
		wantAttempts int
	}{
		{"stored receipt is returned as a replay", true, nil, nil, 1},
		{"unknown key is ErrNotFound", false, nil, client.ErrNotFound, 1},
		{"key in progress is waited for", true, []step{inProgress}, nil, 2},
		{"key in progress through every attempt is ErrInProgress", false, repeat(3, inProgress), client.ErrInProgress, 3},
		{"503 is retried", true, []step{fail(503, "storage_unavailable", "Retry-After", "1")}, nil, 2},
		{"order being settled is retried", true, []step{fail(503, "outcome_unknown", "Retry-After", "1")}, nil, 2},
		{"order being settled through every attempt is ErrOutcomeUnknown", false, repeat(3, fail(503, "outcome_unknown", "Retry-After", "1")), client.ErrOutcomeUnknown, 3},
		{"unresolved order is ErrOutcomeUnresolved at once", false, repeat(3, fail(503, "outcome_unresolved", "Retry-After", "1")), client.ErrOutcomeUnresolved, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "tok-0123456789abcdef")
			c, _ := newClient(w, &client.Options{Token: "tok-0123456789abcdef", MaxAttempts: 3})
			var placed *client.Result
			if tc.place {
				var err error
				if placed, err = c.SubmitWithKey(t.Context(), "k-look", msft); err != nil {
					t.Fatal(err)
				}
			}
			w.mu.Lock()
			w.script = tc.script
			w.mu.Unlock()

			res, err := c.Lookup(t.Context(), "k-look")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Lookup error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if e := asError(t, err); e.Attempts != tc.wantAttempts || e.Method != http.MethodGet {
					t.Errorf("attempts %d method %s, want %d GET", e.Attempts, e.Method, tc.wantAttempts)
				}
			} else {
				if string(res.Raw) != string(placed.Raw) || !res.Replay || res.StatusCode != 200 || res.Attempts != tc.wantAttempts {
					t.Errorf("Lookup = %s replay %v status %d attempts %d, want %s true 200 %d",
						res.Raw, res.Replay, res.StatusCode, res.Attempts, placed.Raw, tc.wantAttempts)
				}
			}
			for _, r := range w.requests()[len(w.requests())-tc.wantAttempts:] {
				if r.method != http.MethodGet || r.body != "" || r.key != "k-look" || r.authorization != "Bearer tok-0123456789abcdef" {
					t.Errorf("lookup request = %+v, want GET with no body, the key and the token", r)
				}
			}
			if n, want := w.gateway.orders(), btoi(tc.place); n != want {
				t.Errorf("the worker placed %d orders, want %d: a lookup creates nothing", n, want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestGatewayOutcomes drives the real handler's answers for what the
// order-management system says: an unknown outcome is retried under the
// same key until it settles, and a rejection is final, ErrRejected, with
// the refused order and the reason.
func TestGatewayOutcomes(t *testing.T) {
	t.Run("an unknown outcome is retried under the same key", func(t *testing.T) {
		w := newWorker(t, "")
		w.gateway.answers = []error{errors.New("oms: no answer"), errors.New("oms: no answer")}
		c, _ := newClient(w, nil)
		res, err := c.SubmitWithKey(t.Context(), "unknown", msft)
		if err != nil {
			t.Fatalf("SubmitWithKey: %v", err)
		}
		if res.Attempts != 3 || res.StatusCode != 201 || w.gateway.orders() != 1 {
			t.Errorf("attempts %d status %d orders %d, want 3 201 1", res.Attempts, res.StatusCode, w.gateway.orders())
		}
		wantSameKey(t, w, 3, "unknown")
	})
	t.Run("a rejection is final and names the order", func(t *testing.T) {
		w := newWorker(t, "")
		w.gateway.answers = []error{&intake.Rejection{Reason: "symbol halted"}}
		c, _ := newClient(w, nil)
		_, err := c.SubmitWithKey(t.Context(), "refused", msft)
		e := asError(t, err)
		if !errors.Is(err, client.ErrRejected) || client.IsRetryable(err) || e.Attempts != 1 {
			t.Fatalf("error = %v (retryable %v, attempts %d), want a final ErrRejected after one attempt", err, client.IsRetryable(err), e.Attempts)
		}
		if e.Problem.Detail != "symbol halted" || e.Problem.OrderID == "" {
			t.Errorf("problem = %+v, want the reason and the refused order's id", e.Problem)
		}
		_, again := c.SubmitWithKey(t.Context(), "refused", msft)
		if !errors.Is(again, client.ErrRejected) || asError(t, again).Problem.OrderID != e.Problem.OrderID {
			t.Errorf("retry = %v, want the same rejection", again)
		}
	})
}

// TestUnsettledOutcomes drives the real handler through an order whose
// outcome is unknown: while the Worker settles it, the error names the
// order, the attempts and the next attempt, and the client retries; once
// settled, a lookup returns the receipt; once unresolved, the client
// returns ErrOutcomeUnresolved at once, and a later submission under the
// key still reaches the order-management system with the same order id.
func TestUnsettledOutcomes(t *testing.T) {
	lost := errors.New("oms: no answer")
	// The worker's clock starts at acceptedAt; the settler is due a
	// second after the first lost answer.
	stamp, _ := time.Parse(time.RFC3339Nano, acceptedAt)

	t.Run("an order being settled is ErrOutcomeUnknown with its order, attempts and next attempt", func(t *testing.T) {
		w := newWorker(t, "")
		w.gateway.answers = []error{lost}
		c, s := newClient(w, &client.Options{MaxAttempts: 1})
		_, submitErr := c.SubmitWithKey(t.Context(), "k-unknown", msft)
		_, lookupErr := c.Lookup(t.Context(), "k-unknown")
		for name, err := range map[string]error{"SubmitWithKey": submitErr, "Lookup": lookupErr} {
			if !errors.Is(err, client.ErrOutcomeUnknown) || errors.Is(err, client.ErrOutcomeUnresolved) || !client.IsRetryable(err) {
				t.Fatalf("%s error = %v, want a retryable ErrOutcomeUnknown, not ErrOutcomeUnresolved", name, err)
			}
			e := asError(t, err)
			if _, uerr := uuid.Parse(e.Problem.OrderID); uerr != nil || e.Problem.Attempts != 1 ||
				!e.Problem.NextAttemptAt.Equal(stamp.Add(time.Second)) || e.RetryAfter != time.Second {
				t.Errorf("%s problem %+v RetryAfter %v, want an order id, 1 attempt, the next at %v, and 1s",
					name, e.Problem, e.RetryAfter, stamp.Add(time.Second))
			}
			if strings.Contains(string(e.Body), lost.Error()) {
				t.Errorf("%s body %s has the gateway's error", name, e.Body)
			}
		}
		if a, b := asError(t, submitErr).Problem.OrderID, asError(t, lookupErr).Problem.OrderID; a != b {
			t.Errorf("lookup order id %s, want the submission's %s", b, a)
		}
		if waits := s.recorded(); len(waits) != 0 {
			t.Errorf("waits = %v, want none with MaxAttempts 1", waits)
		}
	})

	t.Run("a lookup waits for the Worker to settle the order and returns the receipt", func(t *testing.T) {
		w := newWorker(t, "")
		w.gateway.answers = []error{lost}
		c, _ := newClient(w, &client.Options{MaxAttempts: 1})
		_, err := c.SubmitWithKey(t.Context(), "k-settled", msft)
		orderID := asError(t, err).Problem.OrderID
		var waits []time.Duration
		looker := mustNew(t, w.srv.URL, &client.Options{MaxAttempts: 3, Sleep: func(ctx context.Context, d time.Duration) error {
			waits = append(waits, d)
			w.advance(d)
			if st := w.settle(t, "k-settled"); !st.Final || st.Unresolved {
				t.Errorf("Settle = %+v, want the outcome settled", st)
			}
			return nil
		}})
		res, err := looker.Lookup(t.Context(), "k-settled")
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		if res.Receipt.OrderID != orderID || !res.Replay || res.Attempts != 2 {
			t.Errorf("Lookup = order %s replay %v attempts %d, want order %s, a replay, 2 attempts", res.Receipt.OrderID, res.Replay, res.Attempts, orderID)
		}
		if len(waits) != 1 || waits[0] < time.Second {
			t.Errorf("waits = %v, want one of at least the Retry-After, 1s", waits)
		}
		if n := w.gateway.orders(); n != 1 {
			t.Errorf("the order-management system accepted %d orders, want 1", n)
		}
	})

	t.Run("an unresolved order is returned at once, and the key keeps its order id", func(t *testing.T) {
		w := newWorker(t, "")
		w.gateway.answers = []error{lost, lost, lost} // the client's, the settler's last, the retry's
		c, s := newClient(w, &client.Options{MaxAttempts: 5})
		first, _ := newClient(w, &client.Options{MaxAttempts: 1})
		_, err := first.SubmitWithKey(t.Context(), "k-unresolved", msft)
		orderID := asError(t, err).Problem.OrderID
		w.advance(intake.DefaultSettleMaxAge)
		if st := w.settle(t, "k-unresolved"); !st.Unresolved {
			t.Fatalf("Settle = %+v, want the key unresolved", st)
		}

		sent := len(w.requests())
		_, lookupErr := c.Lookup(t.Context(), "k-unresolved")
		_, submitErr := c.SubmitWithKey(t.Context(), "k-unresolved", msft)
		for _, tc := range []struct {
			name         string
			err          error
			wantAttempts int
		}{{"Lookup", lookupErr, 2}, {"SubmitWithKey", submitErr, 3}} {
			if !errors.Is(tc.err, client.ErrOutcomeUnresolved) || !errors.Is(tc.err, client.ErrOutcomeUnknown) || client.IsRetryable(tc.err) {
				t.Fatalf("%s error = %v, want ErrOutcomeUnresolved, matching ErrOutcomeUnknown too, not retryable", tc.name, tc.err)
			}
			e := asError(t, tc.err)
			if e.Attempts != 1 || e.Problem.OrderID != orderID || e.Problem.Attempts != tc.wantAttempts || !e.Problem.NextAttemptAt.IsZero() {
				t.Errorf("%s sent %d request(s), problem %+v; want 1, order %s, %d attempts, no next attempt",
					tc.name, e.Attempts, e.Problem, orderID, tc.wantAttempts)
			}
		}
		if n := len(w.requests()) - sent; n != 2 {
			t.Errorf("worker saw %d requests, want 2: one lookup, one submission", n)
		}
		if waits := s.recorded(); len(waits) != 0 {
			t.Errorf("waits = %v, want none", waits)
		}

		res, err := c.SubmitWithKey(t.Context(), "k-unresolved", msft)
		if err != nil {
			t.Fatalf("SubmitWithKey once the order-management system answers: %v", err)
		}
		if res.Receipt.OrderID != orderID || res.StatusCode != 201 || w.gateway.orders() != 1 {
			t.Errorf("receipt for order %s status %d, %d order(s) accepted; want order %s, 201, 1",
				res.Receipt.OrderID, res.StatusCode, w.gateway.orders(), orderID)
		}
	})
}

// TestLookupExpiresAt checks that a lookup's result says when the receipt
// expires, as the Worker over the ledger tells it, and a submission's
// never; that a stored rejection's error says it too; and that a header
// that is no such date is no expiry.
func TestLookupExpiresAt(t *testing.T) {
	// The test Worker has an OMS: a key is kept past every settle attempt
	// (a day, the default) and a receipt's TTL (a day) from its acceptance.
	want, _ := time.Parse(time.RFC3339Nano, "2026-01-04T03:04:05.678Z")
	w := newWorker(t, "")
	c, _ := newClient(w, nil)
	placed, err := c.SubmitWithKey(t.Context(), "k-expiry", msft)
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := c.SubmitWithKey(t.Context(), "k-expiry", msft)
	if err != nil {
		t.Fatal(err)
	}
	for name, res := range map[string]*client.Result{"a new order": placed, "a replay": replayed} {
		if !res.ExpiresAt.IsZero() {
			t.Errorf("%s: ExpiresAt = %v, want zero: a submission is never told", name, res.ExpiresAt)
		}
	}
	looked, err := c.Lookup(t.Context(), "k-expiry")
	if err != nil {
		t.Fatal(err)
	}
	if !looked.ExpiresAt.Equal(want) || string(looked.Raw) != string(placed.Raw) {
		t.Errorf("Lookup = %s expiring %v, want %s expiring %v", looked.Raw, looked.ExpiresAt, placed.Raw, want)
	}

	w.mu.Lock()
	w.script = []step{
		fail(422, "order_rejected", "Idempotent-Replay", "true", "Idempotency-Expires", "2026-01-04T03:04:05.678Z"),
		raw(200, "application/json", string(placed.Raw), "Idempotent-Replay", "true", "Idempotency-Expires", "tomorrow"),
	}
	w.mu.Unlock()
	_, err = c.Lookup(t.Context(), "k-expiry")
	if e := asError(t, err); !errors.Is(err, client.ErrRejected) || !e.ExpiresAt.Equal(want) {
		t.Errorf("a stored rejection: %v expiring %v, want ErrRejected expiring %v", err, e.ExpiresAt, want)
	}
	if res, err := c.Lookup(t.Context(), "k-expiry"); err != nil || !res.ExpiresAt.IsZero() {
		t.Errorf("Idempotency-Expires: tomorrow = %+v, %v; want the receipt, no expiry", res, err)
	}
}

func TestKeysAreSentAsTheStringThatNamesThem(t *testing.T) {
	tests := []struct {
		name, key, wantHeader string
	}{
		{"a plain key is quoted", "order-42", `"order-42"`},
		{"a key in quotes keeps its quotes", `"x"`, `"\"x\""`},
		{"a backslash is escaped", `a\b`, `"a\\b"`},
		{"a comma stays in the one key", "a,b", `"a,b"`},
		{"spaces at either end stay", " k ", `" k "`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "")
			c, _ := newClient(w, nil)
			res, err := c.SubmitWithKey(t.Context(), tc.key, msft)
			if err != nil {
				t.Fatalf("SubmitWithKey(%q): %v", tc.key, err)
			}
			if got := w.requests()[0].keyHeader; got != tc.wantHeader {
				t.Errorf("Idempotency-Key header = %s, want %s", got, tc.wantHeader)
			}
			// The Worker holds the order under exactly the caller's key.
			out, err := w.svc.Lookup(t.Context(), intake.Key{ID: tc.key})
			if err != nil || out.OrderID != res.Receipt.OrderID {
				t.Errorf("the Worker's lookup of %q = %+v, %v; want order %s", tc.key, out, err, res.Receipt.OrderID)
			}
			again, err := c.Lookup(t.Context(), tc.key)
			if err != nil || string(again.Raw) != string(res.Raw) {
				t.Errorf("Lookup(%q) = %v, want the receipt %s", tc.key, err, res.Raw)
			}
		})
	}
}

// TestARetryAfterTooLargeForAnInt64IsStillCapped: RFC 9110's
// delay-seconds is any run of digits, and the client caps every
// Retry-After at MaxRetryWait; but one past an int64 (20 digits) fails
// strconv.ParseInt, is no HTTP date either, and so counts as no
// Retry-After at all, and the client retried after its backoff alone, at
// once, where the JavaScript client waits MAX_RETRY_WAIT_MS.
func TestARetryAfterTooLargeForAnInt64IsStillCapped(t *testing.T) {
	const problem = `{"type":"tag:edge-orders,2026:storage_unavailable","title":"t","status":503,"detail":"d","error":"storage_unavailable"}`
	unavailable := raw(503, "application/problem+json", problem, "Retry-After", "99999999999999999999")
	w := newWorker(t, "", unavailable)
	c, _ := newClient(w, &client.Options{MaxAttempts: 1})
	_, err := c.SubmitWithKey(t.Context(), "k-huge-retry-after", msft)
	if got, want := asError(t, err).RetryAfter, client.MaxRetryWait; got != want {
		t.Errorf("RetryAfter = %v, want %v (the cap)", got, want)
	}

	// The first attempt meets the 503, the retry places the order.
	w = newWorker(t, "", unavailable)
	c, s := newClient(w, &client.Options{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, CallTimeout: 24 * time.Hour})
	if _, err := c.SubmitWithKey(t.Context(), "k-huge-retry-after", msft); err != nil {
		t.Fatalf("SubmitWithKey: %v", err)
	}
	if waits := s.recorded(); len(waits) != 1 || waits[0] != client.MaxRetryWait {
		t.Errorf("waits = %v, want one of %v: the server asked for more than the cap", waits, client.MaxRetryWait)
	}
}
