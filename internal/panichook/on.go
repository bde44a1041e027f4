//go:build panichook

package panichook

import "strings"

// Marker is what a key holds, followed by a point's name, to panic there.
const Marker = "panic-hook-"

// At panics if key holds Marker followed by p's name.
func At(p Point, key string) {
	if strings.Contains(key, Marker+string(p)) {
		panic("panichook: a panic planted at " + string(p))
	}
}
