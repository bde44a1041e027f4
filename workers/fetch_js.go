//go:build js && wasm

package workers

import (
	"context"
	"strconv"

	"github.com/edge-orders/edge-orders/internal/errs"
)

// Fetcher returns a function that sends requests with target.fetch:
// target is a service binding (a Worker's fetch), or GlobalFetch for the
// network. Each request is one binding call, whose frame carries the
// request and whose answer carries the status, the Location and the body;
// bridge.mjs follows no redirect, aborts the call at the request's
// Timeout, and reads the body as it streams, decoded, up to
// MaxAnswerBytes: past it, the call fails with ErrTooLarge.
func Fetcher(target Handle) func(ctx context.Context, r *OutgoingRequest) (*OutgoingResponse, error) {
	return func(ctx context.Context, r *OutgoingRequest) (*OutgoingResponse, error) {
		frame := Frame{}.Str(r.Method).Str(r.URL).Str(headerLines(r.Header)).Bytes(r.Body).
			Int(r.Timeout.Milliseconds()).Int(r.MaxAnswerBytes)
		answer, err := Call(ctx, "fetch", frame, target)
		if err != nil {
			return nil, err
		}
		f := ReadFields(answer)
		resp := &OutgoingResponse{Status: int(f.Int()), Body: f.Bytes()}
		tooLarge := f.Flag()
		resp.Location = f.Str()
		switch {
		case f.Err != nil:
			return nil, f.Err
		case tooLarge:
			return nil, errs.Detail(ErrTooLarge, "an HTTP "+strconv.Itoa(resp.Status)+" answer over "+strconv.FormatInt(r.MaxAnswerBytes, 10)+" bytes")
		}
		return resp, nil
	}
}

// GlobalFetch names the global scope, whose fetch reaches the network.
func GlobalFetch() Handle { return 0 }
