package workers_test

import (
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/workers"
)

func TestURLPath(t *testing.T) {
	tests := []struct{ name, url, want string }{
		{"the root", "https://edge-orders.example.workers.dev/", "/"},
		{"a path", "http://127.0.0.1:8787/orders", "/orders"},
		{"the policy page", "https://a.example/idempotency", "/idempotency"},
		{"a query is not the path", "https://a.example/idempotency?format=md", "/idempotency"},
		{"a fragment is not the path", "https://a.example/idempotency#keys", "/idempotency"},
		{"a query on the root", "https://a.example?x=/y", "/"},
		{"no path at all", "https://a.example", "/"},
		{"percent-encoding is kept", "https://a.example/a%2Fb/%C3%BC", "/a%2Fb/%C3%BC"},
		{"a colon in the path", "https://a.example/a:b//c", "/a:b//c"},
		{"credentials and a port", "https://u:p@a.example:8443/x", "/x"},
		{"a path alone", "/orders?x", "/orders"},
		{"nothing", "", "/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := workers.URLPath(tc.url); got != tc.want {
				t.Errorf("URLPath(%q) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
}

// FuzzURLPath checks that any path a URL is built with comes back, with
// whatever query and fragment follow it, and that the answer is always a
// path: a slash first, no query or fragment.
func FuzzURLPath(f *testing.F) {
	f.Add("example.com", "/orders", "a=1")
	f.Add("127.0.0.1:8787", "/", "")
	f.Add("a", "/x/y:z", "#f")
	f.Fuzz(func(t *testing.T, host, path, tail string) {
		if strings.ContainsAny(host, "/?#") || !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?#") {
			t.Skip()
		}
		for _, url := range []string{"https://" + host + path, "https://" + host + path + "?" + tail, "https://" + host + path + "#" + tail} {
			if got := workers.URLPath(url); got != path {
				t.Errorf("URLPath(%q) = %q, want %q", url, got, path)
			}
		}
		got := workers.URLPath(host + path + tail)
		if !strings.HasPrefix(got, "/") || strings.ContainsAny(got, "?#") {
			t.Errorf("URLPath(%q) = %q, not a path", host+path+tail, got)
		}
	})
}

func TestURLQuery(t *testing.T) {
	tests := []struct{ url, want string }{
		{"https://w.example/admin/orders?state=unknown&limit=2", "state=unknown&limit=2"},
		{"https://w.example/admin/orders?state=unknown#top", "state=unknown"},
		{"https://w.example/admin/orders", ""},
		{"https://w.example/?", ""},
		{"/a?b=c?d", "b=c?d"},
	}
	for _, tc := range tests {
		if got := workers.URLQuery(tc.url); got != tc.want {
			t.Errorf("URLQuery(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestURLHost(t *testing.T) {
	tests := []struct{ name, url, want string }{
		{"a workers.dev URL", "https://edge-orders.example.workers.dev/orders", "edge-orders.example.workers.dev"},
		{"wrangler dev, with its port", "http://127.0.0.1:8787/", "127.0.0.1:8787"},
		{"IPv6 loopback", "http://[::1]:8787/x?q=1", "[::1]:8787"},
		{"a query right after the host", "https://orders.example.com?k=1", "orders.example.com"},
		{"userinfo is not the host", "https://user:pw@orders.example.com/", "orders.example.com"},
		{"a path alone has none", "/orders", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := workers.URLHost(tc.url); got != tc.want {
				t.Errorf("URLHost(%q) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
}
