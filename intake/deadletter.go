package intake

import (
	"context"
	"errors"
	"time"
)

// DeadLetter is one message the dead-letter queue delivered about a key:
// one the settler gave up on (unresolved), or whose settle message kept
// failing. It is kept until an operator acknowledges it, so that an order
// nobody settled never leaves every list before someone has seen it.
type DeadLetter struct {
	Key Key
	// ID names this letter among the key's: the queue message's id, the
	// same at each delivery of that message. Empty for a letter an older
	// version recorded, the key's only one.
	ID string
	// OrderID, Attempts and Unresolved are what the Store held for the key
	// when the letter came; OrderID is empty when it held nothing open.
	OrderID    string
	Attempts   int
	Unresolved bool
	// Received is when the letter was recorded.
	Received time.Time
	// Acknowledged is when an operator acknowledged it; zero while it is
	// listed.
	Acknowledged time.Time
}

// Errors of the dead letters, beside ErrNotFound.
var (
	// ErrLetterAcknowledged is returned by Record for a letter an operator
	// acknowledged already: its message was delivered again, and it is not
	// listed again.
	ErrLetterAcknowledged = errors.New("intake: dead letter acknowledged already")
	// ErrOtherLetter is returned by Acknowledge when the key holds other
	// letters than the one named, or more than one when none is named:
	// nothing is acknowledged.
	ErrOtherLetter = errors.New("intake: the key holds another dead letter")
)

// DeadLetters keeps the dead letters for the admin API. kv.DeadLetterStore
// implements it.
type DeadLetters interface {
	// Record keeps d, replacing only a letter with its key and ID (an
	// earlier delivery of the same message). It returns
	// ErrLetterAcknowledged, recording nothing, when that letter was
	// acknowledged.
	Record(ctx context.Context, d DeadLetter) error
	// List returns the letters after cursor ("" for the first page), at
	// most limit, and the cursor of the next page ("" after the last).
	// It returns ErrBadCursor for a cursor it did not hand out.
	List(ctx context.Context, cursor string, limit int) ([]DeadLetter, string, error)
	// Letters returns key's letters, none acknowledged.
	Letters(ctx context.Context, key Key) ([]DeadLetter, error)
	// Acknowledge acknowledges key's letter id, or with id "" the key's
	// only letter, and returns it; no other letter changes. It returns
	// ErrNotFound when the key holds no letter, and ErrOtherLetter when it
	// holds others than id, or more than one for "". Acknowledging a
	// letter again returns it as it was acknowledged.
	Acknowledge(ctx context.Context, key Key, id string) (DeadLetter, error)
}
