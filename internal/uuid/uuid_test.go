package uuid_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/edge-orders/edge-orders/internal/uuid"
)

var canonical = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestNewFormat(t *testing.T) {
	for range 1000 {
		id := uuid.New()
		if !canonical.MatchString(id) {
			t.Fatalf("New() = %q, want lowercase 8-4-4-4-12 hex", id)
		}
		if got, want := id[14], byte('4'); got != want {
			t.Fatalf("New() = %q: version nibble %c, want %c", id, got, want)
		}
		// The variant is the top two bits of the 17th hex digit: 10xx is
		// 8, 9, a or b.
		v, _ := strconv.ParseUint(id[19:20], 16, 8)
		if got, want := v>>2, uint64(0b10); got != want {
			t.Fatalf("New() = %q: variant bits %02b, want %02b", id, got, want)
		}
	}
}

func TestNewDistinct(t *testing.T) {
	const n = 10000
	seen := make(map[string]bool, n)
	for range n {
		id := uuid.New()
		if seen[id] {
			t.Fatalf("New() returned %q twice in %d draws", id, n)
		}
		seen[id] = true
	}
}

// TestNewUsesEveryBit checks that each of the 122 random bits is sometimes
// set and sometimes clear, which a slip in the byte handling would break.
func TestNewUsesEveryBit(t *testing.T) {
	var or, and [32]byte
	for i := range and {
		and[i] = 0xff
	}
	for range 1000 {
		id := uuid.New()
		hex := id[0:8] + id[9:13] + id[14:18] + id[19:23] + id[24:36]
		for i := range hex {
			d, _ := strconv.ParseUint(hex[i:i+1], 16, 8)
			or[i] |= byte(d)
			and[i] &= byte(d)
		}
	}
	for i := range or {
		wantOr, wantAnd := byte(0xf), byte(0)
		switch i {
		case 12: // version: always 4
			wantOr, wantAnd = 4, 4
		case 16: // variant: 10 then two random bits
			wantOr, wantAnd = 0xb, 0x8
		}
		if or[i] != wantOr || and[i] != wantAnd {
			t.Errorf("hex digit %d: bits ever set %04b, always set %04b; want %04b, %04b", i, or[i], and[i], wantOr, wantAnd)
		}
	}
}
