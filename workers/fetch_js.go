//go:build js && wasm

package workers

import (
	"context"
	"strconv"

	"github.com/edge-orders/edge-orders/internal/errs"
)

// Fetch sends r, in one binding call, whose frame carries the request and
// whose answer carries the status, the Location and the body; bridge.mjs
// follows no redirect, aborts the call at the request's Timeout, and reads
// the body as it streams, decoded, up to MaxAnswerBytes: past it, the call
// fails with ErrTooLarge.
func (t Fetcher) Fetch(ctx context.Context, r *OutgoingRequest) (*OutgoingResponse, error) {
	frame := outFrame{}.Str(r.Method).Str(r.URL).Str(headerLines(r.Header)).Bytes(r.Body).
		Int(r.Timeout.Milliseconds()).Int(r.MaxAnswerBytes)
	answer, err := callBinding(ctx, "fetch", frame, t.h)
	if err != nil {
		return nil, err
	}
	f := readFrame(answer)
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
