package kvtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/edge-orders/edge-orders/kv"
)

// The doubles below wrap any kv.Namespace, the way testing/fstest ships MapFS
// beside TestFS: the store behind them stays a real one (kv.MemoryNamespace, or a
// namespace), and they only watch, stall or fail the calls that pass. Their
// zero values pass every call through to Namespace, which must be set.

// Op names a kv.Namespace method.
type Op uint8

// The kv.Namespace methods.
const (
	OpGet Op = iota + 1
	OpPut
	OpDelete
)

func (o Op) String() string {
	switch o {
	case OpGet:
		return "Get"
	case OpPut:
		return "Put"
	case OpDelete:
		return "Delete"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Call is one call that reached the Namespace behind a Recording.
type Call struct {
	Op  Op
	Key string
	// Entry and Options are what a Put stored; zero for Get and Delete.
	Entry   kv.Entry
	Options kv.PutOptions
	// Err is what the Namespace returned.
	Err error
}

// String is the call as "Put result:k", for messages.
func (c Call) String() string { return c.Op.String() + " " + c.Key }

// Recording is a kv.Namespace that records every call it passes to Namespace, with
// the Namespace's answer, so a test can tell which calls a request made and
// prove that it made none. Calls are recorded as they return, so calls that
// overlap are recorded in the order they ended.
type Recording struct {
	Namespace kv.Namespace

	mu    sync.Mutex
	calls []Call
}

func (r *Recording) record(c Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// Get implements kv.Namespace.
func (r *Recording) Get(ctx context.Context, key string) (kv.Entry, error) {
	e, err := r.Namespace.Get(ctx, key)
	r.record(Call{Op: OpGet, Key: key, Err: err})
	return e, err
}

// Put implements kv.Namespace.
func (r *Recording) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	err := r.Namespace.Put(ctx, key, e, opts)
	r.record(Call{Op: OpPut, Key: key, Entry: e, Options: opts, Err: err})
	return err
}

// Delete implements kv.Namespace.
func (r *Recording) Delete(ctx context.Context, key string) error {
	err := r.Namespace.Delete(ctx, key)
	r.record(Call{Op: OpDelete, Key: key, Err: err})
	return err
}

// Calls returns the calls recorded so far.
func (r *Recording) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Filter returns the recorded calls of op on keys starting with prefix; ""
// matches every key.
func (r *Recording) Filter(op Op, prefix string) []Call {
	var out []Call
	for _, c := range r.Calls() {
		if c.Op == op && strings.HasPrefix(c.Key, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many recorded calls were op on a key starting with
// prefix.
func (r *Recording) Count(op Op, prefix string) int { return len(r.Filter(op, prefix)) }

// Writes returns the recorded Puts and Deletes.
func (r *Recording) Writes() []Call {
	var out []Call
	for _, c := range r.Calls() {
		if c.Op != OpGet {
			out = append(out, c)
		}
	}
	return out
}

// ErrFault is what the calls a Faulty fails return, wrapped, unless its Err
// is set.
var ErrFault = errors.New("kvtest: injected fault")

// Fault selects calls for a Faulty to fail.
type Fault struct {
	Op Op
	// Prefix selects the keys that start with it; "" selects every key.
	Prefix string
	// Nth fails only the nth selected call, counting from 1; 0 fails every
	// selected call.
	Nth int
	// Applied lets a Put or Delete take effect before the error is
	// returned, as a KV write can land although the Worker is told it
	// failed.
	Applied bool
}

// Faulty is a kv.Namespace that fails the calls its faults select and passes
// every other call to Namespace. A failed call returns an error wrapping Err
// (ErrFault when nil) and naming the method and key.
type Faulty struct {
	Namespace kv.Namespace
	// Err stands for what a real failure carries, such as the internal
	// details a KV error holds and clients must never see.
	Err error

	mu     sync.Mutex
	faults []Fault
	seen   []int
}

// Set replaces the faults and restarts their counts; Set() turns every
// fault off.
func (f *Faulty) Set(faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append([]Fault(nil), faults...)
	f.seen = make([]int, len(faults))
}

// trip reports whether a call of op on key fails, and if so whether it
// takes effect first.
func (f *Faulty) trip(op Op, key string) (fail, applied bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Every fault counts every call it selects, so that faults with Nth 1
	// and Nth 2 fail the first two calls.
	for i, ft := range f.faults {
		if ft.Op != op || !strings.HasPrefix(key, ft.Prefix) {
			continue
		}
		f.seen[i]++
		if !fail && (ft.Nth == 0 || ft.Nth == f.seen[i]) {
			fail, applied = true, ft.Applied
		}
	}
	return fail, applied
}

func (f *Faulty) fail(op Op, key string) error {
	err := f.Err
	if err == nil {
		err = ErrFault
	}
	return fmt.Errorf("%v %q: %w", op, key, err)
}

// Get implements kv.Namespace.
func (f *Faulty) Get(ctx context.Context, key string) (kv.Entry, error) {
	if fail, _ := f.trip(OpGet, key); fail {
		return kv.Entry{}, f.fail(OpGet, key)
	}
	return f.Namespace.Get(ctx, key)
}

// Put implements kv.Namespace.
func (f *Faulty) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	fail, applied := f.trip(OpPut, key)
	if !fail {
		return f.Namespace.Put(ctx, key, e, opts)
	}
	if applied {
		if err := f.Namespace.Put(ctx, key, e, opts); err != nil {
			return err
		}
	}
	return f.fail(OpPut, key)
}

// Delete implements kv.Namespace.
func (f *Faulty) Delete(ctx context.Context, key string) error {
	fail, applied := f.trip(OpDelete, key)
	if !fail {
		return f.Namespace.Delete(ctx, key)
	}
	if applied {
		if err := f.Namespace.Delete(ctx, key); err != nil {
			return err
		}
	}
	return f.fail(OpDelete, key)
}

// Hooked is a kv.Namespace that runs hooks around the calls it passes to Namespace,
// for what Faulty cannot say: hold a call until another request catches up,
// cancel a request once a call has landed, or panic as a broken binding
// would. Hooks run on the caller's goroutine and must be safe for the
// concurrent calls the test makes; a nil hook does nothing.
type Hooked struct {
	Namespace kv.Namespace
	// Before runs ahead of each call; if it returns an error, the call is
	// not made and the error is returned.
	Before func(op Op, key string) error
	// After runs once each call has returned, with its error, and returns
	// the error the caller gets.
	After func(op Op, key string, err error) error
}

func (h *Hooked) before(op Op, key string) error {
	if h.Before == nil {
		return nil
	}
	return h.Before(op, key)
}

func (h *Hooked) after(op Op, key string, err error) error {
	if h.After == nil {
		return err
	}
	return h.After(op, key, err)
}

// Get implements kv.Namespace.
func (h *Hooked) Get(ctx context.Context, key string) (kv.Entry, error) {
	if err := h.before(OpGet, key); err != nil {
		return kv.Entry{}, err
	}
	e, err := h.Namespace.Get(ctx, key)
	if err = h.after(OpGet, key, err); err != nil {
		return kv.Entry{}, err
	}
	return e, nil
}

// Put implements kv.Namespace.
func (h *Hooked) Put(ctx context.Context, key string, e kv.Entry, opts kv.PutOptions) error {
	if err := h.before(OpPut, key); err != nil {
		return err
	}
	return h.after(OpPut, key, h.Namespace.Put(ctx, key, e, opts))
}

// Delete implements kv.Namespace.
func (h *Hooked) Delete(ctx context.Context, key string) error {
	if err := h.before(OpDelete, key); err != nil {
		return err
	}
	return h.after(OpDelete, key, h.Namespace.Delete(ctx, key))
}
