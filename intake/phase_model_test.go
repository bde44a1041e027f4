package intake_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// TestTheTableKeepsTheInvariants visits every state a small world can
// reach through the lifecycle's table (intake.Transitions), breadth first,
// and checks the simulator's invariants in each: two clients in two
// isolates retrying one order, and a settler; an OMS that dedupes by
// order id; writes and calls that fail, before they land or after; an
// isolate that dies at any step; over KV, a read that returns the version
// before the last write, and writes that land blind. Every change of
// phase is the table's: the key moves as its row says (intake.Next).
// After a call without an answer an actor releases as the Worker does
// (intake.Unanswered, then intake.StepRelease). Once faults stop, every
// state must end with the receipt every client was given. Purges,
// expiry, adoption and resolves are left to the simulator.
//
// The world is explored twice: with each claim deciding by the table
// alone (the move a row allows for the phase it read), and through
// intake.Step, as the Worker decides. Both must keep the invariants, and
// reach the same states: Step makes the moves the table allows a claim,
// and no other.
func TestTheTableKeepsTheInvariants(t *testing.T) {
	for _, kv := range []bool{true, false} {
		name := map[bool]string{true: "kv", false: "ledger"}[kv]
		t.Run(name, func(t *testing.T) {
			byTable, depth, err := explore(kv, false)
			if err != nil {
				t.Fatalf("deciding by the table: %v", err)
			}
			byStep, _, err := explore(kv, true)
			if err != nil {
				t.Fatalf("deciding through Step: %v", err)
			}
			for st := range byStep {
				st.byStep = false
				if !byTable[st] {
					t.Fatalf("through Step the world reaches a state the table does not: %+v", st)
				}
			}
			if len(byStep) != len(byTable) {
				t.Fatalf("through Step the world reaches %d states, by the table %d", len(byStep), len(byTable))
			}
			t.Logf("%s: all %d reachable states (the longest path %d steps) keep the invariants and settle once faults stop, deciding by the table or through Step", name, len(byTable), depth)
		})
	}
}

// The search's bounds: failures and deaths in one history, and the most
// states it may visit (it visits every reachable one, far fewer).
const (
	modelFaults    = 4
	modelDeaths    = 2
	modelMaxStates = 2_000_000
)

// The world. A stamp stands for an acceptedAt: the key's one order id is
// derived from the key and the order, so what can differ between two
// receipts is when each claim says the order was accepted.
type (
	stamp uint8

	// version is what the store holds for the key.
	version struct {
		phase  intake.Phase
		stamp  stamp // the key's order id's acceptedAt; 0 while absent
		body   stamp // the stored receipt's, while stored
		holder uint8 // which actor's claim holds it (1 + index), while held
		blind  bool  // stamp was minted by a claim after a stale read
		// from is, while held, the phase the claim took the key in: a
		// claim on a key given up on, or awaiting the check, keeps it so.
		from intake.Phase
		// contested: a claim landed blind over another's live claim
		// (KV), so two holders may call and store at once from then on,
		// and so may whoever takes the key over after them.
		contested bool
	}

	// mactor is a client request or the settler, at one point of its run.
	mactor struct {
		pc    pc
		stamp stamp        // its claim's
		blind bool         // its claim followed a stale read
		last  bool         // the settler's last call, past SETTLE_MAX_AGE
		from  intake.Phase // the phase its claim took the key in
		stale bool         // its last read was stale
	}

	// mstate is the world, comparable so that states dedupe.
	mstate struct {
		kv        bool // over KV; otherwise the ledger
		byStep    bool // a claim decides through intake.Step; otherwise by the table alone
		cur, prev version
		staleOK   bool  // a read may still return prev (KV)
		placed    stamp // the acceptedAt the OMS has the order under; 0: none
		act       [3]mactor
		cache     [2]stamp // each isolate's receipt cache
		opened    [2]stamp // each isolate's opened set
		answered  uint8    // a bit per stamp some client was given a 2xx of
		blindAns  bool     // one of them was minted blind
		next      stamp
		faults    uint8 // failures still to come
		deaths    uint8
		// pagedStored: the settler paged while a receipt was stored, and
		// its read was not stale.
		pagedStored bool
	}

	pc uint8
)

const (
	pcStart pc = iota
	pcHolding
	pcAnswered // the OMS answered: commit next
	pcDone
	pcDead
)

const settler = 2 // the settler's index in act; clients run in isolates 0 and 1

func (s *mstate) role(i int) intake.Role {
	if i == settler {
		return intake.RoleSettler
	}
	return intake.RoleClient
}

// explore visits every state the world can reach, breadth first, and
// returns them and the longest path's length, or the first broken
// invariant with the path to it.
func explore(kv, byStep bool) (seen map[mstate]bool, depth int, err error) {
	start := mstate{kv: kv, byStep: byStep, next: 1, faults: modelFaults, deaths: modelDeaths}
	type node struct {
		s    mstate
		path []string
	}
	seen = map[mstate]bool{start: true}
	frontier := []node{{s: start}}
	for ; len(frontier) > 0; depth++ {
		var next []node
		for _, n := range frontier {
			if err := n.s.check(kv); err != nil {
				return seen, depth, fmt.Errorf("%v, after:\n  %s", err, strings.Join(n.path, "\n  "))
			}
			if err := n.s.settles(kv); err != nil {
				return seen, depth, fmt.Errorf("once faults stop: %v, after:\n  %s", err, strings.Join(n.path, "\n  "))
			}
			for _, m := range n.s.moves(kv, true) {
				if seen[m.s] {
					continue
				}
				if len(seen) == modelMaxStates {
					return seen, depth, fmt.Errorf("more than %d states: the world is not bounded", modelMaxStates)
				}
				seen[m.s] = true
				next = append(next, node{s: m.s, path: append(append([]string(nil), n.path...), m.what)})
			}
		}
		frontier = next
	}
	return seen, depth - 1, nil
}

type move struct {
	s    mstate
	what string
}

// moves are every step the world may take from s; with chaos, faults,
// deaths and stale reads among them.
func (s mstate) moves(kv, chaos bool) []move {
	var out []move
	for i := range s.act {
		out = append(out, s.actorMoves(i, kv, chaos)...)
	}
	if h := s.cur.holder; s.cur.phase == intake.PhaseHeld && (h == 0 || !s.act[h-1].midRun()) {
		// The holder's lease ends: it died, or left its claim (its release
		// failed). A live holder finishes within its lease: a gateway call
		// within OMS_TIMEOUT_MS (at most 20 s) and a commit after the
		// response within waitUntil's 30 s, against PENDING_TTL_SECONDS of
		// at least 60.
		n := s
		n.write(lapseOf(s.cur.from), intake.RoleTime, n.cur.stamp, n.cur.blind)
		out = append(out, move{n, "a claim's lease ends"})
	}
	if chaos && s.deaths > 0 {
		for iso := range 2 {
			if s.act[iso].pc == pcDone || s.act[iso].pc == pcDead {
				continue
			}
			n := s
			n.deaths--
			n.act[iso].pc, n.cache[iso], n.opened[iso] = pcDead, 0, 0
			out = append(out, move{n, fmt.Sprintf("isolate %d dies", iso)})
		}
		if s.act[settler].pc != pcStart {
			n := s
			n.deaths--
			n.act[settler] = mactor{}
			out = append(out, move{n, "the settler's invocation dies"})
		}
	}
	if s.staleOK {
		n := s
		n.staleOK = false
		out = append(out, move{n, "reads catch up"})
	}
	return out
}

// actorMoves are actor i's possible next steps.
func (s mstate) actorMoves(i int, kv, chaos bool) []move {
	a := s.act[i]
	if a.pc == pcDone || a.pc == pcDead {
		return nil
	}
	who := fmt.Sprintf("actor %d", i)
	if i == settler {
		who = "the settler"
	}
	var out []move
	switch a.pc {
	case pcStart:
		reads := []version{s.cur}
		if kv && chaos && s.staleOK && s.prev != s.cur {
			reads = append(reads, s.prev)
		}
		for _, read := range reads {
			stale := read != s.cur
			out = append(out, s.start(i, read, stale, kv, chaos, who)...)
		}
	case pcHolding:
		// The gateway call: answered, or not (failed before it reached
		// the OMS, or after it acted).
		n := s
		if n.placed == 0 {
			n.placed = a.stamp
		}
		n.act[i].pc = pcAnswered
		out = append(out, move{n, who + ": the OMS accepts"})
		if chaos && s.faults > 0 {
			for _, acted := range []bool{false, true} {
				n := s
				n.faults--
				if acted && n.placed == 0 {
					n.placed = a.stamp
				}
				out = append(out, n.unknown(i, kv, chaos, who+fmt.Sprintf(": the call fails (the OMS acted: %v)", acted))...)
			}
		}
	case pcAnswered:
		out = append(out, s.commit(i, kv, chaos, who)...)
	}
	return out
}

// start is actor i's first step: it reads the key (read, stale or not)
// and asks the table what it may do.
func (s mstate) start(i int, read version, stale, kv, chaos bool, who string) []move {
	n := s
	a := &n.act[i]
	a.stale = stale
	role := s.role(i)
	what := fmt.Sprintf("%s reads %s", who, read.phase)
	if stale {
		what += " (stale)"
	}
	if i != settler {
		if c := n.cache[i]; c != 0 {
			n.answer(i, c, false)
			a.pc = pcDone
			return []move{{n, what + ", replays from memory"}}
		}
		if read.phase == intake.PhaseStored {
			n.answer(i, read.body, read.blind)
			n.cache[i] = read.body
			a.pc = pcDone
			return []move{{n, what + ", replays"}}
		}
	}
	if ev := s.begins(i, read.phase, what); ev != intake.EventNone {
		st, blind := read.stamp, read.blind || stale
		if ev == intake.EventClaim {
			st = n.next
			if i != settler && n.opened[i] != 0 {
				st = n.opened[i]
			}
		}
		what += ", " + ev.String()
		a.stamp, a.blind, a.last, a.from = st, blind, false, read.phase
		var out []move
		lasts := []bool{false}
		// The last call comes SETTLE_MAX_AGE after the order was
		// accepted: no client's request of then is still running.
		if i == settler && chaos && a.from == intake.PhaseOpen && !n.clientMidCall() {
			lasts = append(lasts, true)
		}
		for _, last := range lasts {
			m := n
			m.act[i].last = last
			if ev == intake.EventClaim && st == m.next {
				m.next++
			}
			out = append(out, m.written(i, ev, kv, chaos, what+map[bool]string{true: " (its last call)"}[last], func(m *mstate) {
				// The write failed: KV releases a claim that may have
				// landed open (the table's row for it), and the isolate
				// remembers its order's acceptedAt.
				if kv && ev == intake.EventClaim && i != settler {
					m.write(intake.EventReleaseOpen, role, st, blind)
					m.opened[i] = st
				}
				m.finish(i, kv)
			}, func(m *mstate) { m.act[i].pc = pcHolding })...)
		}
		return out
	}
	// Held, or nothing the table lets it do: 409, or the settler has
	// nothing to settle.
	a.pc = pcDone
	if i == settler {
		a.pc = pcStart
		if n == s {
			return nil
		}
	}
	return []move{{n, what + ", waits"}}
}

// begins is the event actor i's claim makes of a key it read in phase
// read: the one intake.Step decides, or, deciding by the table alone, the
// first the table allows, a claim of a free key or a takeover.
func (s *mstate) begins(i int, read intake.Phase, what string) intake.Event {
	if !s.byStep {
		for _, ev := range []intake.Event{intake.EventClaim, intake.EventTakeOver} {
			if _, ok := intake.Next(read, ev, s.role(i)); ok {
				return ev
			}
		}
		return intake.EventNone
	}
	step, err := intake.Step(modelRecord(read), intake.Claim{Fingerprint: modelOrder, By: s.role(i)}, modelNow)
	if err != nil {
		panic(fmt.Sprintf("%s: %v", what, err)) // a move Step makes and the table has no row for
	}
	return step.Event
}

// What the world's actors hand intake.Step: every client's claim is for
// one order, and the key, open or awaiting the give-up's check, is due.
const modelOrder = "the order's fingerprint"

var modelNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// modelRecord is a Store's record of a key in phase p.
func modelRecord(p intake.Phase) intake.Record {
	due := modelNow.Add(-time.Second)
	switch p {
	case intake.PhaseHeld:
		return intake.Record{State: intake.Held, Fingerprint: modelOrder}
	case intake.PhaseOpen:
		return intake.Record{State: intake.Open, Fingerprint: modelOrder, HasOrder: true, NextAttempt: due}
	case intake.PhaseChecking:
		return intake.Record{State: intake.Open, Fingerprint: modelOrder, HasOrder: true, NextAttempt: due, GiveUp: intake.AwaitingCheck}
	case intake.PhaseUnresolved:
		return intake.Record{State: intake.Open, Fingerprint: modelOrder, HasOrder: true, GiveUp: intake.GivenUp}
	case intake.PhaseStored:
		return intake.Record{State: intake.Stored}
	}
	return intake.Record{State: intake.Absent}
}

// written is actor i's write of ev: landed, or, with chaos, failed before
// it landed or after; failed runs after a failure, ok after success.
func (s mstate) written(i int, ev intake.Event, kv, chaos bool, what string, failed, ok func(*mstate)) []move {
	a := s.act[i]
	n := s
	n.write(ev, s.role(i), a.stamp, a.blind)
	n.holds(i, ev)
	ok(&n)
	out := []move{{n, what}}
	if chaos && s.faults > 0 {
		before := s
		before.faults--
		failed(&before)
		after := s
		after.faults--
		after.write(ev, s.role(i), a.stamp, a.blind)
		after.holds(i, ev)
		failed(&after)
		out = append(out, move{before, what + ": fails before it lands"}, move{after, what + ": lands, but fails"})
	}
	return out
}

// holds makes actor i the holder of the key its claim (ev) left held.
func (s *mstate) holds(i int, ev intake.Event) {
	if (ev == intake.EventClaim || ev == intake.EventTakeOver) && s.cur.phase == intake.PhaseHeld {
		s.cur.holder, s.cur.from = uint8(i+1), s.act[i].from
	}
}

// lapseOf is the event of the lease's end of a claim that took its key in
// phase from.
func lapseOf(from intake.Phase) intake.Event {
	switch from {
	case intake.PhaseUnresolved:
		return intake.EventLapseGivenUp
	case intake.PhaseChecking:
		return intake.EventLapseChecking
	}
	return intake.EventLapse
}

// write moves the key by ev as the table says. KV has no compare-and-swap:
// a write the table has no row for, from the phase the key is really in
// (its writer read it stale), lands blind: a claim over a live claim
// replaces it, and a receipt over a stored one replaces it; anything
// else beside a stored outcome is a leftover the outcome wins over. The
// ledger refuses such a write.
func (s *mstate) write(ev intake.Event, by intake.Role, st stamp, blind bool) {
	prev := s.cur
	to, ok := intake.Next(s.cur.phase, ev, by)
	switch {
	case ok:
		s.cur.phase = to
		switch to {
		case intake.PhaseAbsent:
			s.cur = version{contested: s.cur.contested}
		case intake.PhaseStored:
			s.cur.body, s.cur.blind = st, blind
		default:
			if s.cur.stamp == 0 || ev == intake.EventClaim {
				s.cur.stamp, s.cur.blind = st, blind
			}
		}
		if to != intake.PhaseHeld {
			s.cur.holder, s.cur.from = 0, 0
		}
	case !s.kv:
		return
	case ev == intake.EventCommit:
		// KV writes result: whatever the key holds.
		s.cur = version{phase: intake.PhaseStored, stamp: s.cur.stamp, body: st, blind: blind, contested: s.cur.contested}
	case (ev == intake.EventClaim || ev == intake.EventTakeOver) && s.cur.phase == intake.PhaseHeld:
		// A claim over another's live claim: the key keeps the one
		// written last, with the acceptedAt its writer chose.
		s.cur.stamp, s.cur.blind, s.cur.contested = st, blind, true
	default:
		return
	}
	if s.cur != prev {
		s.prev, s.staleOK = prev, true
	}
}

// unknown ends actor i's call without an answer: released open; the
// settler's last call is, over KV, checked once reads have caught up,
// and that check's call, or the ledger's last, gives up and pages.
func (s mstate) unknown(i int, kv, chaos bool, what string) []move {
	a := s.act[i]
	ev := releaseAfterUnknown(a.from, i == settler && (a.last || a.from == intake.PhaseChecking), kv)
	return s.written(i, ev, kv, chaos, what+", "+ev.String(), func(m *mstate) {
		m.finish(i, kv)
	}, func(m *mstate) {
		if ev == intake.EventGiveUp && i == settler {
			// Over KV a claim written blind beside the settler's, or
			// one its blind claim displaced, may have stored it meanwhile
			// (the simulator's allowance).
			m.pagedStored = m.pagedStored || (m.cur.phase == intake.PhaseStored && !a.stale && !m.cur.blind && !m.cur.contested)
		}
		m.finish(i, kv)
	})
}

// releaseAfterUnknown is the event a claim taken in phase from is released
// by once its call ends without an answer, as the Service and the stores
// decide it (intake.Unanswered, then intake.StepRelease): last is the
// settler's last call, which the give-up's check always is.
func releaseAfterUnknown(from intake.Phase, last, kv bool) intake.Event {
	lag := time.Duration(0)
	if kv {
		lag = time.Minute
	}
	c := intake.TakeOver(intake.Claim{Token: "t", KeepUntil: modelNow.Add(time.Hour)}, modelRecord(from))
	c, _ = intake.Unanswered(c, last, true, lag, time.Hour, modelNow)
	move, err := intake.StepRelease(c, intake.PhaseHeld, false)
	if err != nil {
		panic(err)
	}
	return move.Event
}

// finish ends actor i's run: a client answers 503 and its isolate
// remembers the key it left open; the settler starts over.
func (s *mstate) finish(i int, kv bool) {
	if i == settler {
		s.act[i] = mactor{}
		return
	}
	if s.act[i].pc == pcHolding || s.act[i].pc == pcAnswered {
		s.opened[i] = s.act[i].stamp
	}
	s.act[i].pc = pcDone
}

// commit stores actor i's outcome, the OMS's answer: a client is answered
// first over the ledger (the commit follows the response), after it over
// KV.
func (s mstate) commit(i int, kv, chaos bool, who string) []move {
	a := s.act[i]
	n := s
	if i != settler && !kv {
		n.answer(i, a.stamp, a.blind)
		n.cache[i] = a.stamp
	}
	return n.written(i, intake.EventCommit, kv, chaos, who+" commits", func(m *mstate) {
		m.write(intake.EventReleaseOpen, m.role(i), a.stamp, a.blind)
		if i != settler && !kv {
			m.cache[i] = 0 // the commit failed: no longer replayed from memory
		}
		m.finish(i, kv)
	}, func(m *mstate) {
		if i != settler && kv {
			m.answer(i, a.stamp, a.blind)
			m.cache[i] = a.stamp
		}
		if i == settler {
			m.act[i] = mactor{}
			return
		}
		m.act[i].pc = pcDone
	})
}

// midRun reports whether a holds a claim it may still call the gateway
// or commit under.
func (a mactor) midRun() bool { return a.pc == pcHolding || a.pc == pcAnswered }

// clientMidCall reports whether a client holds a claim it may still
// call the gateway or commit under.
func (s mstate) clientMidCall() bool {
	for i := range settler {
		if s.act[i].midRun() {
			return true
		}
	}
	return false
}

// answer records a 2xx of stamp st given to client i.
func (s *mstate) answer(i int, st stamp, blind bool) {
	s.answered |= 1 << st
	s.blindAns = s.blindAns || blind
}

// check is the invariants that hold in every state.
func (s mstate) check(kv bool) error {
	switch {
	case s.placed != 0 && s.cur.phase == intake.PhaseAbsent:
		return fmt.Errorf("the OMS has the order, but the key is absent: a retry places it again under another acceptedAt")
	case s.cur.phase == intake.PhaseStored && s.placed == 0:
		return fmt.Errorf("a receipt is stored for an order the OMS never saw")
	case s.answered&(s.answered-1) != 0 && !s.blindAns:
		return fmt.Errorf("clients were given receipts of two acceptedAts (%08b), neither minted after a stale read", s.answered)
	case s.pagedStored:
		return fmt.Errorf("the settler paged an order whose receipt was stored, by a read that was not stale")
	}
	return nil
}

// settles runs s on with no more faults, deaths or stale reads, each
// actor's first step first: every actor must finish, and a fresh retry
// must get the receipt every client was given.
func (s mstate) settles(kv bool) error {
	s.faults, s.deaths, s.staleOK = 0, 0, false
	for steps := 0; ; steps++ {
		if steps > 60 {
			return fmt.Errorf("no end after 60 steps: %+v", s)
		}
		if err := s.check(kv); err != nil {
			return err
		}
		moves := s.moves(kv, false)
		if len(moves) == 0 {
			break
		}
		s = moves[0].s
	}
	// A fresh retry replays what is stored, or takes the key over and
	// stores a receipt under the acceptedAt it keeps (the OMS answers its
	// order id again).
	final, blind := s.cur.stamp, s.cur.blind
	switch s.cur.phase {
	case intake.PhaseStored:
		final = s.cur.body
	case intake.PhaseOpen, intake.PhaseChecking, intake.PhaseUnresolved:
		if _, ok := intake.Next(s.cur.phase, intake.EventTakeOver, intake.RoleClient); !ok {
			return fmt.Errorf("a client's retry cannot take over a key left %s", s.cur.phase)
		}
	case intake.PhaseAbsent:
		if s.answered != 0 || s.placed != 0 {
			return fmt.Errorf("the key ends absent, with an order at the OMS or a client told it was accepted")
		}
		return nil
	default:
		return fmt.Errorf("the key ends %s", s.cur.phase)
	}
	if s.answered != 0 && s.answered != 1<<final && !s.blindAns && !blind {
		return fmt.Errorf("a fresh retry gets the receipt of acceptedAt %d, but clients were given %08b", final, s.answered)
	}
	return nil
}
