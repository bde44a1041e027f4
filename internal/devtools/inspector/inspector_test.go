//go:build !js

package inspector

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
)

func TestSelfTimeCountsSamplesAtTheMedianInterval(t *testing.T) {
	p, err := decodeProfile([]byte(`{
		"nodes": [
			{"id": 1, "callFrame": {"functionName": "(root)", "url": ""}},
			{"id": 2, "callFrame": {"functionName": "(idle)", "url": ""}},
			{"id": 3, "callFrame": {"functionName": "runtime.mallocgc", "url": "wasm://wasm/1234"}},
			{"id": 4, "callFrame": {"functionName": "start", "url": "file:///w/worker.js"}},
			{"id": 5, "callFrame": {"functionName": "", "url": ""}}
		],
		"samples": [3, 3, 4, 2, 2, 5, 3],
		"timeDeltas": [100, 100, 100, 5000000, 100, 100, 100]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	entries, busy := p.SelfTime()
	if busy != 500*time.Microsecond {
		t.Errorf("busy = %v, want 500µs: five busy samples at the median 100µs, the long gap not weighed", busy)
	}
	want := []Entry{
		{Function: WasmPrefix + "runtime.mallocgc", Self: 300 * time.Microsecond, Share: 0.6},
		{Function: Native, Self: 100 * time.Microsecond, Share: 0.2},
		{Function: "start", Self: 100 * time.Microsecond, Share: 0.2},
	}
	if len(entries) != len(want) {
		t.Fatalf("got %d entries %+v, want %+v", len(entries), entries, want)
	}
	for i := range want {
		if entries[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, entries[i], want[i])
		}
	}
}

// fakeInspector serves an inspector's /json and a WebSocket that answers
// each call with answer's result, or with its error when it returns one,
// or, for neither, with the call echoed as workerd answers
// Profiler.enable; each after a ping and an event. A test server of our own: chromedp's
// (remote/internal/wstest) is internal to it.
func fakeInspector(t *testing.T, answer func(method string) (result any, err error)) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/json" {
			json.NewEncoder(w).Encode([]map[string]string{{"webSocketDebuggerUrl": "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"}})
			return
		}
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		c, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
		rw.Flush()
		for {
			op, msg, err := readClientFrame(rw.Reader)
			if op == opPong && string(msg) == "hi" {
				continue
			}
			if err != nil || op != opText {
				return
			}
			var call struct {
				ID     int64           `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			json.Unmarshal(msg, &call)
			reply := map[string]any{"id": call.ID}
			switch result, err := answer(call.Method); {
			case err != nil:
				reply["error"] = map[string]any{"code": -32601, "message": err.Error()}
			case result == nil: // as workerd answers Profiler.enable
				reply["method"], reply["params"] = call.Method, call.Params
			default:
				reply["result"] = result
			}
			b, _ := json.Marshal(reply)
			for _, f := range []struct {
				op  byte
				msg string
			}{{opPing, "hi"}, {opText, `{"method":"Debugger.paused"}`}, {opText, string(b)}} {
				writeServerFrame(c, f.op, []byte(f.msg))
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCallAnswersOverAWebSocket(t *testing.T) {
	srv := fakeInspector(t, func(method string) (any, error) {
		if method == "Profiler.nonesuch" {
			return nil, errors.New("'Profiler.nonesuch' wasn't found")
		}
		return map[string]string{"method": method}, nil
	})
	ctx := context.Background()
	conn, err := Connect(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, method := range []string{"Profiler.enable", "Profiler.start"} {
		var got struct{ Method string }
		if err := conn.Call(ctx, method, nil, &got); err != nil {
			t.Fatal(err)
		}
		if got.Method != method {
			t.Errorf("Call(%s) answered %q", method, got.Method)
		}
	}
	err = conn.Call(ctx, "Profiler.nonesuch", nil, nil)
	var cdpErr *cdproto.Error
	if !errors.As(err, &cdpErr) || !strings.Contains(err.Error(), "Profiler.nonesuch") {
		t.Errorf("got %v, want a *cdproto.Error naming the method", err)
	}
}

func TestStopProfilingReturnsTheProfileAsSent(t *testing.T) {
	const profile = `{"nodes":[{"id":1,"callFrame":{"functionName":"main.main","scriptId":"1","url":"wasm://wasm/1234","lineNumber":0,"columnNumber":7}}],"startTime":1,"endTime":3,"samples":[1,1],"timeDeltas":[100,100]}`
	calls := make(chan string, 8)
	srv := fakeInspector(t, func(method string) (any, error) {
		calls <- method
		switch method {
		case "Profiler.stop":
			return map[string]json.RawMessage{"profile": json.RawMessage(profile)}, nil
		case "Profiler.enable":
			return nil, nil
		}
		return struct{}{}, nil
	})
	ctx := context.Background()
	conn, err := Connect(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.StartProfiling(ctx, 100*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	p, err := conn.StopProfiling(ctx)
	if err != nil {
		t.Fatal(err)
	}
	close(calls)
	var methods []string
	for m := range calls {
		methods = append(methods, m)
	}
	if got, want := strings.Join(methods, " "), "Profiler.enable Profiler.setSamplingInterval Profiler.start Profiler.stop"; got != want {
		t.Errorf("got calls %s, want %s", got, want)
	}
	if string(p.Raw) != profile {
		t.Errorf("got Raw %s, want %s", p.Raw, profile)
	}
	entries, busy := p.SelfTime()
	if want := []Entry{{Function: WasmPrefix + "main.main", Self: 200 * time.Microsecond, Share: 1}}; len(entries) != 1 || entries[0] != want[0] || busy != 200*time.Microsecond {
		t.Errorf("got %+v busy %v, want %+v busy 200µs", entries, busy, want)
	}
}

// The opcodes the fake inspector uses (RFC 6455).
const (
	opText = 0x1
	opPing = 0x9
	opPong = 0xA
)

// readClientFrame reads one whole frame as a server does, unmasking it.
func readClientFrame(r *bufio.Reader) (op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		_, err = io.ReadFull(r, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		_, err = io.ReadFull(r, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	var mask [4]byte
	if err == nil {
		_, err = io.ReadFull(r, mask[:])
	}
	if err != nil {
		return
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(r, payload); err != nil {
		return
	}
	for i := range payload {
		payload[i] ^= mask[i%4]
	}
	return h[0] & 0x0F, payload, nil
}

// writeServerFrame writes one whole, unmasked frame.
func writeServerFrame(w io.Writer, op byte, payload []byte) error {
	h := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		h = append(h, byte(n))
	case n <= 0xFFFF:
		h = binary.BigEndian.AppendUint16(append(h, 126), uint16(n))
	default:
		h = binary.BigEndian.AppendUint64(append(h, 127), uint64(n))
	}
	_, err := w.Write(append(h, payload...))
	return err
}
