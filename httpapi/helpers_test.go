package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/httpapi"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/devtools/httpserve"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/workers"
)

const validBody = `{"symbol":"AAPL","side":"buy","quantity":10}`

// acceptedAt is the fixed clock stamped on receipts.
var acceptedAt = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// secret stands for the storage details a KV error carries.
const secret = "upstream 500 from 10.0.0.7"

// errSecret is what a failing store returns; its text must not reach
// clients.
var errSecret = errors.New("kv: " + secret)

// failing returns a store over s whose every Get fails with errSecret.
func failing(s kv.Namespace) kv.Namespace {
	f := &kvtest.Faulty{Namespace: s, Err: errSecret}
	f.Set(kvtest.Fault{Op: kvtest.OpGet})
	return f
}

// panicky returns a store over s whose Gets panic while panics is set, as
// a broken binding would.
func panicky(s kv.Namespace, panics *atomic.Bool) kv.Namespace {
	return &kvtest.Hooked{Namespace: s, Before: func(op kvtest.Op, _ string) error {
		if op == kvtest.OpGet && panics.Load() {
			panic("kv: binding exploded")
		}
		return nil
	}}
}

// asHTTP serves h as a net/http handler, so tests can use httptest.
func asHTTP(h workers.Handler) http.Handler { return httpserve.Handler(h) }

// serviceOptions are the Worker's defaults with a fixed receipt clock; a
// duplicate of a request in flight is answered at once.
func serviceOptions() intake.Options {
	return intake.Options{
		ResultTTL:  config.DefaultResultTTL,
		PendingTTL: config.DefaultPendingTTL,
		Now:        func() time.Time { return acceptedAt },
	}
}

// newService returns a service over KV in store with serviceOptions.
func newService(store kv.Namespace) *intake.Service {
	return newServiceWith(store, serviceOptions())
}

// newServiceWith returns a service over KV in store with opts.
func newServiceWith(store kv.Namespace, opts intake.Options) *intake.Service {
	return intake.New(kv.NewStore(store, nil), opts)
}

// newHandler returns an open handler over store with a fixed receipt clock.
func newHandler(store kv.Namespace) workers.Handler {
	return httpapi.New(newService(store), httpapi.Options{})
}

// logTo returns a Sink that appends each line to lines.
func logTo(lines *[]eventlog.Line) eventlog.Sink {
	return func(l eventlog.Line) { *lines = append(*lines, l) }
}

// request builds a request; key nil sends no Idempotency-Key header.
func request(method string, key *string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, "/orders", body)
	if key != nil {
		r.Header.Set("Idempotency-Key", *key)
	}
	return r
}

func ptr(s string) *string { return &s }

// response is what a test checks of a response.
type response struct {
	status int
	body   string
	header map[string]string // headers that must have exactly this value; "" means absent
}

func serve(h workers.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	asHTTP(h).ServeHTTP(w, r)
	return w
}

// Content types: receipts are plain JSON, every error is a problem.
const (
	jsonType    = "application/json"
	problemType = "application/problem+json"
)

// check compares w with want. A 2xx must be a receipt in application/json
// that no cache keeps, anything else a problem in application/problem+json;
// no response may be sniffed as another type.
func check(t *testing.T, w *httptest.ResponseRecorder, want response) {
	t.Helper()
	if got := w.Code; got != want.status {
		t.Errorf("status = %d, want %d", got, want.status)
	}
	if got := w.Body.String(); got != want.body {
		t.Errorf("body = %s, want %s", got, want.body)
	}
	wantType := problemType
	if want.status >= 200 && want.status < 300 {
		wantType = jsonType
		if got := w.Header().Values("Cache-Control"); len(got) != 1 || got[0] != "no-store" {
			t.Errorf("Cache-Control = %q on a %d, want just \"no-store\"", got, want.status)
		}
	}
	if got := w.Header().Values("Content-Type"); len(got) != 1 || got[0] != wantType {
		t.Errorf("Content-Type = %q, want just %q", got, wantType)
	}
	if got := w.Header().Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q, want just \"nosniff\"", got)
	}
	for name, v := range want.header {
		if got := w.Header().Get(name); got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
	checkLink(t, w)
}

// policyLink is the Link every problem about the key carries, and no other
// response.
const policyLink = `</idempotency>; rel="describedby"`

// keyProblems are the problems about the key: those that link the policy.
var keyProblems = map[string]bool{
	"missing_idempotency_key": true,
	"invalid_idempotency_key": true,
	"in_progress":             true,
	"idempotency_key_reused":  true,
}

// checkLink fails t unless w links the policy exactly when it is a
// problem about the key.
func checkLink(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	var p struct{ Error string }
	json.Unmarshal(w.Body.Bytes(), &p)
	var want []string
	if w.Code >= 400 && keyProblems[p.Error] {
		want = []string{policyLink}
	}
	if got := w.Header().Values("Link"); !slices.Equal(got, want) {
		t.Errorf("Link = %q on a %d %s, want %q", got, w.Code, p.Error, want)
	}
}

// hugeBody is a valid order one byte over the body limit.
var hugeBody = validBody + strings.Repeat(" ", httpapi.MaxBodyBytes+1-len(validBody))

// putClaim stores a claim on key, as a request in progress does.
func putClaim(t *testing.T, m *kv.MemoryNamespace, key string) {
	t.Helper()
	if err := m.Put(context.Background(), "pending:"+key, kv.Entry{Value: "1"}, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
		t.Fatal(err)
	}
}

type errorReader struct{}

func (errorReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// orderID returns the orderId of the receipt in w, failing the test if w
// holds no receipt.
func orderID(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var receipt struct{ OrderID string }
	if err := json.Unmarshal(w.Body.Bytes(), &receipt); err != nil || receipt.OrderID == "" {
		t.Fatalf("%d body %s: %v, want a receipt", w.Code, w.Body, err)
	}
	return receipt.OrderID
}
