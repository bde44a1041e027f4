package workers

import (
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/internal/errs"
)

// Error is a JavaScript exception or promise rejection. Durable Object RPC
// errors carry two flags: Retryable when the call may be retried, and
// Overloaded when the object is overloaded, in which case a retry only makes
// it worse.
type Error struct {
	Message    string
	Retryable  bool
	Overloaded bool
}

func (e *Error) Error() string { return e.Message }

// NoResend reports whether the call that failed must not be sent again:
// the Durable Object is overloaded, and another call only loads it more.
func (e *Error) NoResend() bool { return e.Overloaded }

// failureText is err's message as a task's failure crosses to JavaScript,
// where "" means success: nil is "", and an error without a message (a
// binding's rejection with an empty one) is still a failure, so that its
// queue message is retried rather than acknowledged.
func failureText(err error) string {
	switch {
	case err == nil:
		return ""
	case err.Error() == "":
		return "workers: a task failed with an error without a message"
	}
	return err.Error()
}

// taskPanic is what a panic p in a task (a queue message's, a Cron
// run's, work after a response) becomes: the task's failure, which names
// it, and the error line logged for it (an internal_error, as a
// request's panic is), so that a message retried into the dead-letter
// queue by a panic says why somewhere.
func taskPanic(p any) (failure string, line []byte) {
	failure = "workers: panic in a task: " + errs.PanicText(p)
	return failure, eventlog.Line{Outcome: "internal_error", Error: failure, Alert: true}.AppendJSON(nil)
}
