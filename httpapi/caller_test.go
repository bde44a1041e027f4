package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/workers"
)

// readHeaders is a request's headers that remembers which names were read:
// in a Worker each read is a crossing into JavaScript.
type readHeaders struct {
	http.Header
	mu   sync.Mutex
	read []string
}

func (h *readHeaders) Get(name string) string {
	h.mu.Lock()
	h.read = append(h.read, http.CanonicalHeaderKey(name))
	h.mu.Unlock()
	return h.Header.Get(name)
}

func (h *readHeaders) wasRead(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.read, http.CanonicalHeaderKey(name))
}

// TestRateLimitCaller checks whom the rate limit counts a new order
// against: the caller's address when the Worker runs open, and the client
// otherwise, without reading the address at all.
func TestRateLimitCaller(t *testing.T) {
	const addr = "198.51.100.7"
	clients, err := auth.Parse("alice:" + aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		clients       *auth.Clients
		authorization string
		want          string
		wantRead      bool
	}{
		{"the open Worker counts the caller's address", nil, "", "addr:" + addr, true},
		{"a client is counted without reading the address", clients, "Bearer " + aliceToken, "alice", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			opts := serviceOptions()
			opts.Limit = func(_ context.Context, who string) (bool, error) {
				asked = append(asked, who)
				return true, nil
			}
			h := httpapi.New(newServiceWith(kv.NewMemoryNamespace(), opts), httpapi.Options{Clients: tc.clients})
			header := &readHeaders{Header: http.Header{}}
			header.Set("Idempotency-Key", "k")
			header.Set("CF-Connecting-IP", addr)
			if tc.authorization != "" {
				header.Set("Authorization", tc.authorization)
			}
			resp := h.ServeWorker(context.Background(), &workers.Request{Method: "POST", Header: header,
				Body: workers.ReaderBody(strings.NewReader(validBody))})
			if got, want := resp.Status, http.StatusCreated; got != want {
				t.Fatalf("status = %d, want %d: %s", got, want, resp.Body)
			}
			if got, want := asked, []string{tc.want}; !slices.Equal(got, want) {
				t.Errorf("the limit was asked for %q, want %q", got, want)
			}
			if got := header.wasRead("CF-Connecting-IP"); got != tc.wantRead {
				t.Errorf("CF-Connecting-IP read = %v, want %v", got, tc.wantRead)
			}
		})
	}
}

// TestRateLimitCountsAnIPv6CallerByItsSlash64 checks whom the open
// Worker's rate limit counts each CF-Connecting-IP against: an IPv4
// address alone, an IPv6 address by its /64 however it is written, and
// every caller without the header (a service binding) in one bucket.
func TestRateLimitCountsAnIPv6CallerByItsSlash64(t *testing.T) {
	for _, tc := range []struct {
		name string
		addr string
		want string
	}{
		{"IPv4 counts by its address", "198.51.100.7", "addr:198.51.100.7"},
		{"another IPv4 address of the same /24 counts apart", "198.51.100.8", "addr:198.51.100.8"},
		{"IPv6 counts by its /64", "2001:db8:1:2:3:4:5:6", "addr:2001:db8:1:2::/64"},
		{"another IPv6 address of the same /64 counts the same", "2001:db8:1:2:ffff:ffff:ffff:ffff", "addr:2001:db8:1:2::/64"},
		{"the next /64 counts apart", "2001:db8:1:3::1", "addr:2001:db8:1:3::/64"},
		{"IPv6 in capitals with leading zeros counts the same", "2001:0DB8:0001:0002::9", "addr:2001:db8:1:2::/64"},
		{"a :: inside the /64 is expanded", "2001:db8::1", "addr:2001:db8:0:0::/64"},
		{"the zone of a link-local address is dropped", "fe80::1%eth0", "addr:fe80:0:0:0::/64"},
		{"IPv4-mapped IPv6 counts as its IPv4 address", "::ffff:198.51.100.7", "addr:198.51.100.7"},
		{"IPv6 with an embedded IPv4 tail counts by its /64", "64:ff9b:1:2::198.51.100.7", "addr:64:ff9b:1:2::/64"},
		{"an address that does not parse counts as written", "not-an-address", "addr:not-an-address"},
		{"a malformed IPv6 address counts as written", "2001:db8:::1", "addr:2001:db8:::1"},
		{"no CF-Connecting-IP (a service binding) shares one bucket", "", "addr:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := limitAskedFor(t, tc.addr), tc.want; got != want {
				t.Errorf("the limit was asked for %q, want %q", got, want)
			}
		})
	}
}

// FuzzRateLimitCaller checks the open Worker's rate limit key against
// net/netip, which the Worker does without (its wasm would grow): an
// address netip parses counts as its IPv4 form or its /64, and anything
// else as written.
func FuzzRateLimitCaller(f *testing.F) {
	for _, seed := range []string{"198.51.100.7", "2001:db8::1", "::", "::ffff:1.2.3.4", "fe80::1%eth0", "1:2:3:4:5:6:7:8", "1::2:3:4:5:6:7:8",
		"::1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "01.2.3.4", "1.2.3.4%x", ":::", "12345::", "1:2", "%", "[::1]"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		if strings.ContainsAny(addr, "\r\n\x00") {
			return // no header carries these
		}
		want := addr
		if ip, err := netip.ParseAddr(addr); err == nil {
			if ip = ip.Unmap(); ip.Is4() {
				want = ip.String()
			} else {
				p, _ := ip.Prefix(64)
				b := p.Addr().As16()
				want = fmt.Sprintf("%x:%x:%x:%x::/64", uint16(b[0])<<8|uint16(b[1]), uint16(b[2])<<8|uint16(b[3]), uint16(b[4])<<8|uint16(b[5]), uint16(b[6])<<8|uint16(b[7]))
			}
		}
		if got := limitAskedFor(t, addr); got != "addr:"+want {
			t.Errorf("CF-Connecting-IP %q: the limit was asked for %q, want %q", addr, got, "addr:"+want)
		}
	})
}

// limitAskedFor places a new order on the open Worker from addr (no
// CF-Connecting-IP when empty) and returns whom the rate limit was asked
// about.
func limitAskedFor(t *testing.T, addr string) string {
	t.Helper()
	var asked []string
	opts := serviceOptions()
	opts.Limit = func(_ context.Context, who string) (bool, error) {
		asked = append(asked, who)
		return true, nil
	}
	h := httpapi.New(newServiceWith(kv.NewMemoryNamespace(), opts), httpapi.Options{})
	header := http.Header{}
	header.Set("Idempotency-Key", "k")
	if addr != "" {
		header["Cf-Connecting-Ip"] = []string{addr}
	}
	resp := h.ServeWorker(context.Background(), &workers.Request{Method: "POST", Header: header,
		Body: workers.ReaderBody(strings.NewReader(validBody))})
	if resp.Status != http.StatusCreated || len(asked) != 1 {
		t.Fatalf("status = %d (%s), the limit asked %d times; want 201, once", resp.Status, resp.Body, len(asked))
	}
	return asked[0]
}
