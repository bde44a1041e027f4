package sim

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// errKilled unwinds an actor the history ends, or an isolate's death
// stopped, when the simulator clears it away.
type errKilled struct{}

// actor is one goroutine of the simulated world: a request, a task after
// its response, a queue delivery, a sweep, an alarm, or the driver. Only
// one actor runs at a time, and it runs until it yields: at every storage,
// gateway, queue and clock call, the scheduler picks who runs next.
type actor struct {
	name string
	// inst is the isolate the actor runs in (nil for the driver and the
	// ledger's alarm); gen is the isolate's generation when it started,
	// so an isolate's death stops all of its actors.
	inst *instance
	gen  int
	// inv is the invocation the actor's platform limits count against.
	inv *invocation
	// key is the key the actor is working on, for the gateway's record.
	key keyName
	// kind says what may happen to the actor: clients give up on
	// requests, isolates die under anything but the driver.
	kind actorKind
	// request is the request whose work after its response (Defer) this
	// actor does, nil for the request itself: the two are one request to
	// the checker, which names a request's own reads and claims.
	request *actor
	// clientGone is when a request's client gave up on it: the Worker
	// goes on, under waitUntil, for waitUntilLimit more.
	clientGone time.Time

	// reads is, for each KV key the actor read, how many writes the
	// namespace had taken then: a claim written after another's write
	// landed since is a claim at once.
	reads map[string]int
	// readAt is when it last read each.
	readAt map[string]time.Time

	wake   chan bool // true: run on; false: unwind
	wakeAt time.Time
	seq    int
}

type actorKind uint8

const (
	driverActor actorKind = iota
	requestActor
	taskActor // after a response, under waitUntil
	settlerActor
	alarmActor
	daemonActor // a pump that only starts others
)

// invocation is one Worker invocation: what the platform counts its
// operations against.
type invocation struct {
	kind   string
	kvOps  int
	listed int // of kvOps, list calls
	keyOps int // of kvOps, reads and writes of single keys
}

// scheduler runs the actors one at a time, in an order chosen by choose,
// on a virtual clock that moves only when every actor waits on it.
type scheduler struct {
	choose func(n int, label string) int
	now    time.Time

	ready   []*actor
	timers  []*actor // sorted by wakeAt, then seq
	parked  []*actor // stopped for good: cleared away at the end
	running *actor
	back    chan struct{}
	seq     int
	dying   bool
	// panicked is the first panic of an actor that was not an unwind,
	// with the actor's name and stack; rapid's own panics (a choice past
	// the end of a shrunk history) are kept as they are in rapidPanic.
	panicked   string
	rapidPanic any
	// stop, if set, is asked before each resumption whether the actor
	// runs on or is stopped for good (an isolate dies, waitUntil's time
	// after a client gave up runs out); true stops it.
	stop func(a *actor) bool
}

func newScheduler(start time.Time, choose func(n int, label string) int) *scheduler {
	return &scheduler{choose: choose, now: start, back: make(chan struct{})}
}

// Now is the virtual clock.
func (s *scheduler) Now() time.Time { return s.now }

// spawn starts f as a new actor, ready to run.
func (s *scheduler) spawn(a *actor, f func()) {
	a.wake = make(chan bool)
	s.seq++
	a.seq = s.seq
	go func() {
		defer func() {
			if p := recover(); p != nil {
				_, killed := p.(errKilled)
				switch {
				case killed || s.panicked != "" || s.rapidPanic != nil:
				case strings.HasPrefix(fmt.Sprintf("%T", p), "rapid."):
					s.rapidPanic = p
				default:
					s.panicked = fmt.Sprintf("%s: %v\n%s", a.name, p, debug.Stack())
				}
			}
			s.back <- struct{}{}
		}()
		if !<-a.wake {
			return
		}
		f()
	}()
	s.ready = append(s.ready, a)
}

// yield lets the scheduler run any ready actor before the running one
// goes on: every call that would await in a Worker yields.
func (s *scheduler) yield() {
	if s.dying {
		panic(errKilled{})
	}
	a := s.running
	s.ready = append(s.ready, a)
	s.pause(a)
}

// sleep parks the running actor until the clock reaches now+d.
func (s *scheduler) sleep(d time.Duration) {
	if s.dying {
		panic(errKilled{})
	}
	a := s.running
	a.wakeAt = s.now.Add(max(d, 0))
	s.seq++
	a.seq = s.seq
	i, _ := slices.BinarySearchFunc(s.timers, a, func(x, y *actor) int {
		if c := x.wakeAt.Compare(y.wakeAt); c != 0 {
			return c
		}
		return x.seq - y.seq
	})
	s.timers = slices.Insert(s.timers, i, a)
	s.pause(a)
}

// pause hands control back to the scheduler and waits to be resumed.
func (s *scheduler) pause(a *actor) {
	s.back <- struct{}{}
	if !<-a.wake {
		panic(errKilled{})
	}
}

// step runs one actor until it yields, sleeps or ends; false when nothing
// can run any more.
func (s *scheduler) step() bool {
	if len(s.ready) == 0 {
		if len(s.timers) == 0 {
			return false
		}
		s.now = s.timers[0].wakeAt
		for len(s.timers) > 0 && !s.timers[0].wakeAt.After(s.now) {
			s.ready = append(s.ready, s.timers[0])
			s.timers = s.timers[1:]
		}
	}
	i := 0
	if len(s.ready) > 1 {
		i = s.choose(len(s.ready), "next")
	}
	a := s.ready[i]
	s.ready = slices.Delete(s.ready, i, i+1)
	if s.stop != nil && s.stop(a) {
		s.parked = append(s.parked, a)
		return true
	}
	s.running = a
	a.wake <- true
	<-s.back
	s.running = nil
	return true
}

// park stops every actor for which stopped is true, wherever it waits.
func (s *scheduler) park(stopped func(a *actor) bool) {
	keep := func(list []*actor) []*actor {
		return slices.DeleteFunc(list, func(a *actor) bool {
			if stopped(a) {
				s.parked = append(s.parked, a)
				return true
			}
			return false
		})
	}
	s.ready, s.timers = keep(s.ready), keep(s.timers)
}

// clear unwinds every actor left, so that no goroutine outlives its
// history.
func (s *scheduler) clear() {
	s.dying = true
	all := append(append(s.parked, s.ready...), s.timers...)
	s.parked, s.ready, s.timers = nil, nil, nil
	for _, a := range all {
		a.wake <- false
		<-s.back
	}
}

// origin is the request a's work belongs to: a itself, or the request
// whose work after its response a does.
func (a *actor) origin() *actor {
	if a != nil && a.request != nil {
		return a.request
	}
	return a
}
