package intake

import (
	"testing"
	"time"
)

// TestInFlightRemovesOnlyItsOwnEntry: a request abandoned by the runtime
// leaves its entry; once the lease has passed another request takes the
// key over, and the first one, should it wake, must not free the key
// under the second.
func TestInFlightRemovesOnlyItsOwnEntry(t *testing.T) {
	k := keySet{keys: map[string]inFlightEntry{}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const lease = time.Minute
	abandoned, ok := k.add("key", start, lease)
	if !ok {
		t.Fatal("first add refused")
	}
	if _, ok := k.add("key", start.Add(lease-time.Second), lease); ok {
		t.Fatal("a second add within the lease was let in")
	}
	current, ok := k.add("key", start.Add(lease), lease)
	if !ok {
		t.Fatal("an add after the lease was refused: a dead entry would block the key for the instance's life")
	}
	k.remove("key", abandoned)
	if _, ok := k.add("key", start.Add(lease+time.Second), lease); ok {
		t.Fatal("the abandoned request's remove freed the key under its new holder")
	}
	k.remove("key", current)
	if _, ok := k.add("key", start.Add(lease+time.Second), lease); !ok {
		t.Fatal("the holder's remove did not free the key")
	}
}
