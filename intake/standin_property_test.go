package intake_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/devtools/rapidflags"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// TestMain fixes rapid's seed, as the simulator does, so that go test's
// histories are the same every run and CI is green or red for a reason;
// -rapid.seed or RAPID_SEED, and -rapid.checks, ask for others.
func TestMain(m *testing.M) {
	flag.Parse()
	rapidflags.Default("seed", fmt.Sprint(propertySeed))
	flag.Set("rapid.nofailfile", "true")
	os.Exit(m.Run())
}

// propertySeed is the seed of go test's histories.
const propertySeed = 20261124

// TestStandInAnswersOnlyWhatStays is the simulator's promise for the
// stand-in, which the simulator (whose worlds all have an OMS) does not
// model: over random histories of two instances sharing KV, writes that
// fail before or after they land, work after the response that runs late
// or never (an instance that dies), and time past the claim's lease,
// every 2xx a client got is what a retry from a fresh instance gets once
// storage is well again: the stand-in has no settler to store a receipt
// later, so none may be answered that could be lost.
func TestStandInAnswersOnlyWhatStays(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		mem := kv.NewMemoryNamespace()
		now := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		mem.Now = clock
		// Writes fail as the history says, in the order they are made
		// (reads never: they run at once, in no fixed order).
		var mu sync.Mutex
		faults := rapid.SliceOfN(rapid.IntRange(0, 5), 0, 30).Draw(rt, "write faults") // 1: before, 2: after; else none
		nextFault := func() int {
			mu.Lock()
			defer mu.Unlock()
			if len(faults) == 0 {
				return 0
			}
			f := faults[0]
			faults = faults[1:]
			return f
		}
		errWrite := errors.New("kv: injected")
		ns := &kvtest.Hooked{Namespace: mem,
			Before: func(op kvtest.Op, _ string) error {
				if op != kvtest.OpGet && nextFault() == 1 {
					return errWrite
				}
				return nil
			},
			After: func(op kvtest.Op, _ string, err error) error {
				if err == nil && op != kvtest.OpGet && nextFault() == 2 {
					return errWrite
				}
				return err
			},
		}
		var tasks []func(context.Context)
		instance := func() *intake.Service {
			store := kv.NewStore(ns, clock)
			store.ReleaseClaims = true
			return intake.New(store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Now: clock,
				Defer: func(_ context.Context, task func(context.Context)) { tasks = append(tasks, task) }})
		}
		instances := []*intake.Service{instance(), instance()}
		answered := map[string][]byte{} // key → the 2xx body its clients got
		for i, steps := 0, rapid.IntRange(1, 12).Draw(rt, "steps"); i < steps; i++ {
			switch rapid.IntRange(0, 4).Draw(rt, "step") {
			case 0, 1: // a client submits, or retries
				id := rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "key")
				svc := instances[rapid.IntRange(0, 1).Draw(rt, "instance")]
				out, err := svc.Submit(context.Background(), key(id), []byte(validBody), "")
				if err != nil {
					continue
				}
				if first, ok := answered[id]; ok && !bytes.Equal(first, out.Receipt) {
					rt.Fatalf("key %s: a client got %s, another %s", id, first, out.Receipt)
				}
				answered[id] = out.Receipt
			case 2: // the work after the responses runs
				for len(tasks) > 0 {
					task := tasks[0]
					tasks = tasks[1:]
					task(context.Background())
				}
			case 3: // an instance dies: its pending work and memory are gone
				tasks = nil
				instances[rapid.IntRange(0, 1).Draw(rt, "instance")] = instance()
			case 4:
				now = now.Add(rapid.SampledFrom([]time.Duration{time.Second, 30 * time.Second, config.DefaultPendingTTL + time.Second}).Draw(rt, "time"))
			}
		}
		// Storage is well again, the lease is over, and a client retries
		// each key from an instance with nothing in memory.
		mu.Lock()
		faults = nil
		mu.Unlock()
		tasks = nil
		now = now.Add(config.DefaultPendingTTL + time.Second)
		fresh := instance()
		for id, body := range answered {
			out, err := fresh.Submit(context.Background(), key(id), []byte(validBody), "")
			if err != nil || !bytes.Equal(out.Receipt, body) {
				rt.Fatalf("key %s: a client got %s, and a retry later gets %s, %v", id, body, out.Receipt, err)
			}
		}
	})
}
