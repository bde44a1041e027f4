// Package errs builds error messages without fmt, which would add its
// reflection-driven formatting to the Worker's WebAssembly.
package errs

// Wrap returns an error whose message is text, exactly, and which unwraps
// to err: what fmt.Errorf returns for a format with a single %w verb, with
// the message already written.
func Wrap(err error, text string) error {
	return &wrapped{text: text, err: err}
}

// Detail returns an error reading "sentinel: detail" that unwraps to
// sentinel only, as fmt.Errorf("%w: %v", sentinel, cause) does: callers
// can test for the sentinel, but the cause, passed as text, stays internal.
func Detail(sentinel error, detail string) error {
	return Wrap(sentinel, sentinel.Error()+": "+detail)
}

// Prefix returns an error reading "prefix: " and then err's message that
// unwraps to err, as fmt.Errorf("prefix: %w", err) does.
func Prefix(prefix string, err error) error {
	return Wrap(err, prefix+": "+err.Error())
}

type wrapped struct {
	text string
	err  error
}

func (e *wrapped) Error() string { return e.text }
func (e *wrapped) Unwrap() error { return e.err }

// PanicText describes a value recovered from a panic as fmt.Sprint would
// when it is an error, a string or has a String method, which covers
// runtime errors and every panic this program makes; any other value is
// "(value of unknown type)". An Error or String method that itself panics
// (such as one called on a nil pointer) gives "(value whose Error or String
// method panicked)" rather than a second panic inside the caller's recover.
func PanicText(p any) (text string) {
	defer func() {
		if recover() != nil {
			text = "(value whose Error or String method panicked)"
		}
	}()
	switch v := p.(type) {
	case error:
		return v.Error()
	case string:
		return v
	case interface{ String() string }:
		return v.String()
	}
	return "(value of unknown type)"
}
