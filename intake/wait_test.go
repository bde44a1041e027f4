package intake_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// TestWaitForDuplicate runs a duplicate of a request in flight: the first
// request is held just before it stores its receipt while the duplicate
// arrives. The first has its answer by then, which the duplicate replays
// from memory; without memory, with a Wait the duplicate polls and ends as
// a replay of the stored receipt, and without one it is told the key is in
// progress at once.
func TestWaitForDuplicate(t *testing.T) {
	tests := []struct {
		name   string
		wait   time.Duration
		cached int
		// wantReplay: the duplicate replays; otherwise it is ErrInProgress.
		wantReplay bool
		wantPoll   bool // the duplicate polls once before it replays
	}{
		// The first request answered before its commit: a duplicate in the
		// same instance replays that answer from memory at once.
		{"the duplicate replays the answer from memory while the commit runs", 0, 0, true, false},
		{"with Wait the duplicate replays from the store", 2 * time.Second, -1, true, true},
		{"without Wait or memory the duplicate is in progress", 0, -1, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			committing := make(chan struct{}) // the first is about to store its receipt
			proceed := make(chan struct{})    // lets it
			firstDone := make(chan struct{})
			var sleeps []time.Duration // only the duplicate sleeps
			h := newHarness(t, intake.Options{
				Gateway:        &gatewayDouble{}, // whose answer precedes its commit
				Wait:           tc.wait,
				CachedReceipts: tc.cached,
				Sleep: func(ctx context.Context, d time.Duration) error {
					sleeps = append(sleeps, d)
					if len(sleeps) == 1 {
						close(proceed)
						<-firstDone
					}
					return nil
				},
			})
			h.hooks.Before = func(op kvtest.Op, k string) error {
				if op == kvtest.OpPut && strings.HasPrefix(k, "result:") {
					close(committing)
					<-proceed
				}
				return nil
			}

			var first intake.Outcome
			var firstErr error
			go func() {
				defer close(firstDone)
				first, firstErr = h.submit("k", validBody)
			}()
			<-committing
			dup, err := h.submit("k", validBody)
			if !tc.wantPoll {
				close(proceed)
			}
			<-firstDone

			if firstErr != nil || first.Replayed {
				t.Fatalf("first Submit = replayed %v, %v; want a new order", first.Replayed, firstErr)
			}
			if got, want := h.rec.Count(kvtest.OpPut, "result:"), 1; got != want {
				t.Errorf("result Puts = %d, want %d (one order)", got, want)
			}
			if !tc.wantReplay {
				if !errors.Is(err, intake.ErrInProgress) {
					t.Fatalf("duplicate error = %v, want ErrInProgress", err)
				}
				if len(sleeps) != 0 {
					t.Errorf("duplicate slept %v, want no wait", sleeps)
				}
				return
			}
			if err != nil {
				t.Fatalf("duplicate error = %v, want a replay", err)
			}
			if !dup.Replayed || !bytes.Equal(dup.Receipt, first.Receipt) || dup.OrderID != first.OrderID {
				t.Errorf("duplicate = %s replayed %v, want the first's %s replayed", dup.Receipt, dup.Replayed, first.Receipt)
			}
			if !tc.wantPoll && len(sleeps) != 0 {
				t.Errorf("duplicate slept %v, want a replay at once", sleeps)
			}
			if tc.wantPoll && (len(sleeps) != 1 || sleeps[0] <= 0 || sleeps[0] >= tc.wait) {
				t.Errorf("duplicate slept %v, want one short poll within the Wait %v", sleeps, tc.wait)
			}
		})
	}
}

// TestWaitGivesUp checks that a duplicate of a request that never finishes
// (its claim was left in KV) polls with growing delays for at most the Wait,
// then is told the key is in progress, having written nothing.
func TestWaitGivesUp(t *testing.T) {
	const wait = time.Second
	now := acceptedAt
	var sleeps []time.Duration
	h := newHarness(t, intake.Options{
		Wait: wait,
		Now:  func() time.Time { return now },
		Sleep: func(ctx context.Context, d time.Duration) error {
			sleeps = append(sleeps, d)
			now = now.Add(d)
			return nil
		},
	})
	h.putClaim(t, "k")
	deadline := now.Add(wait)

	out, err := h.submit("k", validBody)
	if !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("Submit error = %v, want ErrInProgress", err)
	}
	if out.Receipt != nil {
		t.Errorf("Receipt = %s, want none", out.Receipt)
	}
	if len(sleeps) < 2 {
		t.Fatalf("slept %v, want several polls", sleeps)
	}
	if got, want := h.rec.Count(kvtest.OpGet, "pending:"), len(sleeps)+1; got != want {
		t.Errorf("claim reads = %d, want %d: one before each sleep and one after the last", got, want)
	}
	capped := false
	for i, d := range sleeps {
		switch {
		case d <= 0:
			t.Errorf("sleep %d = %v, want a positive delay", i, d)
		case i == 0:
		case d == 2*sleeps[i-1] && !capped:
		case d == sleeps[i-1]:
			capped = true
		default:
			t.Errorf("sleeps = %v, want each delay double the last until a cap, then the cap", sleeps)
		}
	}
	if now.After(deadline) {
		t.Errorf("slept %v in all, past the Wait %v", now.Sub(acceptedAt), wait)
	}
	// It gives up only when its next poll, at most twice the last delay
	// away, would be past the deadline.
	if last := sleeps[len(sleeps)-1]; now.Add(2 * last).Before(deadline) {
		t.Errorf("gave up %v before the deadline with a last delay of %v, want it to poll until the next would pass the deadline", deadline.Sub(now), last)
	}
	h.wantNoWrites(t, "waiting Submit", 0)
	if _, ok := h.stored(t, "pending:k"); !ok {
		t.Errorf("pending:k gone, want the holder's claim untouched")
	}
}

// TestWaitEndsWithContext checks that a duplicate stops waiting when its
// request is cancelled, answering ErrInProgress.
func TestWaitEndsWithContext(t *testing.T) {
	var sleeps int
	h := newHarness(t, intake.Options{
		Wait: time.Hour,
		Sleep: func(ctx context.Context, d time.Duration) error {
			sleeps++
			return context.Canceled
		},
	})
	h.putClaim(t, "k")
	if _, err := h.submit("k", validBody); !errors.Is(err, intake.ErrInProgress) {
		t.Fatalf("Submit error = %v, want ErrInProgress", err)
	}
	if sleeps != 1 {
		t.Errorf("sleeps = %d, want 1: a cancelled wait stops", sleeps)
	}
}
