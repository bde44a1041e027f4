package storetest

import (
	"testing"

	"github.com/edge-orders/edge-orders/intake"
)

// lookup checks what Lookup finds of a key nothing was stored under.
func (s *suite) lookup(t *testing.T) {
	t.Run("an unknown key is absent", func(t *testing.T) {
		s.mustLookup(t, s.newKey(), intake.Absent)
	})
}
