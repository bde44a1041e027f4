package errs_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/edge-orders/edge-orders/internal/errs"
)

type codeError struct{ code int }

func (e *codeError) Error() string { return fmt.Sprint("code ", e.code) }

// TestMatchesFmt checks each helper against the fmt.Errorf call it
// replaces: the same message, and errors.Is and errors.As finding the same
// errors in the chain.
func TestMatchesFmt(t *testing.T) {
	sentinel := errors.New("pkg: sentinel")
	cause := errors.New("cause")
	typed := &codeError{7}
	tests := []struct {
		name     string
		got, fmt error
	}{
		{"Detail with text", errs.Detail(sentinel, "key is 600 bytes"), fmt.Errorf("%w: key is %d bytes", sentinel, 600)},
		{"Detail with a cause's text", errs.Detail(sentinel, cause.Error()), fmt.Errorf("%w: %v", sentinel, cause)},
		{"Detail with a typed cause's text", errs.Detail(sentinel, typed.Error()), fmt.Errorf("%w: %v", sentinel, typed)},
		{"Prefix", errs.Prefix(`kv: get "k"`, cause), fmt.Errorf("kv: get %q: %w", "k", cause)},
		{"Prefix of a typed error", errs.Prefix("ledger: claim", typed), fmt.Errorf("ledger: %s: %w", "claim", typed)},
		{"Prefix of a Detail", errs.Prefix("release", errs.Detail(sentinel, "x")), fmt.Errorf("release: %w", fmt.Errorf("%w: x", sentinel))},
		{"Wrap at the end", errs.Wrap(sentinel, "59 seconds is too short ("+sentinel.Error()+")"), fmt.Errorf("%d seconds is too short (%w)", 59, sentinel)},
		{"Wrap with another error said", errs.Wrap(typed, typed.Error()+" (and releasing the claim: "+cause.Error()+")"), fmt.Errorf("%w (and releasing the claim: %v)", typed, cause)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := tc.got.Error(), tc.fmt.Error(); got != want {
				t.Errorf("message = %q, want %q", got, want)
			}
			for _, target := range []error{sentinel, cause, typed} {
				if got, want := errors.Is(tc.got, target), errors.Is(tc.fmt, target); got != want {
					t.Errorf("errors.Is(err, %q) = %v, want %v", target, got, want)
				}
			}
			var gotTyped, wantTyped *codeError
			if got, want := errors.As(tc.got, &gotTyped), errors.As(tc.fmt, &wantTyped); got != want || gotTyped != wantTyped {
				t.Errorf("errors.As(err, *codeError) = %v, %p; want %v, %p", got, gotTyped, want, wantTyped)
			}
		})
	}
}

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

type ptrStringer struct{ s string }

func (s *ptrStringer) String() string { return s.s }

// errorAndStringer shows that Error wins, as it does for fmt.
type errorAndStringer struct{}

func (errorAndStringer) Error() string  { return "the error" }
func (errorAndStringer) String() string { return "the string" }

func TestPanicText(t *testing.T) {
	var nilStringer *ptrStringer
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"error", errors.New("boom"), "boom"},
		{"runtime error", runtimeError(), "runtime error: index out of range [3] with length 1"},
		{"string", "boom", "boom"},
		{"String method", stringer{"boom"}, "boom"},
		{"String method on a pointer", &ptrStringer{"boom"}, "boom"},
		{"Error before String", errorAndStringer{}, "the error"},
		{"unknown type", 42, "(value of unknown type)"},
		{"String method that panics", nilStringer, "(value whose Error or String method panicked)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errs.PanicText(tc.in); got != tc.want {
				t.Errorf("PanicText(%#v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// runtimeError returns what recover yields for an index out of range.
func runtimeError() (p any) {
	defer func() { p = recover() }()
	s, i := []int{1}, 3
	_ = s[i]
	return nil
}
