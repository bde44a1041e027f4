//go:build js && wasm

package workers

import "bytes"

// Console writes each Write as one console.log line, the channel Workers
// Logs and `wrangler tail` read, through bridge.mjs's log. Go's os.Stdout
// would get there too, through wasm_exec.js's file-system shim, at four more
// crossings and a callback into Go per line.
var Console consoleWriter

type consoleWriter struct{}

// Write logs p, less one trailing newline, as one line.
func (consoleWriter) Write(p []byte) (int, error) {
	jsBridge.Call("log", send(outFrame{}.Bytes(bytes.TrimSuffix(p, []byte("\n")))))
	return len(p), nil
}
