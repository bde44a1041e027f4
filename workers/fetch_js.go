//go:build js && wasm

package workers

import "context"

// Fetcher returns a function that sends requests with target.fetch:
// target is a service binding (a Worker's fetch), or GlobalFetch for the
// network. Each request is one binding call, whose frame carries the
// request and whose answer carries the status and the body; bridge.mjs
// aborts it at the request's Timeout.
func Fetcher(target Handle) func(ctx context.Context, r *OutgoingRequest) (*OutgoingResponse, error) {
	return func(ctx context.Context, r *OutgoingRequest) (*OutgoingResponse, error) {
		frame := Frame{}.Str(r.Method).Str(r.URL).Str(headerLines(r.Header)).Bytes(r.Body).Int(r.Timeout.Milliseconds())
		answer, err := Call(ctx, "fetch", frame, target)
		if err != nil {
			return nil, err
		}
		f := ReadFields(answer)
		status, body := int(f.Int()), f.Bytes()
		return &OutgoingResponse{Status: status, Body: body}, f.Err
	}
}

// GlobalFetch names the global scope, whose fetch reaches the network.
func GlobalFetch() Handle { return 0 }
