package intake

import (
	"context"
	"time"
)

// DeadLetter is a key the dead-letter queue delivered: one the settler
// gave up on (unresolved), or whose settle message kept failing. It is
// kept until an operator acknowledges it, so that an order nobody settled
// never leaves every list before someone has seen it.
type DeadLetter struct {
	Key Key
	// OrderID, Attempts and Unresolved are what the Store held for the key
	// when the letter came; OrderID is empty when it held nothing open.
	OrderID    string
	Attempts   int
	Unresolved bool
	// Received is when the letter was recorded.
	Received time.Time
}

// DeadLetters keeps the dead letters for the admin API. kv.DeadLetterStore
// implements it.
type DeadLetters interface {
	// Record keeps d, replacing a letter kept for the same key.
	Record(ctx context.Context, d DeadLetter) error
	// List returns the letters after cursor ("" for the first page), at
	// most limit, and the cursor of the next page ("" after the last).
	// It returns ErrBadCursor for a cursor it did not hand out.
	List(ctx context.Context, cursor string, limit int) ([]DeadLetter, string, error)
	// Acknowledge deletes key's letter and returns it: ErrNotFound when
	// none is kept.
	Acknowledge(ctx context.Context, key Key) (DeadLetter, error)
}
