//go:build tinygo

package storetest

import "testing"

// skip logs that t's check was not made, and why. TinyGo 0.40's t.Skip
// cannot end a test, having no runtime.Goexit, and marks it failed to say
// so; the caller returns instead.
func skip(t *testing.T, why string) {
	t.Helper()
	t.Log("skipped: " + why)
}
