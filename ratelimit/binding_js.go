//go:build js && wasm

package ratelimit

import (
	"context"

	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/workers"
)

// Binding is a Rate Limiting binding ([[ratelimits]] in wrangler.toml),
// which JavaScript keeps and Go names by its handle.
type Binding struct{ b workers.Handle }

// New wraps the binding b.
func New(b workers.Handle) *Binding { return &Binding{b: b} }

// Allow counts one event against key's budget and reports whether it was
// within it, in one binding call.
func (l *Binding) Allow(ctx context.Context, key string) (bool, error) {
	answer, err := workers.Call(ctx, "rateLimit", workers.Frame{}.Str(key), l.b)
	if err != nil {
		return false, errs.Prefix("ratelimit", err)
	}
	return workers.ReadFields(answer).Flag(), nil
}
