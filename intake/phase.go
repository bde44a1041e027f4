package intake

import (
	"errors"
	"strings"
)

// The lifecycle as one table: the phases a key passes through, as a Store
// holds it, and every change of phase a writer may make. Both stores and
// the Service decide by it through step.go, which fails on a move it has
// no row for. The simulator checks every write it sees against it
// (sim/refine.go), and TestTheTableKeepsTheInvariants visits every state
// of a small world driven by it. docs/architecture.md shows it.

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

// ParsePhase is the phase named name (Phase.String), as a Store writes it;
// false for any other name.
func ParsePhase(name string) (Phase, bool) {
	for p, n := range phaseNames {
		if n == name {
			return Phase(p), true
		}
	}
	return PhaseAbsent, false
}

// CheckWrittenPhase reports, as an error, a record whose WrittenPhase, the
// phase its Store wrote beside the flags, disagrees with the phase the
// flags say (PhaseOf): they must be the same, or the clock alone moved the
// key on since the write, along one of the table's rows for time (a lease
// that ended). A record that carries no written phase agrees. Tests check
// every record they read with it, so that the stores can come to decide by
// the written phase alone.
func CheckWrittenPhase(rec Record) error {
	if rec.WrittenPhase == PhaseAbsent {
		return nil
	}
	now := PhaseOf(rec)
	if Allowed(rec.WrittenPhase, now, RoleTime) {
		return nil
	}
	return errors.New("intake: a record written " + rec.WrittenPhase.String() + " whose flags say " + now.String() + ", which no row for time allows")
}

// PhaseOf is rec's phase.
func PhaseOf(rec Record) Phase {
	switch rec.State {
	case Held:
		return PhaseHeld
	case Stored:
		return PhaseStored
	case Open:
		switch {
		case rec.GiveUp == GivenUp:
			return PhaseUnresolved
		case rec.GiveUp == AwaitingCheck:
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

// String names the roles in r, comma-separated.
func (r Role) String() string {
	var names []string
	for i, name := range roleNames {
		if r&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// Event is what a writer does to a key, or what time does to it.
type Event uint8

const (
	EventNone           Event = iota // no event: the key stays as it is (a claim that took nothing, a record no claim took)
	EventClaim                       // a new claim of a free key
	EventTakeOver                    // a claim of a key open with its order id
	EventCommit                      // the outcome stored
	EventReleaseOpen                 // released without an outcome, its order id kept
	EventCheck                       // released awaiting the give-up's check
	EventGiveUp                      // released given up on, after the page
	EventReleaseUnsent               // released as if never claimed: its order never reached the gateway
	EventPurge                       // erased by an operator
	EventLapse                       // a claim's lease ended with its holder gone
	EventLapseGivenUp                // the same, of a claim on a key given up on
	EventLapseChecking               // the same, of a claim on a key awaiting the give-up's check
	EventLapseTentative              // a tentative claim's lease ended with its holder gone
	EventExpire                      // a record's time is over
)

var eventNames = []string{"none", "claim", "take over", "commit", "release open", "release for the check", "give up", "release unsent", "purge", "lease ends", "lease on a given-up key ends", "lease on a checked key ends", "tentative lease ends", "expire"}

func (e Event) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return "event?"
}

// Transition is one row of the table: By may move a key From one phase To
// another by Event, for the reason Why.
type Transition struct {
	From  Phase
	Event Event
	To    Phase
	By    Role
	Why   string
}

// Transitions is the lifecycle's table. A write that leaves a key's phase
// as it was (a claim renewed, a release or commit of a claim that no
// longer holds the key, a leftover claim deleted beside a stored outcome)
// is no transition and needs no row.
var Transitions = []Transition{
	{PhaseAbsent, EventClaim, PhaseHeld, RoleClient | RoleAdopter | RoleResolver,
		"a client's new order, or a KV key's adoption: the sweep's, or a resolve's of a key only KV holds, which claims as an adopter (Step lets no resolve claim a free key; the simulator names the write by who acts)"},
	{PhaseOpen, EventTakeOver, PhaseHeld, writers,
		"keeping the key's order id, order and attempts (the settler's only once due)"},
	{PhaseChecking, EventTakeOver, PhaseHeld, RoleClient | RoleSettler | RoleResolver,
		"a client's retry, the give-up's check, or a resolve"},
	{PhaseUnresolved, EventTakeOver, PhaseHeld, RoleClient | RoleResolver | RoleAdopter,
		"a client's retry, or a resolve (an adoption's claim of a key the Store took meanwhile gives it back)"},
	{PhaseHeld, EventCommit, PhaseStored, RoleClient | RoleSettler | RoleResolver,
		"the OMS answered for good, or an operator resolved the key"},
	{PhaseOpen, EventCommit, PhaseStored, RoleClient | RoleSettler | RoleResolver,
		"after the claim's lease ended, by a holder no other claim displaced"},
	{PhaseChecking, EventCommit, PhaseStored, RoleClient | RoleSettler | RoleResolver,
		"the same, of a claim on a key awaiting the give-up's check"},
	{PhaseUnresolved, EventCommit, PhaseStored, RoleClient | RoleSettler | RoleResolver,
		"the same, of a claim on a key given up on"},
	{PhaseHeld, EventReleaseOpen, PhaseOpen, writers,
		"a call without an answer stored: due for the settler after the backoff"},
	{PhaseAbsent, EventReleaseOpen, PhaseOpen, RoleClient,
		"a claim whose write failed (KV): it may have landed, and the read that found the key free may have been stale"},
	{PhaseHeld, EventCheck, PhaseChecking, RoleClient | RoleSettler | RoleResolver,
		"the settler's last call failed over reads that lag, or a retry of a key awaiting that check failed"},
	{PhaseOpen, EventCheck, PhaseChecking, RoleClient | RoleSettler | RoleResolver,
		"the same, released after the claim's lease ended"},
	{PhaseUnresolved, EventCheck, PhaseChecking, RoleClient,
		"a retry of a key given up on whose answer from the OMS could not be stored, released after its claim's lease ended"},
	{PhaseOpen, EventGiveUp, PhaseUnresolved, RoleClient | RoleSettler | RoleResolver,
		"the settler gives up, released after its claim's lease ended"},
	{PhaseChecking, EventGiveUp, PhaseUnresolved, RoleClient | RoleSettler | RoleResolver,
		"the give-up's check gives up, released after its claim's lease ended"},
	{PhaseHeld, EventGiveUp, PhaseUnresolved, RoleClient | RoleSettler | RoleResolver | RoleAdopter,
		"the settler gives up (after its page), or a retry of a key given up on failed (or is given back)"},
	{PhaseHeld, EventReleaseUnsent, PhaseAbsent, RoleClient | RoleAdopter | RoleResolver,
		"an invalid body, a refusal, a tentative claim given up on"},
	{PhaseOpen, EventReleaseUnsent, PhaseAbsent, RoleClient | RoleAdopter | RoleResolver,
		"the same, after the claim's lease ended (KV: a claim shows open once its lease is over)"},
	{PhaseStored, EventPurge, PhaseAbsent, RolePurger,
		"an erasure request"},
	{PhaseOpen, EventPurge, PhaseAbsent, RolePurger,
		"during a migration, KV's open claim of a key whose outcome the ledger stores"},
	{PhaseChecking, EventPurge, PhaseAbsent, RolePurger,
		"the same, of a claim awaiting the give-up's check"},
	{PhaseUnresolved, EventPurge, PhaseAbsent, RolePurger,
		"the same, of a claim given up on"},
	{PhaseHeld, EventPurge, PhaseAbsent, RolePurger,
		"the same, of a claim still held"},
	{PhaseHeld, EventLapse, PhaseOpen, RoleTime,
		"a firm claim: its order may have reached the gateway"},
	{PhaseHeld, EventLapseGivenUp, PhaseUnresolved, RoleTime,
		"a claim on a key given up on: the key stays so"},
	{PhaseHeld, EventLapseChecking, PhaseChecking, RoleTime,
		"a claim on a key awaiting the give-up's check: the check stays due"},
	{PhaseHeld, EventLapseTentative, PhaseAbsent, RoleTime,
		"its order never reached the gateway under it (the ledger, during a migration)"},
	{PhaseOpen, EventExpire, PhaseAbsent, RoleTime,
		"past its KeepUntil, and at once for an older version's open key without its order, kept only its lease"},
	{PhaseStored, EventExpire, PhaseAbsent, RoleTime,
		"RESULT_TTL after the commit, and no sooner than the claim's KeepUntil"},
	{PhaseUnresolved, EventExpire, PhaseAbsent, RoleTime,
		"RESULT_TTL after the give-up at the least: the settler's claim keeps the key as long as a claim of its own (KeepUntil)"},
}

// Next is the phase event by by moves a key in from to; false if no row
// allows it.
func Next(from Phase, event Event, by Role) (Phase, bool) {
	for _, t := range Transitions {
		if t.From == from && t.Event == event && t.By&by != 0 {
			return t.To, true
		}
	}
	return from, false
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
