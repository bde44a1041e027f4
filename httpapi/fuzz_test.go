package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/api/apitest"
	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/workers"
)

// FuzzHandler drives the whole handler with any method, headers, body and
// key bytes, over both in-memory stores, with and without API tokens, and
// each request twice (the second finds what the first stored). The
// property: never a panic, never a 5xx (the stores here do not fail), and
// every answer either a receipt or a problem body of the status it carries.
func FuzzHandler(f *testing.F) {
	for _, seed := range []struct {
		method, key, authorization, contentLength string
		body                                      []byte
	}{
		{"POST", "k", "", "", []byte(validBody)},
		{"GET", "k", "", "", nil},
		{"POST", `"k\"q"`, "Bearer alice-token-0123456789abcdef", "", []byte(validBody)},
		{"post", "k", "", "", []byte(validBody)},
		{"DELETE", "", "Basic x", "", []byte("{}")},
		{"POST", "\x00\xff", "Bearer", "12", []byte(`{"symbol":"\ud800","side":"sell","quantity":1e308}`)},
		{"POST", "k", "", "999999", []byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`)},
		{"GET", strings.Repeat("k", 256), "", "", nil},
		{"POST", "k", "", "", []byte("\xef\xbb\xbf" + validBody)},
	} {
		f.Add(seed.method, seed.key, seed.authorization, seed.contentLength, seed.body)
	}
	clients, err := auth.Parse("alice:alice-token-0123456789abcdef")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, key, authorization, contentLength string, body []byte) {
		header := http.Header{}
		for name, v := range map[string]string{"Idempotency-Key": key, "Authorization": authorization, "Content-Length": contentLength} {
			if v != "" {
				header[name] = []string{v}
			}
		}
		for _, store := range []struct {
			name  string
			store intake.Store
		}{
			{"kv", kv.NewStore(kv.NewMemoryNamespace(), nil)},
			{"ledger", ledger.NewMemoryStore()},
		} {
			opts := serviceOptions()
			for _, c := range []*auth.Clients{nil, clients} {
				h := httpapi.New(intake.New(store.store, opts), httpapi.Options{Clients: c})
				for i := 0; i < 2; i++ {
					resp := h.ServeWorker(context.Background(), &workers.Request{Method: method, Header: header, Body: workers.ReaderBody(strings.NewReader(string(body)))})
					checkFuzzed(t, store.name, resp)
				}
			}
		}
	})
}

// checkFuzzed fails t unless resp is a 2xx receipt or a 4xx problem of its
// own status.
func checkFuzzed(t *testing.T, mode string, resp *workers.Response) {
	t.Helper()
	if resp.Status >= 500 {
		t.Fatalf("%s: status %d with stores that never fail: %s", mode, resp.Status, resp.Body)
	}
	var doc map[string]any
	if err := json.Unmarshal(resp.Body, &doc); err != nil {
		t.Fatalf("%s: status %d body %q is not JSON: %v", mode, resp.Status, resp.Body, err)
	}
	if resp.Status >= 400 {
		if status, _ := doc["status"].(float64); int(status) != resp.Status || doc["error"] == nil {
			t.Fatalf("%s: status %d with problem %s", mode, resp.Status, resp.Body)
		}
	} else if doc["orderId"] == nil {
		t.Fatalf("%s: status %d without a receipt: %s", mode, resp.Status, resp.Body)
	}
}

// FuzzKeyAgreesWithTheDocument checks that the handler and api/openapi.yaml
// agree on every Idempotency-Key: a lookup's key is refused as
// invalid_idempotency_key exactly when the document's pattern refuses it.
func FuzzKeyAgreesWithTheDocument(f *testing.F) {
	for _, seed := range []string{"k", `"k"`, "k, k", `"k", "k"`, `"a, b"`, `"a\"b"`, `"a\x"`, " k", `k"`, ",", strings.Repeat("k", 256)} {
		f.Add(seed)
	}
	v, err := apitest.Load()
	if err != nil {
		f.Fatal(err)
	}
	h := httpapi.New(newService(kv.NewMemoryNamespace()), httpapi.Options{})
	f.Fuzz(func(t *testing.T, key string) {
		if key == "" {
			return // no key at all: another error
		}
		r := request(http.MethodGet, &key, nil)
		w := serve(h, r)
		refused := w.Code == http.StatusBadRequest && strings.Contains(w.Body.String(), `"invalid_idempotency_key"`)
		if invalid := v.ValidateRequest(r) != nil; refused != invalid {
			t.Errorf("key %q: the handler answers %d %s; the document finds it invalid: %v", key, w.Code, w.Body, invalid)
		}
	})
}
