package client_test

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/client"
)

// TestTLSTrustFailuresAreNotRetried: a certificate the client does not
// trust fails the handshake before the request is sent, the same way on
// every attempt, so the call fails once, final, with the cause to find.
func TestTLSTrustFailuresAreNotRetried(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		served.Add(1)
		raw(http.StatusCreated, "application/json", receiptJSON)(rw, r)
	}))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	tests := []struct {
		name string
		url  string
		hc   *http.Client
	}{
		// http.DefaultClient trusts the system's roots, not httptest's.
		{name: "unknown authority", url: srv.URL},
		// srv.Client() trusts the certificate, which names 127.0.0.1 and
		// example.com but not this host.
		{name: "certificate for another host", url: "https://localhost" + port, hc: srv.Client()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &sleeper{}
			c := mustNew(t, tc.url, &client.Options{HTTPClient: tc.hc, Sleep: s.sleep, MaxAttempts: 5})
			_, err := c.SubmitWithKey(t.Context(), "k-tls", msft)
			e := asError(t, err)
			var verify *tls.CertificateVerificationError
			if !errors.As(err, &verify) {
				t.Errorf("error = %v, want it to wrap a *tls.CertificateVerificationError", err)
			}
			if e.Attempts != 1 || client.IsRetryable(err) || len(s.recorded()) != 0 {
				t.Errorf("attempts %d, retryable %v, waits %v; want 1 attempt, final, no wait", e.Attempts, client.IsRetryable(err), s.recorded())
			}
		})
	}
	if n := served.Load(); n != 0 {
		t.Errorf("the server answered %d requests, want none: no handshake completed", n)
	}
	t.Run("a trusted certificate is served", func(t *testing.T) {
		c := mustNew(t, srv.URL, &client.Options{HTTPClient: srv.Client()})
		if _, err := c.SubmitWithKey(t.Context(), "k-tls", msft); err != nil {
			t.Fatalf("SubmitWithKey with the server's own client: %v", err)
		}
	})
}

// TestNewRefusesAURLNoRetryCouldReach: a URL net/http could only fail to
// send to, on every attempt, fails at New instead, with an error that
// never shows the URL (its query may carry a secret).
func TestNewRefusesAURLNoRetryCouldReach(t *testing.T) {
	tests := []struct{ name, url string }{
		{"ftp scheme", "ftp://127.0.0.1/orders?secret=s3cr3t"},
		{"host and port without a scheme", "localhost:8787"},
		{"a path alone", "/orders"},
		{"no host", "http:///orders"},
		{"unparseable", "http://[::1/orders?secret=s3cr3t"},
		{"empty", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.New(tc.url, nil)
			if !errors.Is(err, client.ErrInvalidURL) || c != nil {
				t.Fatalf("New(%q) = %v, %v; want nil and ErrInvalidURL", tc.url, c, err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q shows the URL's query", err)
			}
		})
	}
	for _, ok := range []string{"http://127.0.0.1:8787", "https://orders.example.com/orders"} {
		if _, err := client.New(ok, nil); err != nil {
			t.Errorf("New(%q) = %v, want a client", ok, err)
		}
	}
}

// TestRequestsNameTheClient: every attempt, submission and lookup alike,
// carries the client's User-Agent and version.
func TestRequestsNameTheClient(t *testing.T) {
	w := newWorker(t, "", fail(503, "storage_unavailable"))
	c, _ := newClient(w, nil)
	if _, err := c.SubmitWithKey(t.Context(), "k-ua", msft); err != nil {
		t.Fatalf("SubmitWithKey: %v", err)
	}
	if _, err := c.Lookup(t.Context(), "k-ua"); err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	seen := w.requests()
	if len(seen) != 3 {
		t.Fatalf("worker saw %d requests, want 3 (a 503, the retry, the lookup)", len(seen))
	}
	for i, r := range seen {
		if got, want := r.userAgent, "edge-orders-go-client/"+client.Version; got != want {
			t.Errorf("request %d User-Agent = %q, want %q", i+1, got, want)
		}
	}
}

// TestVersionIsTheJavaScriptClients: the twins carry one version, so a
// User-Agent in a log names the same behaviour whichever client sent it.
func TestVersionIsTheJavaScriptClients(t *testing.T) {
	b, err := os.ReadFile("../clients/js/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Version != client.Version {
		t.Errorf("client.Version = %q, clients/js/package.json has %q: bump them together", client.Version, pkg.Version)
	}
}

// TestOnRetryIsToldBeforeEachWait: the hook hears of each retryable
// failure with the wait that follows it, before the wait, and not of the
// final answer.
func TestOnRetryIsToldBeforeEachWait(t *testing.T) {
	inProgress := func(rw http.ResponseWriter, r *http.Request) { writeInProgress(rw) }
	w := newWorker(t, "", fail(503, "storage_unavailable", "Retry-After", "2"), inProgress, drop)
	s := &sleeper{}
	var events []client.RetryEvent
	var waitsBefore []int // how many waits had begun when each event came
	c := mustNew(t, w.srv.URL, &client.Options{Sleep: s.sleep, MaxAttempts: 10, OnRetry: func(e client.RetryEvent) {
		events = append(events, e)
		waitsBefore = append(waitsBefore, len(s.recorded()))
	}})
	res, err := c.SubmitWithKey(t.Context(), "k-hook", msft)
	if err != nil {
		t.Fatalf("SubmitWithKey: %v", err)
	}
	waits := s.recorded()
	if len(events) != res.Attempts-1 || len(waits) != len(events) {
		t.Fatalf("%d events and %d waits for %d attempts, want one each per retry", len(events), len(waits), res.Attempts)
	}
	for i, e := range events {
		if e.Attempt != i+1 || e.Wait != waits[i] || waitsBefore[i] != i {
			t.Errorf("event %d: attempt %d wait %v (told after %d waits), want attempt %d wait %v told before wait %d", i, e.Attempt, e.Wait, waitsBefore[i], i+1, waits[i], i+1)
		}
		if e.Err == nil || !e.Err.Retryable() || e.Err.Key != "k-hook" || e.Err.Method != http.MethodPost {
			t.Errorf("event %d error = %+v, want a retryable *Error for POST k-hook", i, e.Err)
		}
	}
	if len(events) >= 3 {
		if !errors.Is(events[0].Err, client.ErrStorageUnavailable) || events[0].Wait < 2*time.Second {
			t.Errorf("event 1 = %v after %v, want storage_unavailable and its 2 s Retry-After", events[0].Err, events[0].Wait)
		}
		if !errors.Is(events[1].Err, client.ErrInProgress) || events[2].Err.StatusCode != 0 {
			t.Errorf("events 2 and 3 = %v, %v; want in_progress, then no response", events[1].Err, events[2].Err)
		}
	}
	t.Run("a final answer tells it nothing", func(t *testing.T) {
		w := newWorker(t, "", fail(422, "invalid_order"))
		told := 0
		c := mustNew(t, w.srv.URL, &client.Options{Sleep: (&sleeper{}).sleep, OnRetry: func(client.RetryEvent) { told++ }})
		if _, err := c.SubmitWithKey(t.Context(), "k-final", msft); !errors.Is(err, client.ErrInvalidOrder) || told != 0 {
			t.Errorf("error %v, hook told %d times; want ErrInvalidOrder and 0", err, told)
		}
	})
}
