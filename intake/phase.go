package intake

// The lifecycle as one table: the phases a key passes through, as a Store
// holds it, and every change of phase a writer may make. Stores and the
// Service decide with their own flags today; the table is what they must
// agree with. The simulator checks every write it sees against it
// (sim/refine.go), and TestTheTableKeepsTheInvariants walks every
// interleaving of a small world through it. docs/architecture.md draws it.

// Phase is where a key stands, as Lookup's Record says at one moment.
type Phase uint8

const (
	// PhaseAbsent: nothing live; a new order may claim the key.
	PhaseAbsent Phase = iota
	// PhaseHeld: a live claim holds the key; others wait or get 409.
	PhaseHeld
	// PhaseOpen: the key's order id may be at the OMS and its outcome is
	// unknown; the next claim takes it over, and the settler once due.
	PhaseOpen
	// PhaseChecking: the settler's last call failed over reads that lag
	// (KV); it gives up only if a check 2 × ReadsLag later finds no
	// outcome either.
	PhaseChecking
	// PhaseUnresolved: the settler gave up and paged; an operator
	// resolves the key, or a client's retry takes it over.
	PhaseUnresolved
	// PhaseStored: the key's final outcome is stored: every retry replays
	// it until it expires.
	PhaseStored
	phaseCount
)

var phaseNames = [phaseCount]string{"absent", "held", "open", "checking", "unresolved", "stored"}

func (p Phase) String() string {
	if p < phaseCount {
		return phaseNames[p]
	}
	return "phase?"
}

// PhaseOf is rec's phase.
func PhaseOf(rec Record) Phase {
	switch rec.State {
	case Held, Claimed:
		return PhaseHeld
	case Stored:
		return PhaseStored
	case Open:
		switch {
		case rec.Unresolved && rec.NextAttempt.IsZero():
			return PhaseUnresolved
		case rec.Unresolved:
			return PhaseChecking
		}
		return PhaseOpen
	}
	return PhaseAbsent
}

// Role is who writes a key.
type Role uint8

const (
	// RoleClient is a client's submission, in any isolate.
	RoleClient Role = 1 << iota
	// RoleSettler is the settler: the settle queue's consumer, the Cron
	// sweep of overdue keys, the ledger's alarm.
	RoleSettler
	// RoleResolver is an operator's resolve (Admin.Resolve).
	RoleResolver
	// RolePurger is an operator's purge (Admin.Purge).
	RolePurger
	// RoleAdopter is a migration's adoption sweep (Service.Adopt).
	RoleAdopter
	// RoleTime is no writer: a lease ending, a record expiring.
	RoleTime

	writers = RoleClient | RoleSettler | RoleResolver | RoleAdopter
)

var roleNames = []string{"client", "settler", "resolver", "purger", "adopter", "time"}

func (r Role) String() string {
	for i, name := range roleNames {
		if r == 1<<i {
			return name
		}
	}
	return "roles"
}

// Transition is one row of the table: By may move a key From one phase To
// another, for the reason Why.
type Transition struct {
	From, To Phase
	By       Role
	Why      string
}

// Transitions is the lifecycle's table. A write that leaves a key's phase
// as it was (a claim renewed, a release or commit of a claim that no
// longer holds the key, a leftover claim deleted beside a stored outcome)
// is no transition and needs no row.
var Transitions = []Transition{
	{PhaseAbsent, PhaseHeld, RoleClient | RoleAdopter | RoleResolver,
		"a new claim: a client's new order, a KV key's adoption, or a resolve of a key only KV holds"},
	{PhaseOpen, PhaseHeld, writers,
		"a takeover, keeping the key's order id, order and attempts (the settler's only once due)"},
	{PhaseChecking, PhaseHeld, RoleClient | RoleSettler | RoleResolver,
		"a takeover: a client's retry, the give-up's check, or a resolve"},
	{PhaseUnresolved, PhaseHeld, RoleClient | RoleResolver | RoleAdopter,
		"a takeover of a key the settler gave up on: a client's retry, or a resolve (an adoption's claim of a key the Store took meanwhile gives it back)"},
	{PhaseHeld, PhaseStored, RoleClient | RoleSettler | RoleResolver,
		"a commit: the OMS answered for good, or an operator resolved the key"},
	{PhaseOpen, PhaseStored, RoleClient | RoleSettler | RoleResolver,
		"a commit after the claim's lease ended, by a holder no other claim displaced"},
	{PhaseHeld, PhaseOpen, writers,
		"a release after a call without an answer stored: due for the settler after the backoff"},
	{PhaseHeld, PhaseChecking, RoleClient | RoleSettler | RoleResolver,
		"the settler's last call failed over reads that lag, or a retry of a key awaiting that check failed"},
	{PhaseHeld, PhaseUnresolved, RoleClient | RoleSettler | RoleResolver | RoleAdopter,
		"the settler gives up (after its page), or a retry of a key given up on failed (or is given back)"},
	{PhaseHeld, PhaseAbsent, RoleClient | RoleAdopter | RoleResolver,
		"a release of a claim whose order never reached the gateway"},
	{PhaseOpen, PhaseAbsent, RoleClient | RoleAdopter | RoleResolver,
		"the same release, after the claim's lease ended (KV: an unsent claim shows open once its lease is over)"},
	{PhaseAbsent, PhaseOpen, RoleClient,
		"a claim whose write failed, released open (KV): it may have landed, and the read that found the key free may have been stale"},
	{PhaseStored, PhaseAbsent, RolePurger | RoleTime,
		"a purge (an erasure request), or the outcome's expiry"},
	{PhaseOpen, PhaseAbsent, RolePurger,
		"a purge during a migration deletes KV's open claim of a key whose outcome the ledger stores"},
	{PhaseHeld, PhaseOpen, RoleTime,
		"a firm claim's lease ends: its order may have reached the gateway"},
	{PhaseHeld, PhaseAbsent, RoleTime,
		"a tentative claim's lease ends, or a claim kept no longer than its lease"},
	{PhaseUnresolved, PhaseAbsent, RoleTime,
		"a key given up on expires RESULT_TTL after the give-up"},
}

// Allowed reports whether by may move a key from one phase to another: a
// row says so, or the phase stays.
func Allowed(from, to Phase, by Role) bool {
	if from == to {
		return true
	}
	for _, t := range Transitions {
		if t.From == from && t.To == to && t.By&by != 0 {
			return true
		}
	}
	return false
}
