package ledger

import (
	"errors"
	"strconv"
	"sync"

	"github.com/edge-orders/edge-orders/intake"
)

// settleAll settles keys all at once, each on a goroutine that run
// starts (the Worker's kept ones: workers.Go), and waits for them. A
// key whose settling panics stays as it was, due again once its claim's
// lease ends, and the others go on: settleAll says so, and the alarm
// fails. Under standard Go a panic on a goroutine nobody recovers would
// end the Go program, and every request in flight on the isolate with it
// (under TinyGo any panic traps).
func settleAll(keys []intake.Key, run func(func()), settle func(intake.Key)) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		panicked int
		first    string
	)
	for _, key := range keys {
		wg.Add(1)
		run(func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					mu.Lock()
					defer mu.Unlock()
					if panicked++; panicked == 1 {
						first = panicText(p)
					}
				}
			}()
			settle(key)
		})
	}
	wg.Wait()
	if panicked > 0 {
		return errors.New("ledger: settling " + strconv.Itoa(panicked) + " of the alarm's " + strconv.Itoa(len(keys)) +
			" keys panicked (they stay due): " + first)
	}
	return nil
}

// panicText is what a recovered panic says, where it says it as text.
func panicText(p any) string {
	switch p := p.(type) {
	case error:
		return p.Error()
	case string:
		return p
	}
	return "a panic"
}
