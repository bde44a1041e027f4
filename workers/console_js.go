//go:build js && wasm

package workers

import "bytes"

// Console writes each Write as one console.log line, and each WriteError
// as one console.error line, the channel Workers Logs, Logpush and
// `wrangler tail` read, with the level they filter on, through
// bridge.mjs's log. Go's os.Stdout would get there too, through
// wasm_exec.js's file-system shim, at four more crossings and a callback
// into Go per line, and at one level only.
var Console consoleWriter

type consoleWriter struct{}

// Write logs p, less one trailing newline, as one line (console.log).
func (consoleWriter) Write(p []byte) (int, error) {
	jsBridge.Call("log", send(outFrame{}.Bytes(bytes.TrimSuffix(p, []byte("\n")))))
	return len(p), nil
}

// WriteError logs p, less one trailing newline, as one line at error
// level (console.error).
func (consoleWriter) WriteError(p []byte) (int, error) {
	jsBridge.Call("log", send(outFrame{}.Bytes(bytes.TrimSuffix(p, []byte("\n"))).Str(consoleError)))
	return len(p), nil
}

// consoleError is the level field of bridge.mjs's log that picks
// console.error; without it the line goes to console.log.
const consoleError = "error"
