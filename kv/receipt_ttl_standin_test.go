package kv_test

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
)

type ttlRecorder struct {
	kv.Namespace
	ttl map[string]time.Duration
}

func (r *ttlRecorder) Put(ctx context.Context, key string, e kv.Entry, o kv.PutOptions) error {
	r.ttl[key] = o.TTL
	return r.Namespace.Put(ctx, key, e, o)
}

// TestAStandInsReceiptIsKeptAsTheReferenceKeepsIt: the reference writes result:<key> with expirationTtl RESULT_TTL_SECONDS.
// With the stand-in (no gateway: the reference's claim, kept for its
// lease) and PENDING_TTL_SECONDS = RESULT_TTL_SECONDS = 60, which config
// allows, the receipt must be kept 60 s as the reference keeps it.
func TestAStandInsReceiptIsKeptAsTheReferenceKeepsIt(t *testing.T) {
	ctx := context.Background()
	rec := &ttlRecorder{Namespace: kv.NewMemoryNamespace(), ttl: map[string]time.Duration{}}
	store := kv.NewStore(rec, time.Now)
	k := intake.Key{Client: "desk-a", ID: "k"}
	c := intake.Claim{Token: "t", Lease: 60 * time.Second} // no KeepUntil: the reference's claim
	if _, err := store.Begin(ctx, k, c); err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(ctx, k, c, intake.Result{Body: []byte(`{}`), TTL: 60 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if got := rec.ttl["result:desk-a:k"]; got != 60*time.Second {
		t.Errorf("result:<key> written with TTL %v, want RESULT_TTL_SECONDS (60s), as the reference", got)
	}
}
