//go:build js && wasm

package ratelimit

import (
	"context"
	"syscall/js"

	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/workers"
)

// Binding is a Rate Limiting binding ([[ratelimits]] in wrangler.toml).
type Binding struct{ b js.Value }

// New wraps the binding b.
func New(b js.Value) *Binding { return &Binding{b: b} }

// Allow counts one event against key's budget and reports whether it was
// within it.
func (l *Binding) Allow(ctx context.Context, key string) (bool, error) {
	opts := workers.Object("key", key)
	defer workers.Release(opts)
	res, err := workers.CallAwait(ctx, l.b, "limit", opts)
	if err != nil {
		return false, errs.Prefix("ratelimit", err)
	}
	defer workers.Release(res)
	return res.Get("success").Bool(), nil
}
