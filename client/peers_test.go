package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-orders/edge-orders/client"
)

// receiptJSON is a receipt as another origin might send one after a
// redirect.
const receiptJSON = `{"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e","status":"accepted","symbol":"MSFT","side":"buy","quantity":100,"acceptedAt":"2026-01-02T03:04:05.678Z"}`

// elsewhere is a loopback server that answers every request with a
// receipt and records the Authorization of each: the place a redirect
// points to.
type elsewhere struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string
}

func newElsewhere(t *testing.T) *elsewhere {
	t.Helper()
	e := &elsewhere{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.auth = append(e.auth, r.Header.Get("Authorization"))
		e.mu.Unlock()
		raw(http.StatusCreated, "application/json", receiptJSON)(rw, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *elsewhere) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.auth...)
}

func TestRedirectsAreRefused(t *testing.T) {
	const token = "tok-0123456789abcdef"
	tests := []struct {
		name   string
		status int
		// tls serves the Worker over https, with the caller's own
		// http.Client that trusts it, and redirects to http on the same
		// host: net/http would keep the token there.
		tls       bool
		sameHost  bool // Location is a path on the Worker itself
		lookupToo bool
	}{
		{name: "307 to another origin that answers a receipt", status: http.StatusTemporaryRedirect, lookupToo: true},
		{name: "308 to another origin that answers a receipt", status: http.StatusPermanentRedirect},
		{name: "302 to another origin", status: http.StatusFound},
		{name: "301 to a path of the Worker", status: http.StatusMovedPermanently, sameHost: true},
		{name: "https to http on the same host, with the caller's http.Client", status: http.StatusTemporaryRedirect, tls: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := newElsewhere(t)
			var mu sync.Mutex
			moved := 0 // requests that followed a redirect to /moved
			handler := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/moved" {
					mu.Lock()
					moved++
					mu.Unlock()
					raw(http.StatusCreated, "application/json", receiptJSON)(rw, r)
					return
				}
				location := target.srv.URL + "/orders"
				if tc.sameHost {
					location = "/moved"
				}
				http.Redirect(rw, r, location, tc.status)
			})
			srv := httptest.NewUnstartedServer(handler)
			if tc.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)
			opts := &client.Options{Token: token, Sleep: (&sleeper{}).sleep}
			var callers *http.Client
			if tc.tls {
				// Same host, another port and scheme: http://127.0.0.1:B.
				if !strings.HasPrefix(target.srv.URL, "http://127.0.0.1:") || !strings.HasPrefix(srv.URL, "https://127.0.0.1:") {
					t.Fatalf("servers at %s and %s, want both on 127.0.0.1", srv.URL, target.srv.URL)
				}
				callers = srv.Client()
				opts.HTTPClient = callers
			}
			c := mustNew(t, srv.URL, opts)
			calls := []struct {
				name string
				call func() (*client.Result, error)
			}{{"SubmitWithKey", func() (*client.Result, error) { return c.SubmitWithKey(t.Context(), "k-redirect", msft) }}}
			if tc.lookupToo {
				calls = append(calls, struct {
					name string
					call func() (*client.Result, error)
				}{"Lookup", func() (*client.Result, error) { return c.Lookup(t.Context(), "k-redirect") }})
			}
			for _, call := range calls {
				res, err := call.call()
				if err == nil {
					t.Errorf("%s = receipt %s, want an error: a redirect is not the Worker's answer", call.name, res.Raw)
					continue
				}
				if !errors.Is(err, client.ErrUnexpectedResponse) {
					t.Errorf("%s error = %v, want ErrUnexpectedResponse", call.name, err)
				}
				e := asError(t, err)
				if got, want := e.StatusCode, tc.status; got != want {
					t.Errorf("%s StatusCode = %d, want %d", call.name, got, want)
				}
				if e.Header.Get("Location") == "" {
					t.Errorf("%s Error.Header has no Location, want the redirect's", call.name)
				}
				if client.IsRetryable(err) || e.Attempts != 1 {
					t.Errorf("%s retryable %v after %d attempts, want false after 1", call.name, client.IsRetryable(err), e.Attempts)
				}
				if strings.Contains(err.Error(), token) {
					t.Errorf("%s error %q carries the token", call.name, err)
				}
			}
			if got := target.seen(); len(got) != 0 {
				t.Errorf("the redirect's target saw %d requests (Authorization %q), want none", len(got), got)
			}
			mu.Lock()
			if moved != 0 {
				t.Errorf("the Worker's /moved saw %d requests, want none", moved)
			}
			mu.Unlock()
			if callers != nil && callers.CheckRedirect != nil {
				t.Error("the caller's http.Client had its CheckRedirect changed, want it left alone")
			}
		})
	}
}

// mustNew returns a client for url with opts, failing t if New refuses.
func mustNew(t *testing.T, url string, opts *client.Options) *client.Client {
	t.Helper()
	c, err := client.New(url, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func TestWaitsAreCapped(t *testing.T) {
	// now is a whole second, as HTTP dates are.
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const thousandDays = "86400000"
	unavailable := func(body string, header ...string) step {
		return raw(503, "application/problem+json", body, header...)
	}
	const problem = `{"type":"tag:edge-orders,2026:storage_unavailable","title":"t","status":503,"detail":"d","error":"storage_unavailable"`
	tests := []struct {
		name      string
		step      step
		base, max time.Duration
		// wantRetryAfter is Error.RetryAfter of the first answer alone.
		wantRetryAfter time.Duration
		wantWaitMin    time.Duration
	}{
		{"Retry-After of 1000 days in seconds", unavailable(problem+"}", "Retry-After", thousandDays),
			time.Millisecond, time.Millisecond, client.MaxRetryWait, client.MaxRetryWait},
		{"Retry-After as a date in the year 9999", unavailable(problem+"}", "Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"),
			time.Millisecond, time.Millisecond, client.MaxRetryWait, client.MaxRetryWait},
		{"the problem's retryAfter of 1000 days without the header", unavailable(problem + `,"retryAfter":` + thousandDays + "}"),
			time.Millisecond, time.Millisecond, client.MaxRetryWait, client.MaxRetryWait},
		{"a MaxDelay of an hour and no Retry-After", unavailable(problem + "}"),
			time.Hour, time.Hour, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "", tc.step)
			c, s := newClient(w, &client.Options{MaxAttempts: 1, Now: func() time.Time { return now }})
			_, err := c.SubmitWithKey(t.Context(), "k-capped", msft)
			if got := asError(t, err).RetryAfter; got != tc.wantRetryAfter {
				t.Errorf("RetryAfter = %v, want %v", got, tc.wantRetryAfter)
			}

			// With a call timeout far longer than the cap, the wait is the cap.
			w = newWorker(t, "", tc.step)
			c, s = newClient(w, &client.Options{BaseDelay: tc.base, MaxDelay: tc.max, CallTimeout: 24 * time.Hour, Now: func() time.Time { return now }})
			if _, err := c.SubmitWithKey(t.Context(), "k-capped", msft); err != nil {
				t.Fatalf("SubmitWithKey: %v", err)
			}
			waits := s.recorded()
			if len(waits) != 1 || waits[0] < tc.wantWaitMin || waits[0] > client.MaxRetryWait {
				t.Errorf("waits = %v, want one in [%v, %v]", waits, tc.wantWaitMin, client.MaxRetryWait)
			}
		})
	}
	t.Run("with the default call timeout a Retry-After past it ends the call at once", func(t *testing.T) {
		w := newWorker(t, "", unavailable(problem+"}", "Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"))
		c, s := newClient(w, nil)
		_, err := c.SubmitWithKey(t.Context(), "k-capped", msft)
		if !errors.Is(err, client.ErrStorageUnavailable) {
			t.Fatalf("error = %v, want ErrStorageUnavailable", err)
		}
		if got, want := asError(t, err).Attempts, 1; got != want {
			t.Errorf("attempts = %d, want %d", got, want)
		}
		if waits := s.recorded(); len(waits) != 0 {
			t.Errorf("waits = %v, want none: %v of waiting passes the %v call timeout", waits, client.MaxRetryWait, client.DefaultCallTimeout)
		}
	})
}

// stalled is a transport whose requests get no answer until their
// context ends.
type stalled struct{}

func (stalled) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

func TestCallTimeout(t *testing.T) {
	tests := []struct {
		name        string
		callTimeout time.Duration // 0: the default
		ctxTimeout  time.Duration // 0: none
		want        time.Duration
		wantNamed   bool // the error names the call timeout
	}{
		{"with default options a stalled answer ends at the default timeout", 0, 0, client.DefaultCallTimeout, true},
		{"a caller's longer CallTimeout is honoured", 2 * time.Minute, 0, 2 * time.Minute, true},
		{"a context deadline before the CallTimeout ends the call first", 0, 5 * time.Second, 5 * time.Second, false},
		{"a CallTimeout before the context deadline ends the call first", 10 * time.Second, time.Minute, 10 * time.Second, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if tc.ctxTimeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxTimeout)
					defer cancel()
				}
				c := mustNew(t, "http://127.0.0.1:1", &client.Options{HTTPClient: &http.Client{Transport: stalled{}}, CallTimeout: tc.callTimeout})
				start := time.Now()
				_, err := c.SubmitWithKey(ctx, "k-stalled", msft)
				if got := time.Since(start); got != tc.want {
					t.Errorf("the call ended after %v, want %v", got, tc.want)
				}
				if err == nil {
					t.Fatal("SubmitWithKey = a result, want an error")
				}
				e := asError(t, err)
				if !errors.Is(err, context.DeadlineExceeded) || e.StatusCode != 0 || !e.Retryable() {
					t.Errorf("error = %v (status %d, retryable %v), want a retryable context.DeadlineExceeded without a status", err, e.StatusCode, e.Retryable())
				}
				if named := strings.Contains(err.Error(), tc.want.String()+" timeout"); named != tc.wantNamed {
					t.Errorf("error %q names %v: %v, want %v", err, tc.want, named, tc.wantNamed)
				}
			})
		})
	}

	// The same over loopback: a Worker that never answers, and one that
	// stops in the middle of its body.
	stalls := []struct {
		name string
		stop func(rw http.ResponseWriter)
	}{
		{"no answer at all", func(rw http.ResponseWriter) {}},
		{"a body that stops after its headers", func(rw http.ResponseWriter) {
			rw.Header().Set("Content-Type", "application/json")
			rw.Header().Set("Content-Length", "500")
			rw.WriteHeader(http.StatusCreated)
			io.WriteString(rw, `{"orderId":`)
			http.NewResponseController(rw).Flush()
		}},
	}
	for _, tc := range stalls {
		t.Run("over loopback: "+tc.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				tc.stop(rw)
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) })
			const timeout = 200 * time.Millisecond
			c := mustNew(t, srv.URL, &client.Options{CallTimeout: timeout})
			start := time.Now()
			_, err := c.SubmitWithKey(t.Context(), "k-stalled", msft)
			if got := time.Since(start); got < timeout || got > 10*time.Second {
				t.Errorf("the call ended after %v, want soon after %v", got, timeout)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(fmt.Sprint(err), timeout.String()+" timeout") {
				t.Errorf("error = %v, want context.DeadlineExceeded naming the %v timeout", err, timeout)
			}
		})
	}
}

func TestNewRefusesATokenWithControlCharacters(t *testing.T) {
	const secret = "s3cret-0123456789abcdef"
	tests := []struct {
		name  string
		token string
		want  error // nil: accepted
	}{
		{"a newline left by the file it came from", secret + "\n", client.ErrInvalidToken},
		{"CR LF and another header", secret + "\r\nX-Injected: 1", client.ErrInvalidToken},
		{"NUL", secret[:4] + "\x00" + secret[4:], client.ErrInvalidToken},
		{"a tab", "\t" + secret, client.ErrInvalidToken},
		{"DEL", secret + "\x7f", client.ErrInvalidToken},
		{"a space", secret[:4] + " " + secret[4:], client.ErrInvalidToken},
		{"a non-ASCII letter", "é" + secret, client.ErrInvalidToken},
		{"no token", "", nil},
		{"printable ASCII", secret + "-._~+/=!#$%&'*^`|", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, "")
			c, err := client.New(w.srv.URL, &client.Options{Token: tc.token})
			if !errors.Is(err, tc.want) {
				t.Fatalf("New error = %v, want %v", err, tc.want)
			}
			if err != nil {
				if c != nil {
					t.Error("New returned a client with its error, want nil")
				}
				if strings.Contains(err.Error(), secret[:6]) {
					t.Errorf("New error %q shows the token", err)
				}
				return
			}
			if _, err := c.Submit(t.Context(), msft); err != nil {
				t.Errorf("Submit: %v", err)
			}
		})
	}
}
