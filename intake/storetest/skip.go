//go:build !tinygo

package storetest

import "testing"

// skip marks t skipped, saying why; the caller returns, since under TinyGo
// it cannot end the test (skip_tinygo.go).
func skip(t *testing.T, why string) {
	t.Helper()
	t.Skip(why)
}
