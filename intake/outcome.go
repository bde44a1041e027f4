package intake

import (
	"math/rand/v2"
	"time"
)

// Outcome is a successful submission's or lookup's response.
type Outcome struct {
	// Receipt is the receipt JSON, byte for byte as stored.
	Receipt []byte
	// Replayed is true when the receipt was stored by an earlier request.
	Replayed bool
	// OrderID is the receipt's order id, for logs; empty if a stored receipt
	// has none.
	OrderID string
	// Expires is when the stored receipt stops being served, set by
	// Lookup where the Store tells it (Lifecycle.TellsExpiry); zero
	// otherwise.
	Expires time.Time
}

// Rejection is the OMS's final refusal of an order: a Gateway returns it,
// and Submit and Lookup return it for a key whose stored outcome is one.
type Rejection struct {
	// Reason is the OMS's, as the receipt keeps it (order.MaxReasonBytes).
	Reason string
	// OrderID is the refused order's id; the Service sets it.
	OrderID string
	// Replayed is true when the rejection was stored by an earlier request.
	Replayed bool
	// AcceptedAt is when the refused order was accepted, read from the
	// stored rejection when Replayed; zero otherwise.
	AcceptedAt time.Time
	// Expires is when the stored rejection stops being served, as
	// Outcome.Expires.
	Expires time.Time
}

func (r *Rejection) Error() string { return "intake: order rejected: " + r.Reason }

// Is makes every Rejection match ErrRejected.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }

// Unsettled is an order whose outcome is unknown: the gateway call ended
// without an answer, so the OMS may or may not have it. The key keeps its
// order id and is free at once: a client's retry calls the gateway again
// with the same order id, and so does the settler, by itself, at
// NextAttempt. Submit returns it after such a call, and Lookup for a key
// left so. It matches ErrOutcomeUnknown, and ErrUnresolved too once the
// settler gave up.
type Unsettled struct {
	OrderID string
	// Attempts is how many gateway calls ended without an answer stored.
	Attempts int
	// NextAttempt is when the settler calls again; zero when it is not
	// known (a Store that does not say) or the settler gave up.
	NextAttempt time.Time
	// GiveUp says whether the settler gave up (Options.SettleMaxAge), or
	// awaits the give-up's check; a client's retry still calls the gateway
	// with the same order id.
	GiveUp GiveUp
	// Cause is the gateway's failure, for logs; empty when looked up.
	Cause string
}

// Unresolved reports whether the settler gave up on the key, or awaits
// the give-up's check: a client is told unresolved either way.
func (u *Unsettled) Unresolved() bool { return u.GiveUp.Unresolved() }

func (u *Unsettled) Error() string {
	msg := ErrOutcomeUnknown.Error()
	if u.Unresolved() {
		msg = ErrUnresolved.Error()
	}
	if u.Cause != "" {
		msg += ": " + u.Cause
	}
	return msg
}

// Is makes every Unsettled match ErrOutcomeUnknown, and an unresolved one
// ErrUnresolved.
func (u *Unsettled) Is(target error) bool {
	return target == ErrOutcomeUnknown || (u.Unresolved() && target == ErrUnresolved)
}

// unsettled is rec's Unsettled, as a lookup tells it.
func unsettled(rec Record) *Unsettled {
	return &Unsettled{OrderID: rec.OrderID, Attempts: rec.Attempts, NextAttempt: rec.NextAttempt, GiveUp: rec.GiveUp}
}

// randomID is a random version 4 UUID from math/rand/v2's ChaCha8, the
// default Options.NewID: crypto/rand would add hundreds of kilobytes to
// the Worker's wasm, which passes internal/uuid (crypto.getRandomValues).
func randomID() string {
	const digits = "0123456789abcdef"
	var b [36]byte
	hi, lo := rand.Uint64(), rand.Uint64()
	hi = hi&^(0xf<<12) | 0x4<<12 // version 4
	lo = lo&^(0x3<<62) | 0x2<<62 // variant 10
	for i, j := 0, 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			b[i] = '-'
			continue
		}
		var nibble uint64
		if j < 16 {
			nibble = hi >> (60 - 4*j) & 0xf
		} else {
			nibble = lo >> (60 - 4*(j-16)) & 0xf
		}
		b[i] = digits[nibble]
		j++
	}
	return string(b[:])
}
