package client_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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
			c := newTestClient(t, srv.URL, opts)
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

// newTestClient returns a client for url with opts, failing t if it
// cannot be made.
func newTestClient(t *testing.T, url string, opts *client.Options) *client.Client {
	t.Helper()
	return client.New(url, opts)
}
