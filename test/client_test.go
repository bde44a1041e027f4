//go:build !js

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/client"
)

// dropFirstResponse is a proxy in front of the Worker that forwards every
// request but loses the first response on the way back: it lets the
// Worker answer, then closes the client's connection without a word, as a
// network that fails mid-flight does.
func dropFirstResponse(t *testing.T, worker string) (proxyURL string, forwarded *atomic.Int64) {
	t.Helper()
	target, err := url.Parse(worker)
	if err != nil {
		t.Fatal(err)
	}
	forwarded = &atomic.Int64{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if forwarded.Add(1) == 1 {
			rec := &discard{header: http.Header{}}
			proxy.ServeHTTP(rec, r) // the Worker answers...
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // ...and the answer is lost
			}
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String(), forwarded
}

// discard is a ResponseWriter that throws the response away.
type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// TestGoClient drives the Worker with the Go client, as a desk's service
// would, through a network that loses the first response.
func TestGoClient(t *testing.T) {
	shareWorkers(t)
	forEachMode(t, func(t *testing.T, w *target) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()

		t.Run("a lost response is retried under the same key: one order, one receipt", func(t *testing.T) {
			proxy, forwarded := dropFirstResponse(t, w.URL())
			// No keep-alive: a dropped connection is then the client's own
			// retry, not net/http's silent resend on a fresh connection.
			noKeepAlive := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			c := newGoClient(t, proxy, &client.Options{HTTPClient: noKeepAlive, BaseDelay: 10 * time.Millisecond})
			res, err := c.Submit(ctx, client.Order{Symbol: "MSFT", Side: client.Buy, Quantity: 100})
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if !res.Replay || res.Attempts < 2 || forwarded.Load() < 2 {
				t.Fatalf("result replay=%v after %d attempts, %d forwarded; want a replay after the lost first answer", res.Replay, res.Attempts, forwarded.Load())
			}
			placed := w.countLog(t, fmt.Sprintf(`"outcome":"created","key":%q`, res.Key), 10*time.Second)
			if placed != 1 {
				t.Fatalf("the Worker logged %d orders for the key, want 1", placed)
			}
			if res.Receipt.OrderID == "" || !strings.Contains(w.Logs(), `"orderId":"`+res.Receipt.OrderID+`"`) {
				t.Fatalf("the receipt's order %s is not the one the Worker placed", res.Receipt.OrderID)
			}
			looked, err := newGoClient(t, w.URL(), nil).Lookup(ctx, res.Key)
			if err != nil || string(looked.Raw) != string(res.Raw) {
				t.Fatalf("Lookup = %v, %v; want the receipt %s", looked, err, res.Raw)
			}
		})

		t.Run("a final error is typed and not retried", func(t *testing.T) {
			c := newGoClient(t, w.URL(), nil)
			_, err := c.Submit(ctx, client.Order{Symbol: "MSFT", Side: "hold", Quantity: 1})
			var cerr *client.Error
			if !errors.As(err, &cerr) || !errors.Is(err, client.ErrInvalidOrder) || cerr.Attempts != 1 || cerr.Problem.Code != "invalid_order" {
				t.Fatalf("Submit of an invalid order = %#v, want one attempt and an invalid_order problem", err)
			}
			if _, err := c.Lookup(ctx, newKey(t)); !errors.Is(err, client.ErrNotFound) {
				t.Fatalf("Lookup of an unknown key = %v, want ErrNotFound", err)
			}
		})
	})
}

// newGoClient returns the Go client for url, failing t if New refuses opts.
func newGoClient(t *testing.T, url string, opts *client.Options) *client.Client {
	t.Helper()
	c, err := client.New(url, opts)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return c
}
