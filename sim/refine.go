package sim

import (
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// The refinement check: every write the simulator sees, to KV or to the
// ledger, moves its key along a row of the lifecycle's table
// (intake.Transitions) for its writer's role, or leaves its phase as it
// was. Phases are read exactly, as the write left them: the table is about
// what the stores hold. Over KV, which has no compare-and-swap, a write
// may land over another phase than its writer read: allowed when a row
// allows the move from the phase it read, naming its stale read or the
// other writer's write after it (blindWrite).

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
// from what it held before, exactly, to what it holds after (where says
// which write).
func (w *world) checkRefines(key keyName, before, after intake.Record, where string) {
	if w.direct {
		return
	}
	from, to := intake.PhaseOf(before), intake.PhaseOf(after)
	a := w.sched.running
	role, ok := roleOf(a)
	if !ok || from == to {
		return
	}
	// The store the key's absence is judged in (isAbsent): KV in KV mode,
	// the ledger in ledger mode, whose Worker reads KV only behind it.
	judged := strings.HasPrefix(where, "ledger") == (w.mode == LedgerMode)
	if judged {
		w.lastMover[key] = a.origin()
		if to == intake.PhaseHeld {
			w.heldAt[key] = w.now()
		}
		if id := intake.OrderIDOf(after); id != "" {
			if w.carried[key] == nil {
				w.carried[key] = make(map[string]time.Time)
			}
			w.carried[key][id] = w.now()
		}
	}
	w.count("table row: " + from.String() + " → " + to.String() + " by " + role.String())
	if role == intake.RolePurger && from == intake.PhaseStored {
		w.markErased(key, a.origin(), judged, before.Body)
	}
	if intake.Allowed(from, to, role) {
		return
	}
	if e := w.blindWrite(a, key, to, role); e != nil {
		w.allowBy("a write from the phase its writer read, landed blind", e)
		return
	}
	w.violate("%s: %s moved %s from %s to %s (%s), which no row of the lifecycle's table allows",
		key, actorName(a), key, from, to, where)
}

// blindWrite is the event that let a's KV write move key to to from
// another phase than the table's rows allow from: KV has no
// compare-and-swap, so a writer acts on the phase it read, and the write
// lands over what is there. Allowed when a row allows the move from the
// phase a read, and that read was stale (it missed a write), or another
// writer's write landed after it (two claims at once); nil otherwise.
func (w *world) blindWrite(a *actor, key keyName, to intake.Phase, role intake.Role) *event {
	if w.mode != KVMode || a == nil { // in KV mode every write is KV's
		return nil
	}
	reads := w.ck.reads[a]
	claim, okc := reads["pending:"+key]
	result, okr := reads["result:"+key]
	if !okc && !okr {
		return nil
	}
	seen := intake.PhaseAbsent
	switch {
	case result.entry != nil:
		seen = intake.PhaseStored
	case claim.entry != nil:
		seen = intake.PhaseOf(w.decodeClaim(key, claim.entry, claim.at))
	}
	if !intake.Allowed(seen, to, role) {
		return nil
	}
	for _, r := range []readSeen{claim, result} {
		if r.stale != nil {
			return r.stale
		}
	}
	for _, kvKey := range []string{"pending:" + key, "result:" + key} {
		since, ok := a.reads[kvKey]
		if !ok {
			continue
		}
		for _, v := range w.ns.keys[kvKey] {
			if v.seq >= since && v.by != nil && v.by.origin() != a.origin() {
				return w.ck.newEvent(claimsAtOnce, "%s wrote %s at %s, after %s read it, which saw it %s",
					actorName(v.by), kvKey, v.at.Format("15:04:05.000"), actorName(a), seen)
			}
		}
	}
	return nil
}
