package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// TestAPurgeRetriedAfterItsAnswerWasLostReportsItsPurge: the Client
// retries a call whose answer was lost, with the same token; the retry of
// a purge that took effect returns what it purged, so the operator is not
// told 404 for a purge that succeeded. Another purge of the key, with
// another token or none, finds nothing.
func TestAPurgeRetriedAfterItsAnswerWasLostReportsItsPurge(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore()
	key := intake.Key{Client: "desk", ID: "k"}
	c := intake.Claim{Token: "c", Lease: time.Minute}
	if _, err := m.Begin(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	if err := m.Commit(ctx, key, c, intake.Result{Body: []byte(`{"r":1}`), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, token string
		want        intake.State
	}{
		{"the purge", "call-1", intake.Stored},
		{"its retry", "call-1", intake.Stored},
		{"another purge", "call-2", intake.Absent},
		{"a purge with no token", "", intake.Absent},
	}
	for _, tc := range tests {
		if got := m.obj.Purge(key, tc.token); got.State != tc.want {
			t.Errorf("%s: Purge = %v, want %v", tc.name, got.State, tc.want)
		}
	}
	m.Now = func() time.Time { return time.Now().Add(repurgeWindow) }
	if got := m.obj.Purge(key, "call-1"); got.State != intake.Absent {
		t.Errorf("a retry past the window: Purge = %v, want Absent", got.State)
	}
}
