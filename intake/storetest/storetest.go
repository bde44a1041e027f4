// Package storetest checks that an intake.Store keeps the promises the
// lifecycle relies on: outcomes returned byte for byte, claims that hold
// their key for their lease, order ids kept once an order may have reached
// the gateway, outcomes that expire and are then never served, and the
// key's phase written beside the flags it follows from. Every
// Store runs it: the ledger in memory and in workerd, KV's in memory.
// Stores that can do more say so in Options and are checked for it too:
// claims fenced by their token, and claims granted atomically.
package storetest

import (
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// Options says what the Store under test can do beyond what every Store
// must, and how its time passes.
type Options struct {
	// Fenced: the Store tells claims apart by their token. It refuses a
	// Commit whose claim no longer holds the key, lets only a claim's
	// holder release it, and treats a call repeated with a token as done.
	// KV cannot: a claim there is a marker anyone may overwrite.
	Fenced bool
	// Atomic: of concurrent claims on one key exactly one is granted.
	Atomic bool
	// Short is the shortest lease and TTL the Store accepts; the checks
	// that let time pass use it, so a real clock waits as little as it can.
	Short time.Duration
	// Now is the Store's clock; nil is the wall clock.
	Now func() time.Time
	// Advance lets d pass: a fake clock's step, or a real sleep. Nil skips
	// the checks that let time pass.
	Advance func(d time.Duration)
}

// Run checks s. Keys it uses start with prefix, so that runs against a
// persistent store do not collide.
func Run(t *testing.T, s intake.Store, prefix string, opts Options) {
	su := newSuite(s, prefix, opts)
	su.lookup(t)
	su.claims(t)
	su.commits(t)
	su.releases(t)
	su.open(t)
	su.expiry(t)
	su.phases(t)
}
