// Package panichook panics at named points of a request, in test builds
// only, so that an end-to-end test (test/panics_test.go) can see what a
// panic does to the Worker under either compiler. Built with
// -tags panichook, At panics when the request's key holds its point's
// marker; otherwise At does nothing, and the shipped module holds none of
// it, which the same test checks.
package panichook

// Point names a place in a request's path.
type Point string

const (
	// Early is before any I/O: the key is read, the body not yet.
	Early Point = "early"
	// Claimed is just after the request claimed its key in the Store.
	Claimed Point = "claimed"
	// Locked is inside the receipt cache's critical section, its mutex
	// held.
	Locked Point = "locked"
	// InObject is inside the ledger's Durable Object, as it claims the
	// key: a synchronous call into Go from the object's entry.
	InObject Point = "object"
)
