package kv_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/edge-orders/edge-orders/kv"
)

// TestMemoryListIsNoKinderThanKV: KV's list returns at most 1,000 keys a
// call ("the default is 1,000, which is the maximum"). MemoryNamespace is
// meant to fail where KV would: it must not hand a caller that asks for
// more a bigger page than KV ever returns, nor panic on a limit under one.
func TestMemoryListIsNoKinderThanKV(t *testing.T) {
	ctx := context.Background()
	mem := kv.NewMemoryNamespace()
	for i := range 1001 {
		if err := mem.Put(ctx, fmt.Sprintf("p:%04d", i), kv.Entry{Value: "1"}, kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{1001, 5000} {
		names, next, err := mem.List(ctx, "p:", "", limit)
		if err == nil && (len(names) > 1000 || next == "" && len(names) < 1001) {
			t.Errorf("List(limit %d) = %d names, next %q; KV returns at most 1,000 a call, or refuses the limit", limit, len(names), next)
		}
	}
	for _, limit := range []int{0, -1} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("List(limit %d) panicked: %v; want ErrInvalid", limit, p)
				}
			}()
			if _, _, err := mem.List(ctx, "p:", "", limit); !errors.Is(err, kv.ErrInvalid) {
				t.Errorf("List(limit %d) error = %v, want ErrInvalid", limit, err)
			}
		}()
	}
}
