package ledger

import (
	"strings"
	"sync"
	"testing"

	"github.com/edge-orders/edge-orders/intake"
)

// TestAnAlarmWhoseKeyPanicsSettlesTheOthersAndFails: the alarm settles
// its keys on goroutines of their own; one whose settling panics (the
// SQL table panics on any error) must neither end the program, which a
// goroutine's unrecovered panic does under standard Go (a review found
// it), nor stop the others, and the alarm must fail, to run again.
func TestAnAlarmWhoseKeyPanicsSettlesTheOthersAndFails(t *testing.T) {
	keys := []intake.Key{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	var mu sync.Mutex
	var settled []string
	err := settleAll(keys, func(f func()) { go f() }, func(key intake.Key) {
		if key.ID == "b" {
			panic("sqlite: disk I/O error")
		}
		mu.Lock()
		defer mu.Unlock()
		settled = append(settled, key.ID)
	})
	if err == nil || !strings.Contains(err.Error(), "1 of the alarm's 3 keys panicked") || !strings.Contains(err.Error(), "disk I/O error") {
		t.Errorf("settleAll = %v, want the panic reported", err)
	}
	if len(settled) != 2 {
		t.Errorf("settled %v, want a and c", settled)
	}
	if err := settleAll(keys, func(f func()) { go f() }, func(intake.Key) {}); err != nil {
		t.Errorf("settleAll with no panic = %v", err)
	}
}
