//go:build !js

package e2e

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
	"github.com/edge-orders/edge-orders/oms"
)

// step is what the fake OMS does with one call.
type step int

const (
	// accept acts on the order and answers 201, or answers a repeated
	// order id with its original outcome, as the gateway contract asks.
	accept step = iota
	// reject refuses the order for good (422 with a reason).
	reject
	// failBefore answers 503 without acting.
	failBefore
	// failAfter acts on the order, then answers 503.
	failAfter
	// hang acts on the order and never answers: the Worker times out.
	hang
	// drop acts on the order and drops the connection without an answer.
	drop
	// gated waits until the test opens the symbol's gate, then accepts.
	gated
	// The steps below answer what no gateway should: each must leave the
	// outcome unknown.
	//
	// redirectFound and redirectTemporary answer 302 and 307 to the
	// fake's other origin (fakeOMS.elsewhere), which would accept the
	// order, without acting.
	redirectFound
	redirectTemporary
	// oversized accepts, and answers with the order named, padded past
	// oms.MaxAnswerBytes many times over.
	oversized
	// gzipped accepts, and answers with the order named in a gzip body
	// smaller than oms.MaxAnswerBytes that decodes far past it.
	gzipped
	// echo200 and echo400 answer the request's own body with a 200 and a
	// 400, without acting: a relay or a debugging endpoint.
	echo200
	echo400
)

func (s step) String() string {
	return [...]string{"accept", "reject", "503 before acting", "503 after acting", "accept, never answer", "accept, drop the connection", "gated",
		"302 elsewhere", "307 elsewhere", "accept, oversized answer", "accept, gzip answer past the cap", "echo with 200", "echo with 400"}[s]
}

// oversizedBytes is how long an oversized answer is: long enough that the
// loopback connection's buffers cannot take it whole, so a reader that
// stops at the cap cuts the write short.
const oversizedBytes = 64 << 20

// gzippedBytes is how long a gzipped answer is once decoded; compressed,
// it stays under the cap.
const gzippedBytes = 32 << 20

// omsToken is the OMS_TOKEN the gateway Workers send; the fake refuses
// calls without it (a 401 without the order, which is an unknown outcome).
const omsToken = "oms-test-token-0123456789"

// rejectReason is what the fake says when it rejects.
const rejectReason = "insufficient buying power"

// fakeOMS is the order-management system the Worker calls in these tests:
// a real HTTP server on loopback. Each test drives its own symbol, so the
// fake's script and its record are per symbol: every order id a symbol's
// calls carried, in order, and what was done with each order.
type fakeOMS struct {
	URL string
	srv *http.Server

	mu    sync.Mutex
	calls map[string][]string // symbol → the order id of each call
	// at is when each of a symbol's calls arrived; inCall and mostInCall
	// count a symbol's calls in progress, now and at most.
	at         map[string][]time.Time
	inCall     map[string]int
	mostInCall map[string]int
	// via counts the calls that came through a service binding (X-Via).
	via     map[string]int
	faulted map[string]int    // symbol → its calls that failed or got no answer
	acted   map[string]int    // order id → the status it was given for good
	scripts map[string][]step // symbol → the steps of its next calls; then accept
	gates   map[string]chan struct{}
	arrived map[string]chan struct{} // closed at a gated call's arrival
	chaos   float64                  // share of unscripted calls that fail at random
	// cut counts, per symbol, the oversized answers whose write failed:
	// the Worker stopped reading.
	cut map[string]int

	// elsewhere is another origin on loopback, where the redirect steps
	// send a call: it answers 201 naming the order of the call's
	// Idempotency-Key, and counts calls per symbol (the last part of its
	// path) in redirected.
	elsewhere    *http.Server
	elsewhereURL string
	redirected   map[string]int
}

func startFakeOMS() (*fakeOMS, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeOMS{URL: "http://" + l.Addr().String() + "/orders", calls: map[string][]string{}, acted: map[string]int{}, via: map[string]int{}, faulted: map[string]int{},
		at: map[string][]time.Time{}, inCall: map[string]int{}, mostInCall: map[string]int{},
		scripts: map[string][]step{}, gates: map[string]chan struct{}{}, arrived: map[string]chan struct{}{},
		cut: map[string]int{}, redirected: map[string]int{}}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve)}
	go f.srv.Serve(l)
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.srv.Close()
		return nil, err
	}
	f.elsewhereURL = "http://" + other.Addr().String() + "/redirected/"
	f.elsewhere = &http.Server{Handler: http.HandlerFunc(f.serveElsewhere)}
	go f.elsewhere.Serve(other)
	return f, nil
}

// serveElsewhere is the other origin: whatever reaches it is an order
// the OMS never saw, accepted.
func (f *fakeOMS) serveElsewhere(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.redirected[strings.TrimPrefix(r.URL.Path, "/redirected/")]++
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]string{"orderId": strings.Trim(r.Header.Get("Idempotency-Key"), `"`), "status": "accepted"})
}

// redirectedCalls is how many calls for symbol reached the other origin.
func (f *fakeOMS) redirectedCalls(symbol string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.redirected[symbol]
}

// cutShort is how many of symbol's oversized answers the Worker stopped
// reading before their end.
func (f *fakeOMS) cutShort(symbol string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cut[symbol]
}

// stop ends the server and every call still waiting.
func (f *fakeOMS) stop() {
	f.mu.Lock()
	for _, g := range f.gates {
		select {
		case <-g:
		default:
			close(g)
		}
	}
	f.mu.Unlock()
	f.srv.Close()
	f.elsewhere.Close()
}

// script sets what the next calls for symbol do, then accept; a gated step
// gets a gate that open opens.
func (f *fakeOMS) script(symbol string, steps ...step) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scripts[symbol] = steps
	f.gates[symbol] = make(chan struct{})
	f.arrived[symbol] = make(chan struct{})
}

// open lets symbol's gated calls go on.
func (f *fakeOMS) open(symbol string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.gates[symbol])
}

// waitArrival waits until a gated call for symbol has arrived.
func (f *fakeOMS) waitArrival(t *testing.T, symbol string) {
	t.Helper()
	f.mu.Lock()
	arrived := f.arrived[symbol]
	f.mu.Unlock()
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatalf("no gateway call for %s in 20 s", symbol)
	}
}

// setChaos makes share of the unscripted calls fail at random.
func (f *fakeOMS) setChaos(share float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chaos = share
}

// orderIDs returns the order id of every call for symbol, in order.
func (f *fakeOMS) orderIDs(symbol string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls[symbol]...)
}

// callTimes returns when each call for symbol arrived, in order.
func (f *fakeOMS) callTimes(symbol string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.at[symbol]...)
}

// mostAtOnce is the most calls for symbol that were in progress at once.
func (f *fakeOMS) mostAtOnce(symbol string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mostInCall[symbol]
}

// accepted reports whether the fake placed orderID (and did not refuse it).
func (f *fakeOMS) accepted(orderID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acted[orderID] == http.StatusCreated
}

// faults is how many calls for symbol failed or got no answer, scripted or
// by chaos.
func (f *fakeOMS) faults(symbol string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.faulted[symbol]
}

// viaBinding is how many calls for symbol came through a service binding.
func (f *fakeOMS) viaBinding(symbol string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.via[symbol]
}

// placement is the body the gateway receives.
type placement struct {
	OrderID    string  `json:"orderId"`
	ClientID   string  `json:"clientId"`
	Symbol     string  `json:"symbol"`
	Side       string  `json:"side"`
	Quantity   float64 `json:"quantity"`
	AcceptedAt string  `json:"acceptedAt"`
}

func (f *fakeOMS) serve(w http.ResponseWriter, r *http.Request) {
	var p placement
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+omsToken ||
		r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &p) != nil ||
		p.OrderID == "" || r.Header.Get("Idempotency-Key") != `"`+p.OrderID+`"` {
		http.Error(w, "not a gateway call: "+string(body), http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	f.calls[p.Symbol] = append(f.calls[p.Symbol], p.OrderID)
	f.at[p.Symbol] = append(f.at[p.Symbol], time.Now())
	f.inCall[p.Symbol]++
	f.mostInCall[p.Symbol] = max(f.mostInCall[p.Symbol], f.inCall[p.Symbol])
	defer func() {
		f.mu.Lock()
		f.inCall[p.Symbol]--
		f.mu.Unlock()
	}()
	if r.Header.Get("X-Via") == "service-binding" {
		f.via[p.Symbol]++
	}
	s := accept
	if steps := f.scripts[p.Symbol]; len(steps) > 0 {
		s, f.scripts[p.Symbol] = steps[0], steps[1:]
	} else if f.chaos > 0 && rand.Float64() < f.chaos {
		s = []step{failBefore, failAfter, hang, drop}[rand.IntN(4)]
	}
	if s == failBefore || s == failAfter || s == hang || s == drop {
		f.faulted[p.Symbol]++
	}
	gate, arrived := f.gates[p.Symbol], f.arrived[p.Symbol]
	f.mu.Unlock()

	if s == gated {
		close(arrived)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	switch s {
	case failBefore:
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	case redirectFound, redirectTemporary:
		status := map[step]int{redirectFound: http.StatusFound, redirectTemporary: http.StatusTemporaryRedirect}[s]
		http.Redirect(w, r, f.elsewhereURL+p.Symbol, status)
		return
	case echo200, echo400:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(map[step]int{echo200: http.StatusOK, echo400: http.StatusBadRequest}[s])
		w.Write(body)
		return
	}
	status := f.act(p.OrderID, s == reject)
	switch s {
	case failAfter:
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	case hang:
		<-r.Context().Done()
		return
	case drop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case oversized:
		f.answerOversized(w, p)
		return
	case gzipped:
		answerGzipped(w, p)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	answer := map[string]string{"orderId": p.OrderID, "status": "accepted"}
	if status == http.StatusUnprocessableEntity {
		answer = map[string]string{"orderId": p.OrderID, "status": "rejected", "reason": rejectReason}
	}
	json.NewEncoder(w).Encode(answer)
}

// answerOversized accepts p in an answer of oversizedBytes, valid JSON
// that names the order, and counts it as cut if its write fails.
func (f *fakeOMS) answerOversized(w http.ResponseWriter, p placement) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	head := fmt.Sprintf(`{"orderId":%q,"status":"accepted","pad":"`, p.OrderID)
	pad := bytes.Repeat([]byte("a"), 64<<10)
	_, err := io.WriteString(w, head)
	for n := len(head); err == nil && n < oversizedBytes; n += len(pad) {
		_, err = w.Write(pad)
	}
	if err == nil {
		_, err = io.WriteString(w, `"}`)
	}
	if err != nil {
		f.mu.Lock()
		f.cut[p.Symbol]++
		f.mu.Unlock()
	}
}

// answerGzipped accepts p in a gzip answer that decodes to gzippedBytes of
// valid JSON naming the order, whatever the request's Accept-Encoding. The
// pad is deflated once for every call (32 MiB at the best compression is
// seconds of CPU on a busy machine, which would make the call time out):
// each answer is the order's head, flushed to a byte boundary, then the
// pad's blocks, in one gzip member with the whole text's CRC and length.
func answerGzipped(w http.ResponseWriter, p placement) {
	tail := gzippedTail()
	head := fmt.Sprintf(`{"orderId":%q,"status":"accepted","pad":"`, p.OrderID)
	var packed bytes.Buffer
	packed.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}) // gzip, deflate, no name, unknown OS
	z, _ := flate.NewWriter(&packed, flate.BestCompression)
	io.WriteString(z, head)
	z.Flush() // a sync flush: the pad's blocks start on a byte
	packed.Write(tail)
	crc := crc32.ChecksumIEEE([]byte(head))
	for range gzippedBytes / len(gzipPad) {
		crc = crc32.Update(crc, crc32.IEEETable, gzipPad)
	}
	crc = crc32.Update(crc, crc32.IEEETable, []byte(gzipEnd))
	packed.Write(binary.LittleEndian.AppendUint32(nil, crc))
	packed.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(head)+gzippedBytes+len(gzipEnd))))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Set("Content-Length", fmt.Sprint(packed.Len()))
	w.WriteHeader(http.StatusCreated)
	w.Write(packed.Bytes())
}

// gzipPad and gzipEnd make up the text after a gzipped answer's head.
var gzipPad, gzipEnd = bytes.Repeat([]byte("a"), 64<<10), `"}`

// gzippedTail is gzippedBytes of gzipPad and then gzipEnd, deflated once
// as a stream of its own, which refers to nothing before it.
var gzippedTail = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	z, _ := flate.NewWriter(&b, flate.BestCompression)
	for range gzippedBytes / len(gzipPad) {
		z.Write(gzipPad)
	}
	io.WriteString(z, gzipEnd)
	z.Close()
	return b.Bytes()
})

// act places or refuses orderID once; a repeated order id keeps its first
// outcome, whatever the call asks.
func (f *fakeOMS) act(orderID string, refuse bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if status, ok := f.acted[orderID]; ok {
		return status
	}
	status := http.StatusCreated
	if refuse {
		status = http.StatusUnprocessableEntity
	}
	f.acted[orderID] = status
	return status
}

// omsTimeout is OMS_TIMEOUT_MS for the gateway Workers: short, so that
// the tests of calls that never answer stay quick, and long enough that a
// call that does answer (a gzip answer decoded to its cap, say) ends
// within it on two cores busy with every other test.
const omsTimeout = 3 * time.Second

// gatewayWorkers are Workers with OMS_URL set to the fake OMS, served
// through test/wrapped/entry.mjs: KV mode, and ledger mode with a second
// location (ledger-front) that binds its class. Started on first use.
type gatewayWorkers struct {
	oms *fakeOMS
	// vars are the Workers' vars, for tests that start one of their own.
	vars              map[string]string
	kv, ledger, front *target
}

var (
	gatewayOnce sync.Once
	gateway     *gatewayWorkers
	gatewayErr  error
)

// startGateway starts the fake OMS and its Workers, once for the package
// (TestMain starts them beside the shared Workers for a whole run); TestMain
// stops them.
func startGateway(t *testing.T) *gatewayWorkers {
	t.Helper()
	requireWorker(t)
	gatewayOnce.Do(initGateway)
	if gatewayErr != nil {
		t.Fatal(gatewayErr)
	}
	return gateway
}

// gatewayVars are the vars of a Worker that calls oms. The sweep of lost
// settle messages takes a key a second past its due time, so that its test
// need not wait a minute.
func gatewayVars(oms *fakeOMS) map[string]string {
	return map[string]string{"OMS_URL": oms.URL, "OMS_TOKEN": omsToken, "OMS_TIMEOUT_MS": fmt.Sprint(omsTimeout.Milliseconds()),
		"SETTLE_SWEEP_GRACE_SECONDS": "1"}
}

// startOwnGateway starts a fake OMS, and a KV and a ledger Worker wrapped
// over it, for t alone: a test that makes them fail at random must not do
// so to the shared ones, which other tests use meanwhile. They stop with t.
func startOwnGateway(t *testing.T) *gatewayWorkers {
	t.Helper()
	oms, err := startFakeOMS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oms.stop)
	g := &gatewayWorkers{oms: oms, vars: gatewayVars(oms)}
	g.kv = startWorker(t, "kv", wrappedOptions(wranglerdev.Options{Vars: g.vars}))
	g.ledger = startWorker(t, "ledger", wrappedOptions(wranglerdev.Options{Vars: g.vars}))
	return g
}

// initGateway is startGateway's work, done once; its error is gatewayErr.
func initGateway() {
	oms, err := startFakeOMS()
	if err != nil {
		gatewayErr = err
		return
	}
	g := &gatewayWorkers{oms: oms}
	gateway = g
	vars := gatewayVars(oms)
	g.vars = vars
	registry, err := os.MkdirTemp("", "edge-orders-e2e-registry-")
	if err != nil {
		gatewayErr = err
		return
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		g.kv, errs[0] = startTarget("kv", wrappedOptions(wranglerdev.Options{Vars: vars}))
	}()
	go func() {
		defer wg.Done()
		g.ledger, errs[1] = startTarget("ledger", wrappedOptions(wranglerdev.Options{Vars: vars, Registry: registry}))
	}()
	wg.Wait()
	if gatewayErr = errors.Join(errs...); gatewayErr != nil {
		return
	}
	g.front, gatewayErr = startTarget("ledger", wrappedOptions(wranglerdev.Options{Vars: vars, Registry: registry, Environment: "ledger-front"}))
}

// stopGateway stops what startGateway started, printing the Workers' logs
// if the run failed.
func stopGateway(failed bool) {
	if gateway == nil {
		return
	}
	for _, w := range []*target{gateway.kv, gateway.ledger, gateway.front} {
		if w == nil {
			continue
		}
		w.srv.Stop()
		if failed {
			fmt.Fprintf(os.Stderr, "--- wrangler output, gateway %s mode ---\n%s\n", w.mode, w.srv.Logs())
		}
		os.RemoveAll(w.state)
	}
	gateway.oms.stop()
}

// TestGzippedAnswerDecodes checks the fake OMS's gzipped answer, put
// together from pieces, against compress/gzip: one member that decodes to
// the order's head, the pad and the end, smaller than the cap compressed.
func TestGzippedAnswerDecodes(t *testing.T) {
	rec := httptest.NewRecorder()
	answerGzipped(rec, placement{OrderID: "0b4f4c2e-3f0e-4b8e-9d47-0d7a1f7c2b11"})
	if n := rec.Body.Len(); n >= oms.MaxAnswerBytes {
		t.Fatalf("compressed answer %d bytes, want under the cap %d", n, oms.MaxAnswerBytes)
	}
	z, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("decoding: %v (after %d bytes)", err, len(text))
	}
	head := `{"orderId":"0b4f4c2e-3f0e-4b8e-9d47-0d7a1f7c2b11","status":"accepted","pad":"`
	if want := len(head) + gzippedBytes + len(gzipEnd); len(text) != want || !bytes.HasPrefix(text, []byte(head)) ||
		!bytes.HasSuffix(text, []byte(`a"}`)) || bytes.Count(text, []byte("a")) < gzippedBytes {
		t.Errorf("decoded %d bytes starting %.80q, want %d: the head, %d of pad, the end", len(text), text, want, gzippedBytes)
	}
}
