//go:build js && wasm

package workers

import "strings"

// A trap (a panic under TinyGo, whose -panic=trap makes it a wasm
// unreachable; a memory fault; a stack overflow) or an exit ends the Go
// program in mid-call: no recover runs, no defer, and its goroutines and
// locks stay as they were. JavaScript then ends what the program held
// (bridge.mjs's ended) with what Go set beforehand, since nothing of Go
// runs any more, and the entry starts a fresh program for the next event.

// AnswerTraps sets what every request the program holds gets if it traps,
// resp, and the log line written once per trap, line (one JSON object),
// whose "error" member the bridge follows with the trap's message and
// stack. Until it is called, a trap answers a plain 500.
func AnswerTraps(resp *Response, line []byte) {
	frame := outFrame{}.Int(int64(resp.Status)).Str(headerLines(resp.Header)).Bytes(resp.Body).Bytes(line)
	jsBridge.Call("answerTraps", send(frame))
}

// CORSTraps has a trap's answer to a request whose Origin is one of
// origins name it in Access-Control-Allow-Origin and carry allowed, but
// for a path under private (a prefix ending in "/", or that prefix
// without it; "" for none), and every trap's answer carry always: the
// CORS headers the handler adds to every answer, which nothing of Go adds
// once the program has trapped. A browser page then reads the 500
// instead of a CORS failure, which says the page's origin is not allowed.
func CORSTraps(origins []string, allowed, always []Field, private string) {
	frame := outFrame{}.Str(strings.Join(origins, "\n")).Str(headerLines(allowed)).Str(headerLines(always)).Str(private)
	jsBridge.Call("corsTraps", send(frame))
}

// MeasureTraps has each trap write one data point, of indexes, blobs and
// doubles, to dataset.
func MeasureTraps(dataset AnalyticsEngineDataset, indexes, blobs []string, doubles []float64) {
	jsBridge.Call("measureTraps", int(dataset.h), send(pointFrame(indexes, blobs, doubles)))
}
