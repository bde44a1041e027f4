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
	m := NewMemoryStore()
	key := intake.Key{Client: "desk", ID: "k"}
	storeReceipt(t, m, key, "c", `{"r":1}`)
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
		if got := m.obj.Purge(key, tc.token, ""); got.State != tc.want {
			t.Errorf("%s: Purge = %v, want %v", tc.name, got.State, tc.want)
		}
	}
	m.Now = func() time.Time { return time.Now().Add(repurgeWindow) }
	if got := m.obj.Purge(key, "call-1", ""); got.State != intake.Absent {
		t.Errorf("a retry past the window: Purge = %v, want Absent", got.State)
	}
}

// TestAPurgeRetriedAfterANewReceiptLeavesTheNewReceipt: the purge's answer
// was lost, the key was free, and a client's new order stored a new
// receipt under it before the Client retried the purge with its token.
// The retry reports the purge it made and deletes nothing: the new
// receipt is no part of it.
func TestAPurgeRetriedAfterANewReceiptLeavesTheNewReceipt(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore()
	key := intake.Key{Client: "desk", ID: "new-receipt"}
	commit := func(token, body string) { storeReceipt(t, m, key, token, body) }
	commit("first", `{"r":1}`)
	if got := m.obj.Purge(key, "call-1", ""); got.State != intake.Stored || string(got.Body) != `{"r":1}` {
		t.Fatalf("the purge = %v %s, want the first receipt", got.State, got.Body)
	}
	commit("second", `{"r":2}`)
	if got := m.obj.Purge(key, "call-1", ""); got.State != intake.Stored || string(got.Body) != `{"r":1}` {
		t.Errorf("its retry = %v %s, want the first purge's receipt", got.State, got.Body)
	}
	if rec, err := m.Lookup(ctx, key); err != nil || rec.State != intake.Stored || string(rec.Body) != `{"r":2}` {
		t.Errorf("Lookup after the retry = %v %s, %v; want the new receipt kept", rec.State, rec.Body, err)
	}
}

// TestAPurgeRetriedInAnotherIsolateReportsItsPurge: the purge's tombstone
// is kept in the object's storage, not in an isolate's memory, so the
// retry reports the purge it made wherever it runs: here a new Object
// over the same table, as a new isolate has. The sweep deletes the
// tombstone, and the receipt it holds, once its window has passed.
func TestAPurgeRetriedInAnotherIsolateReportsItsPurge(t *testing.T) {
	m := NewMemoryStore()
	now := time.Now()
	m.Now = func() time.Time { return now }
	key := intake.Key{Client: "desk", ID: "k"}
	storeReceipt(t, m, key, "c", `{"r":1}`)
	if got := m.obj.Purge(key, "call-1", ""); got.State != intake.Stored {
		t.Fatalf("the purge = %v, want the receipt", got.State)
	}
	if p, ok := m.obj.rows.purged("call-1:" + key.String()); !ok || p.token != "call-1" {
		t.Fatalf("tombstone %+v, %v; want the purge's, in the object's storage", p, ok)
	}
	fresh := Object{rows: m.obj.rows, now: m.obj.now, setAlarm: func(time.Time) {}}
	if got := fresh.Purge(key, "call-1", ""); got.State != intake.Stored || string(got.Body) != `{"r":1}` {
		t.Errorf("its retry in another isolate = %v %s, want the purge it made", got.State, got.Body)
	}
	now = now.Add(repurgeWindow)
	fresh.Sweep()
	if _, ok := m.obj.rows.purged("call-1:" + key.String()); ok {
		t.Errorf("the tombstone is kept past its window")
	}
	if got := fresh.Purge(key, "call-1", ""); got.State != intake.Absent {
		t.Errorf("a retry past the window = %v, want Absent", got.State)
	}
}

// storeReceipt claims key on m with token and commits body under it.
func storeReceipt(t *testing.T, m *MemoryStore, key intake.Key, token, body string) {
	t.Helper()
	ctx := context.Background()
	c := intake.Claim{Token: token, Lease: time.Minute}
	if _, err := m.Begin(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	if err := m.Commit(ctx, key, c, intake.Result{Body: []byte(body), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
}
