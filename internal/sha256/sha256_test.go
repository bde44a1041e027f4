package sha256

import (
	stdsha256 "crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestSum256Vectors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc (FIPS 180-4 example)", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"448 bits (two padding blocks)", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{"a million a's", strings.Repeat("a", 1_000_000), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sum := Sum256([]byte(tc.in))
			if got := hex.EncodeToString(sum[:]); got != tc.want {
				t.Errorf("Sum256 = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSum256MatchesStandardLibrary covers every length around the block and
// padding boundaries.
func TestSum256MatchesStandardLibrary(t *testing.T) {
	data := make([]byte, 300)
	for i := range data {
		data[i] = byte(i*7 + 3)
	}
	for n := range len(data) + 1 {
		if got, want := Sum256(data[:n]), stdsha256.Sum256(data[:n]); got != want {
			t.Fatalf("Sum256 of %d bytes = %x, want %x", n, got, want)
		}
	}
}

func FuzzSum256(f *testing.F) {
	f.Add([]byte("abc"))
	f.Add(make([]byte, 55))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Sum256(data), stdsha256.Sum256(data); got != want {
			t.Fatalf("Sum256(%x) = %x, want %x", data, got, want)
		}
	})
}
