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
