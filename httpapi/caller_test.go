package httpapi_test

import (
	"context"
	"net/http"
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
