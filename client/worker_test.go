package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/app"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/devtools/httpserve"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/oms"
	"github.com/edge-orders/edge-orders/workers"
)

// worker is the real Worker, as package app builds it over the in-memory
// ledger and an OMS in memory, its HTTP handler served on loopback. Steps queued in script answer the
// first requests instead, to inject what the real handler never does: a
// storm of 503s, a dropped connection, a proxy's page.
type worker struct {
	srv *httptest.Server
	// token, if set, must be sent as a bearer token.
	token   string
	gateway *holdingGateway
	// svc is the Worker's service, for a test to run its settler.
	svc *intake.Service

	// now is the clock of the service, the ledger and the handler; it
	// starts at acceptedAt and moves only by advance.
	clockMu sync.Mutex
	now     time.Time

	mu     sync.Mutex
	script []step
	seen   []seenRequest
}

// seenRequest is what the worker received: key is the Idempotency-Key
// header's Structured Field string unquoted, keyHeader the header as sent.
type seenRequest struct {
	method, key, contentType, authorization, body string
	keyHeader                                     string
}

// unquoteKey reads an sf-string header as the draft defines it, or returns
// the header with a "!" before it when it is not one, so that a test
// comparing keys fails.
func unquoteKey(h string) string {
	if len(h) < 2 || h[0] != '"' || h[len(h)-1] != '"' {
		return "!" + h
	}
	var b strings.Builder
	for i := 1; i < len(h)-1; i++ {
		switch c := h[i]; {
		case c == '\\' && i+1 < len(h)-1 && (h[i+1] == '"' || h[i+1] == '\\'):
			i++
			b.WriteByte(h[i])
		case c == '\\' || c == '"':
			return "!" + h
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// step answers one request in place of the handler.
type step func(w http.ResponseWriter, r *http.Request)

// acceptedAt stamps every receipt the worker mints.
const acceptedAt = "2026-01-02T03:04:05.678Z"

// newWorker starts a worker; token "" runs it open.
func newWorker(t *testing.T, token string, script ...step) *worker {
	t.Helper()
	w := &worker{token: token, script: script, gateway: &holdingGateway{}}
	w.now, _ = time.Parse(time.RFC3339Nano, acceptedAt)
	store := ledger.NewMemoryStore()
	store.Now = w.clock
	vars := map[string]string{"STORAGE": "ledger", "IN_PROGRESS_WAIT_MS": "0", "OMS_URL": "https://oms.example/orders"}
	if token != "" {
		vars["API_TOKENS"] = "test-client:" + token
	} else {
		vars["OPEN_ACCESS"] = "true"
	}
	built := app.New(app.Env{
		Var:    func(name string) (string, bool) { v, ok := vars[name]; return v, ok },
		Ledger: func(int) intake.Store { return store },
		Fetch:  w.gateway.send,
		Now:    w.clock,
	})
	if built.Service == nil {
		t.Fatal("the Worker is misconfigured")
	}
	w.svc = built.Service
	handler := httpserve.Handler(built.Handler)
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		h := r.Header.Get("Idempotency-Key")
		w.seen = append(w.seen, seenRequest{r.Method, unquoteKey(h), r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(body), h})
		var next step
		if len(w.script) > 0 {
			next, w.script = w.script[0], w.script[1:]
		}
		w.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if next != nil {
			next(rw, r)
			return
		}
		handler.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

// clock is the worker's time.
func (w *worker) clock() time.Time {
	w.clockMu.Lock()
	defer w.clockMu.Unlock()
	return w.now
}

// advance moves the worker's clock on by d.
func (w *worker) advance(d time.Duration) {
	w.clockMu.Lock()
	defer w.clockMu.Unlock()
	w.now = w.now.Add(d)
}

// settle runs the Worker's settler once for key of an open worker, as its
// alarm would, and returns what it did.
func (w *worker) settle(t *testing.T, key string) intake.Settlement {
	t.Helper()
	s, err := w.svc.Settle(context.Background(), intake.Key{ID: key})
	if err != nil {
		t.Fatalf("Settle(%q): %v", key, err)
	}
	return s
}

// requests returns what the worker has received so far.
func (w *worker) requests() []seenRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]seenRequest(nil), w.seen...)
}

// keys returns the Idempotency-Key of every request received.
func (w *worker) keys() []string {
	var keys []string
	for _, r := range w.requests() {
		keys = append(keys, r.key)
	}
	return keys
}

// holdingGateway stands for the order-management system behind OMS_URL:
// it counts the orders placed, answers with the next of its answers (then
// accepts): an error is a call that got no answer, an *intake.Rejection a
// 422 that refuses the order. With hold set, it keeps each call waiting
// until hold is closed, closing placing when one starts, so that a test
// can send a second request meanwhile.
type holdingGateway struct {
	mu      sync.Mutex
	placed  int
	answers []error
	hold    chan struct{}
	placing chan struct{}
}

// send answers the gateway's POST as the OMS would.
func (g *holdingGateway) send(ctx context.Context, r *workers.OutgoingRequest) (*workers.OutgoingResponse, error) {
	var sent struct {
		OrderID string `json:"orderId"`
	}
	if err := json.Unmarshal(r.Body, &sent); err != nil {
		return &workers.OutgoingResponse{Status: 400}, nil
	}
	var rejection *intake.Rejection
	switch err := g.place(); {
	case errors.As(err, &rejection):
		body, _ := json.Marshal(map[string]string{"orderId": sent.OrderID, "status": oms.StatusRejected, "reason": rejection.Reason})
		return &workers.OutgoingResponse{Status: 422, Body: body}, nil
	case err != nil:
		return nil, err
	}
	body, _ := json.Marshal(map[string]string{"orderId": sent.OrderID, "status": oms.StatusAccepted})
	return &workers.OutgoingResponse{Status: 201, Body: body}, nil
}

func (g *holdingGateway) place() error {
	g.mu.Lock()
	hold, placing := g.hold, g.placing
	g.hold = nil
	var answer error
	if len(g.answers) > 0 {
		answer, g.answers = g.answers[0], g.answers[1:]
	}
	g.mu.Unlock()
	if hold != nil {
		close(placing)
		<-hold
	}
	if answer == nil {
		g.mu.Lock()
		g.placed++
		g.mu.Unlock()
	}
	return answer
}

// orders is how many orders the gateway accepted.
func (g *holdingGateway) orders() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.placed
}

// writeInProgress answers 409 as the Worker does with its default 60 s claim.
func writeInProgress(rw http.ResponseWriter) {
	rw.Header().Set("Retry-After", "60")
	writeProblem(rw, 409, "in_progress", 60)
}

// writeProblem writes the Worker's problem body for code; retryAfter > 0
// adds the retryAfter member.
func writeProblem(rw http.ResponseWriter, status int, code string, retryAfter int) {
	b := fmt.Sprintf(`{"type":"tag:edge-orders,2026:%s","title":"Title of %s","status":%d,"detail":"Detail of %s","error":"%s"`,
		code, code, status, code, code)
	if retryAfter > 0 {
		b += `,"retryAfter":` + strconv.Itoa(retryAfter)
	}
	rw.Header().Set("Content-Type", "application/problem+json")
	rw.WriteHeader(status)
	io.WriteString(rw, b+"}")
}

// fail is a step answering with code's problem, and the given headers
// ("Name", "value" pairs).
func fail(status int, code string, header ...string) step {
	return func(rw http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			rw.Header().Set(header[i], header[i+1])
		}
		writeProblem(rw, status, code, 0)
	}
}

// raw is a step answering with status, content type and body as given.
func raw(status int, contentType, body string, header ...string) step {
	return func(rw http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			rw.Header().Set(header[i], header[i+1])
		}
		rw.Header().Set("Content-Type", contentType)
		rw.WriteHeader(status)
		io.WriteString(rw, body)
	}
}

// drop is a step that closes the connection without answering, as a
// network failure between client and Worker would.
func drop(rw http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(rw).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// truncate is a step that promises a longer body than it sends and closes
// the connection: the response breaks after its status line.
func truncate(rw http.ResponseWriter, r *http.Request) {
	conn, buf, err := http.NewResponseController(rw).Hijack()
	if err != nil {
		panic(err)
	}
	buf.WriteString("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"orderId\":")
	buf.Flush()
	conn.Close()
}

// repeat returns n copies of s.
func repeat(n int, s step) []step {
	steps := make([]step, n)
	for i := range steps {
		steps[i] = s
	}
	return steps
}
