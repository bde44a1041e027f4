//go:build !js

package inspector

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
)

// wsConn is the client side of a WebSocket (RFC 6455), as little of it as
// the inspector protocol needs: text messages each way, pings answered,
// no extensions.
type wsConn struct {
	c net.Conn
	r *bufio.Reader
}

// The opcodes used here.
const (
	opContinuation = 0x0
	opText         = 0x1
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// acceptGUID is the RFC's fixed suffix of the handshake's key.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// dialWebSocket opens rawURL (ws://host:port/path).
func dialWebSocket(rawURL string) (*wsConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "ws" {
		return nil, fmt.Errorf("inspector: %s: only ws:// is supported", rawURL)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		return nil, err
	}
	var nonce [16]byte
	rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
		"\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	sum := sha1.Sum([]byte(key + acceptGUID))
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		c.Close()
		return nil, fmt.Errorf("inspector: %s refused the WebSocket handshake: %s", rawURL, resp.Status)
	}
	return &wsConn{c: c, r: r}, nil
}

// writeFrame sends one whole frame, masked as a client must.
func (w *wsConn) writeFrame(op byte, payload []byte) error {
	head := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		head = append(head, 0x80|byte(n))
	case n <= 0xFFFF:
		head = append(head, 0x80|126)
		head = binary.BigEndian.AppendUint16(head, uint16(n))
	default:
		head = append(head, 0x80|127)
		head = binary.BigEndian.AppendUint64(head, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	head = append(head, mask[:]...)
	masked := make([]byte, len(payload))
	for i, b := range payload {
		masked[i] = b ^ mask[i%4]
	}
	_, err := w.c.Write(append(head, masked...))
	return err
}

// writeText sends one text message.
func (w *wsConn) writeText(msg []byte) error { return w.writeFrame(opText, msg) }

// readMessage returns the next data message, joining its fragments and
// answering pings on the way.
func (w *wsConn) readMessage() ([]byte, error) {
	var msg []byte
	for {
		fin, op, payload, err := w.readFrame()
		if err != nil {
			return nil, err
		}
		switch op {
		case opPing:
			if err := w.writeFrame(opPong, payload); err != nil {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			return nil, io.EOF
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

// readFrame reads one frame; a server's frames are not masked.
func (w *wsConn) readFrame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(w.r, h[:]); err != nil {
		return
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0F
	if h[1]&0x80 != 0 {
		return false, 0, nil, errors.New("inspector: the server sent a masked frame")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err = io.ReadFull(w.r, b[:]); err != nil {
			return
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err = io.ReadFull(w.r, b[:]); err != nil {
			return
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > maxMessage {
		return false, 0, nil, fmt.Errorf("inspector: a frame of %d bytes, over %d", n, maxMessage)
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(w.r, payload)
	return
}

// maxMessage bounds one frame: a CPU profile of a minute is a few MB.
const maxMessage = 256 << 20

func (w *wsConn) close() error {
	w.writeFrame(opClose, nil)
	return w.c.Close()
}
