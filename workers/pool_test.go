package workers

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestGoroutinePoolRunsEveryFunction(t *testing.T) {
	p := newGoroutinePool(4)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran := map[int]bool{}
	for i := range 100 {
		wg.Add(1)
		p.run(func() {
			defer wg.Done()
			mu.Lock()
			ran[i] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if got, want := len(ran), 100; got != want {
		t.Errorf("ran %d functions, want %d", got, want)
	}
}

func TestGoroutinePoolReusesWaitingGoroutines(t *testing.T) {
	// One processor, so the pool's goroutine runs only when this one
	// yields: it is waiting for work once idle counts it.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := newGoroutinePool(2)
	done := make(chan struct{})
	for range 100 {
		p.run(func() { done <- struct{}{} })
		<-done
		for p.idle.Load() == 0 {
			runtime.Gosched()
		}
	}
	if got, want := p.started.Load(), int32(1); got != want {
		t.Errorf("100 functions run one after another started %d goroutines, want %d", got, want)
	}
}

func TestGoroutinePoolPrestartedGoroutinesTakeTheWork(t *testing.T) {
	// One processor, so a prestarted goroutine that idle counts runs on
	// to wait for work before this one goes on.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 4
	p := newGoroutinePool(n)
	p.prestart(n)
	for deadline := time.Now().Add(5 * time.Second); p.idle.Load() < n && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	gate := make(chan struct{})
	var started sync.WaitGroup
	for range n {
		started.Add(1)
		p.run(func() { started.Done(); <-gate })
	}
	started.Wait()
	close(gate)
	if got, want := p.started.Load(), int32(n); got != want {
		t.Errorf("%d functions at once on %d prestarted goroutines started %d goroutines in all, want %d", n, n, got, want)
	}
}

func TestGoroutinePoolStartsLaterWithTheFirstRun(t *testing.T) {
	const n = 4
	p := newGoroutinePool(n)
	p.startLater(n)
	if got := p.started.Load(); got != 0 {
		t.Fatalf("%d goroutines started before the first run, want 0", got)
	}
	ran := make(chan struct{})
	p.run(func() { close(ran) })
	<-ran
	for deadline := time.Now().Add(5 * time.Second); p.idle.Load() < n && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	if got, want := p.idle.Load(), int32(n); got != want {
		t.Errorf("%d goroutines waiting after the first run, want %d", got, want)
	}
	p.run(func() {})
	if got, want := p.started.Load(), int32(n); got != want {
		t.Errorf("%d goroutines started after two runs, want %d", got, want)
	}
}

func TestGoroutinePoolKeepsAtMostMaxIdle(t *testing.T) {
	const maxIdle = 3
	p := newGoroutinePool(maxIdle)
	base := runtime.NumGoroutine()
	gate := make(chan struct{})
	var started sync.WaitGroup
	for range 10 {
		started.Add(1)
		p.run(func() { started.Done(); <-gate })
	}
	started.Wait()
	close(gate)
	// The seven goroutines past maxIdle end once their function returns:
	// wait for them, for a bounded time.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base+maxIdle && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	if got, want := runtime.NumGoroutine(), base+maxIdle; got > want {
		t.Errorf("%d goroutines after the functions returned, want at most %d", got, want)
	}
	if got := p.idle.Load(); got > maxIdle {
		t.Errorf("%d goroutines idle, want at most %d", got, maxIdle)
	}
}
