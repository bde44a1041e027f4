package sim

import (
	"context"
	"strings"

	"github.com/edge-orders/edge-orders/intake"
)

// The refinement check: every write the simulator sees, to KV or to the
// ledger, moves its key along a row of the lifecycle's table
// (intake.Transitions) for its writer's role, or leaves its phase as it
// was. Phases are read exactly, as the write left them: the table is about
// what the stores hold, not what a stale read shows.

// roleOf is a's role in the table; false for the driver and the checks'
// own writes, which set the world up.
func roleOf(a *actor) (intake.Role, bool) {
	if a == nil {
		return 0, false
	}
	a = a.origin()
	switch {
	case a.kind == alarmActor:
		return intake.RoleSettler, true
	case a.kind == settlerActor && a.name == "adoption sweep":
		return intake.RoleAdopter, true
	case a.kind == settlerActor:
		return intake.RoleSettler, true
	case strings.HasPrefix(a.name, "operator purge"):
		return intake.RolePurger, true
	case strings.HasPrefix(a.name, "operator resolve"):
		return intake.RoleResolver, true
	case a.kind == requestActor:
		return intake.RoleClient, true
	}
	return 0, false
}

// checkRefines checks a write of key by the running actor that moved it
// from one phase to another (where says which write).
func (w *world) checkRefines(key keyName, from, to intake.Phase, where string) {
	if w.direct {
		return
	}
	a := w.sched.running
	role, ok := roleOf(a)
	if !ok || from == to {
		return
	}
	w.count("table row: " + from.String() + " → " + to.String() + " by " + role.String())
	if !intake.Allowed(from, to, role) {
		w.violate("%s: %s moved %s from %s to %s (%s), which no row of the lifecycle's table allows",
			key, actorName(a), key, from, to, where)
	}
}

// kvPhase is key's phase in KV now, read exactly.
func (w *world) kvPhase(key keyName) intake.Phase {
	was := w.direct
	w.direct = true
	defer func() { w.direct = was }()
	rec, _ := w.kvStore.Lookup(context.Background(), w.keyOf(key))
	return intake.PhaseOf(rec)
}
