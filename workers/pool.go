package workers

import "sync/atomic"

// goroutinePool runs each function it is given on a goroutine it keeps for
// the next, so a request does not start a goroutine of its own. Under
// TinyGo every goroutine is a stack on the heap that the collector scans
// conservatively, and a stale word in one dead stack that looks like an
// address keeps another alive: goroutines that end with their requests
// left hundreds of dead stacks pinned at 32 clients. Kept goroutines
// leave no dead stacks. Under standard Go it only saves a goroutine's
// start.
type goroutinePool struct {
	work    chan func()
	idle    atomic.Int32 // goroutines waiting for work, or about to
	started atomic.Int32 // goroutines started, ever
	later   atomic.Int32 // goroutines the first run starts (startLater)
	maxIdle int32
}

// newGoroutinePool keeps up to maxIdle goroutines waiting for work; one
// that finishes with that many already waiting ends instead.
func newGoroutinePool(maxIdle int) *goroutinePool {
	return &goroutinePool{work: make(chan func()), maxIdle: int32(maxIdle)}
}

// prestart starts n goroutines that wait for work. Under TinyGo a
// goroutine's stack is one block of the stack size (build.sh), and a
// goroutine started once the heap is full of small long-lived objects,
// such as cached receipts, finds no free run that long, though most of the
// heap is free: TinyGo then doubles its heap. Started early (startLater),
// the stacks lie together near the heap's start.
func (p *goroutinePool) prestart(n int) {
	for range n {
		p.started.Add(1)
		go func() { p.serve(p.next()) }()
	}
}

// startLater has the first run prestart goroutines until n are started,
// from a goroutine queued behind that run's function: the first event's
// work runs first, and the stacks are allocated while it waits for its
// first binding call, with the heap still young, rather than while the
// program starts, where 64 stacks of 32 KB took most of TinyGo's start.
func (p *goroutinePool) startLater(n int) { p.later.Store(int32(n)) }

// run runs f on a waiting goroutine, or on a new one if none is waiting.
// It never blocks, so it may be called from a call into Go that must not
// (an entry).
func (p *goroutinePool) run(f func()) {
	select {
	case p.work <- f:
	default:
		p.started.Add(1)
		go p.serve(f)
	}
	if n := p.later.Swap(0); n > 0 {
		p.started.Add(1)
		go p.serve(func() { p.prestart(int(n - p.started.Load())) })
	}
}

// serve runs f, then whatever work comes next, until next ends it.
func (p *goroutinePool) serve(f func()) {
	for ; f != nil; f = p.next() {
		f()
	}
}

// next waits for work, or returns nil, for the goroutine to end, if
// maxIdle goroutines are waiting already.
func (p *goroutinePool) next() func() {
	if p.idle.Add(1) > p.maxIdle {
		p.idle.Add(-1)
		return nil
	}
	f := <-p.work
	p.idle.Add(-1)
	return f
}

// maxIdleGoroutines is how many goroutines the Worker keeps waiting: more
// than the requests an isolate serves at once in the soak at 32 clients,
// at the cost of one stack each (32 KB under TinyGo, see build.sh).
const maxIdleGoroutines = 64

// goroutines runs every event's work in package workers: requests, tasks
// after the response, alarms, queue messages and Cron Triggers. Under
// TinyGo its goroutines start with the program (entry_tinygo_js.go).
var goroutines = newGoroutinePool(maxIdleGoroutines)

// Go runs f on one of the goroutines the Worker keeps, or on a new one if
// none is waiting, rather than on a goroutine of its own: for work a
// Worker event fans out, such as an alarm's keys (see prestart for what a
// goroutine started late costs under TinyGo).
func Go(f func()) { goroutines.run(f) }
