package client_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/google/uuid"
)

// worker is an in-memory stand-in for the edge-orders Worker that plays
// its HTTP contract: receipts stored per key, replays byte for byte, key
// reuse, in-progress keys, lookups, bearer tokens and problem bodies. Steps
// queued in script answer the first requests instead, to inject failures.
type worker struct {
	srv *httptest.Server
	// token, if set, must be sent as a bearer token.
	token string

	mu       sync.Mutex
	receipts map[string]stored
	// holding marks keys a request is working on: others get in_progress.
	holding map[string]bool
	// hold, if set, keeps a placing request working until it is closed, so
	// that a test can send a second request meanwhile.
	hold chan struct{}
	// placing is closed when a request starts working on a key under hold.
	placing chan struct{}
	script  []step
	seen    []seenRequest
}

// stored is a receipt and the order it was placed for.
type stored struct {
	order string
	raw   []byte
}

// seenRequest is what the worker received.
type seenRequest struct {
	method, key, contentType, authorization, body string
}

// step answers one request in place of the contract.
type step func(w http.ResponseWriter, r *http.Request)

// acceptedAt stamps every receipt the worker mints.
const acceptedAt = "2026-01-02T03:04:05.678Z"

// newWorker starts a worker; token "" runs it open.
func newWorker(t *testing.T, token string, script ...step) *worker {
	t.Helper()
	w := &worker{token: token, receipts: map[string]stored{}, holding: map[string]bool{}, script: script}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
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

func (w *worker) serve(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	w.mu.Lock()
	w.seen = append(w.seen, seenRequest{r.Method, key, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(body)})
	var next step
	if len(w.script) > 0 {
		next, w.script = w.script[0], w.script[1:]
	}
	w.mu.Unlock()
	if next != nil {
		next(rw, r)
		return
	}

	if w.token != "" && r.Header.Get("Authorization") != "Bearer "+w.token {
		rw.Header().Set("WWW-Authenticate", `Bearer realm="edge-orders"`)
		writeProblem(rw, 401, "unauthorized", 0)
		return
	}
	switch {
	case r.Method == http.MethodGet && key != "":
		w.lookup(rw, key)
	case r.Method != http.MethodPost:
		rw.Header().Set("Allow", "GET, POST")
		writeProblem(rw, 405, "method_not_allowed", 0)
	case key == "":
		writeProblem(rw, 400, "missing_idempotency_key", 0)
	default:
		w.place(rw, key, body)
	}
}

func (w *worker) lookup(rw http.ResponseWriter, key string) {
	w.mu.Lock()
	s, ok := w.receipts[key]
	held := w.holding[key]
	w.mu.Unlock()
	switch {
	case ok:
		writeReceipt(rw, http.StatusOK, s.raw)
	case held:
		writeInProgress(rw)
	default:
		writeProblem(rw, 404, "not_found", 0)
	}
}

func (w *worker) place(rw http.ResponseWriter, key string, body []byte) {
	var o struct {
		Symbol   *string          `json:"symbol"`
		Side     *string          `json:"side"`
		Quantity *json.RawMessage `json:"quantity"`
	}
	_ = json.Unmarshal(body, &o)
	fingerprint := fmt.Sprint(deref(o.Symbol), "|", deref(o.Side), "|", string(deref(o.Quantity)))

	w.mu.Lock()
	if s, ok := w.receipts[key]; ok {
		w.mu.Unlock()
		if s.order != fingerprint {
			writeProblem(rw, 422, "idempotency_key_reused", 0)
			return
		}
		writeReceipt(rw, http.StatusOK, s.raw)
		return
	}
	if w.holding[key] {
		w.mu.Unlock()
		writeInProgress(rw)
		return
	}
	w.holding[key] = true
	hold, placing := w.hold, w.placing
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.holding, key)
		w.mu.Unlock()
	}()
	if hold != nil {
		close(placing)
		<-hold
	}

	quantity, err := strconv.ParseInt(string(deref(o.Quantity)), 10, 64)
	if deref(o.Symbol) == "" || (deref(o.Side) != "buy" && deref(o.Side) != "sell") || err != nil || quantity <= 0 {
		writeProblem(rw, 422, "invalid_order", 0)
		return
	}
	raw, _ := json.Marshal(map[string]any{
		"orderId": uuid.NewString(), "status": "accepted", "symbol": *o.Symbol,
		"side": *o.Side, "quantity": quantity, "acceptedAt": acceptedAt,
	})
	w.mu.Lock()
	w.receipts[key] = stored{order: fingerprint, raw: raw}
	w.mu.Unlock()
	writeReceipt(rw, http.StatusCreated, raw)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// writeReceipt answers with a receipt; 200 is a replay.
func writeReceipt(rw http.ResponseWriter, status int, raw []byte) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	if status == http.StatusOK {
		rw.Header().Set("Idempotent-Replay", "true")
	}
	rw.WriteHeader(status)
	rw.Write(raw)
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
