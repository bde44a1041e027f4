//go:build js && wasm

package workers

import (
	"context"
	"syscall/js"
)

// Fetcher returns a function that sends requests with target.fetch:
// target is a service binding (a Worker's fetch), or GlobalFetch for the
// network. The request and its answer each cross in one call, through
// bridge.mjs's fetch, which aborts at the request's Timeout.
func Fetcher(target js.Value) func(ctx context.Context, r *OutgoingRequest) (*OutgoingResponse, error) {
	return func(ctx context.Context, r *OutgoingRequest) (*OutgoingResponse, error) {
		res, err := Await(ctx, callBridge("fetch", target, r.Method, r.URL, headerLines(r.Header), string(r.Body), r.Timeout.Milliseconds()))
		if err != nil {
			return nil, err
		}
		body := res.Index(1)
		defer Release(res, body)
		return &OutgoingResponse{Status: res.Index(0).Int(), Body: []byte(body.String())}, nil
	}
}

// GlobalFetch is the global scope, whose fetch reaches the network.
func GlobalFetch() js.Value { return js.Global() }
