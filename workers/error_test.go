package workers

import (
	"errors"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/internal/jsjson"
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

// TestAPanicInATaskSaysWhat: a task's panic (a queue message's, a Cron
// run's, work after the response) is its failure, naming the panic, and
// one error line: without it a message retried into the dead-letter
// queue by a panic said nothing of why (found by a review).
func TestAPanicInATaskSaysWhat(t *testing.T) {
	failure, line := taskPanic(errors.New("runtime error: invalid memory address or nil pointer dereference"))
	if !strings.Contains(failure, "nil pointer dereference") {
		t.Errorf("the failure %q does not name the panic", failure)
	}
	o, err := jsjson.Parse(line, "outcome", "error", "level")
	if err != nil {
		t.Fatalf("the line %s: %v", line, err)
	}
	if o.Get("outcome").Str != "internal_error" || o.Get("error").Str != failure || o.Get("level").Str != "error" {
		t.Errorf("the line %s; want an internal_error at error level naming %q", line, failure)
	}
}
