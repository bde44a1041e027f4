//go:build !js

package inspector

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSelfTimeCountsSamplesAtTheMedianInterval(t *testing.T) {
	var p Profile
	err := json.Unmarshal([]byte(`{
		"nodes": [
			{"id": 1, "callFrame": {"functionName": "(root)", "url": ""}},
			{"id": 2, "callFrame": {"functionName": "(idle)", "url": ""}},
			{"id": 3, "callFrame": {"functionName": "runtime.mallocgc", "url": "wasm://wasm/1234"}},
			{"id": 4, "callFrame": {"functionName": "start", "url": "file:///w/worker.js"}},
			{"id": 5, "callFrame": {"functionName": "", "url": ""}}
		],
		"samples": [3, 3, 4, 2, 2, 5, 3],
		"timeDeltas": [100, 100, 100, 5000000, 100, 100, 100]
	}`), &p)
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

// TestCallAnswersOverAWebSocket serves an inspector's /json and a
// WebSocket that answers each call with its method's name, with a ping
// and an event before the answer.
func TestCallAnswersOverAWebSocket(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/json" {
			json.NewEncoder(w).Encode([]map[string]string{{"webSocketDebuggerUrl": "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"}})
			return
		}
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + acceptGUID))
		c, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
		rw.Flush()
		ws := &wsConn{c: c, r: bufio.NewReader(rw)}
		for {
			// The client's frames are masked; the server's must not be.
			fin, op, masked, err := readClientFrame(ws)
			if op == opPong && string(masked) == "hi" {
				continue
			}
			if err != nil || !fin || op != opText {
				return
			}
			var call struct {
				ID     int    `json:"id"`
				Method string `json:"method"`
			}
			json.Unmarshal(masked, &call)
			answer, _ := json.Marshal(map[string]any{"id": call.ID, "result": map[string]string{"method": call.Method}})
			for _, f := range []struct {
				op  byte
				msg string
			}{{opPing, "hi"}, {opText, `{"method":"Debugger.paused"}`}, {opText, string(answer)}} {
				c.Write(append([]byte{0x80 | f.op, byte(len(f.msg))}, f.msg...))
			}
		}
	}))
	defer srv.Close()
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
}

// readClientFrame reads a frame as a server does, unmasking it; small
// frames only.
func readClientFrame(w *wsConn) (fin bool, op byte, payload []byte, err error) {
	var h [6]byte
	if _, err = io.ReadFull(w.r, h[:]); err != nil {
		return
	}
	payload = make([]byte, h[1]&0x7F)
	if _, err = io.ReadFull(w.r, payload); err != nil {
		return
	}
	for i := range payload {
		payload[i] ^= h[2+i%4]
	}
	return h[0]&0x80 != 0, h[0] & 0x0F, payload, nil
}
