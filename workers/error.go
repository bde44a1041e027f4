package workers

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
