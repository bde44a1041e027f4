package workers

import (
	"errors"
	"testing"
)

// TestAFailureWithoutAMessageIsStillAFailure: JavaScript reads a task's
// failure text "" as success (the queue message acknowledged, the alarm
// resolved), so an error whose message is empty, as a binding's rejection
// with new Error() gives (errorFrom), must not cross as "" (found by a
// review).
func TestAFailureWithoutAMessageIsStillAFailure(t *testing.T) {
	if got := failureText(nil); got != "" {
		t.Errorf("failureText(nil) = %q, want \"\"", got)
	}
	for _, err := range []error{&Error{}, errors.New("")} {
		if got := failureText(err); got == "" {
			t.Errorf("failureText(%#v) = \"\": the task's failure reads as success", err)
		}
	}
	if got := failureText(errors.New("kv: 429")); got != "kv: 429" {
		t.Errorf("failureText = %q, want the error's own message", got)
	}
}
