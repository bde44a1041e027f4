package intake_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
)

// cancelAfterClaim cancels the request's context as soon as the claim is
// written, as a client that hangs up mid-request would.
type cancelAfterClaim struct {
	kv.Store
	cancel func()
}

func (c *cancelAfterClaim) Put(ctx context.Context, key string, e kv.Entry, o kv.PutOptions) error {
	err := c.Store.Put(ctx, key, e, o)
	if strings.HasPrefix(key, "pending:") {
		c.cancel()
	}
	return err
}

// TestCancelledRequestReleasesClaim checks that a request abandoned after its
// claim still frees the key, instead of blocking it until the claim expires.
func TestCancelledRequestReleasesClaim(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	h.faulty.Store = &cancelAfterClaim{Store: h.rec, cancel: cancel}
	_, err := h.svc.Submit(ctx, "", "k", strings.NewReader(validBody))
	if !errors.Is(err, intake.ErrUnavailable) {
		t.Fatalf("Submit error = %v, want ErrUnavailable", err)
	}
	if _, ok := h.stored(t, "pending:k"); ok {
		t.Fatalf("claim left behind after a cancelled request (release errors: %v)", h.releaseErrors())
	}
}
