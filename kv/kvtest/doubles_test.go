package kvtest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// TestDoublesConform checks that each double, with nothing armed, is a
// kv.Namespace that behaves like the Memory it wraps.
func TestDoublesConform(t *testing.T) {
	t.Run("Recording passes every call through", func(t *testing.T) {
		kvtest.Run(t, &kvtest.Recording{Namespace: kv.NewMemoryNamespace()}, "conformance:")
	})
	t.Run("Faulty without faults passes every call through", func(t *testing.T) {
		kvtest.Run(t, &kvtest.Faulty{Namespace: kv.NewMemoryNamespace()}, "conformance:")
	})
	t.Run("Hooked without hooks passes every call through", func(t *testing.T) {
		kvtest.Run(t, &kvtest.Hooked{Namespace: kv.NewMemoryNamespace()}, "conformance:")
	})
}

func TestRecording(t *testing.T) {
	ctx := context.Background()
	rec := &kvtest.Recording{Namespace: kv.NewMemoryNamespace()}
	entry := kv.Entry{Value: "v", Metadata: []byte(`{"m":1}`)}
	if err := rec.Put(ctx, "a:1", entry, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Get(ctx, "a:1"); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Get(ctx, "b:1"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get(b:1) error = %v, want ErrNotFound", err)
	}
	if err := rec.Put(ctx, "b:1", kv.Entry{Value: "v"}, kv.PutOptions{TTL: time.Second}); !errors.Is(err, kv.ErrInvalid) {
		t.Fatalf("Put(b:1, 1s) error = %v, want ErrInvalid", err)
	}
	if err := rec.Delete(ctx, "a:1"); err != nil {
		t.Fatal(err)
	}

	t.Run("calls are recorded in order with the store's answers", func(t *testing.T) {
		calls := rec.Calls()
		var got []string
		for _, c := range calls {
			got = append(got, c.String())
		}
		want := []string{"Put a:1", "Get a:1", "Get b:1", "Put b:1", "Delete a:1"}
		if !slices.Equal(got, want) {
			t.Fatalf("Calls = %q, want %q", got, want)
		}
		if c := calls[0]; c.Entry.Value != "v" || string(c.Entry.Metadata) != `{"m":1}` || c.Options.TTL != kv.MinTTL || c.Err != nil {
			t.Errorf("first Put recorded as %+v, want its entry, TTL and no error", c)
		}
		if c := calls[2]; !errors.Is(c.Err, kv.ErrNotFound) {
			t.Errorf("Get b:1 recorded error %v, want ErrNotFound", c.Err)
		}
		if c := calls[3]; !errors.Is(c.Err, kv.ErrInvalid) {
			t.Errorf("refused Put recorded error %v, want ErrInvalid", c.Err)
		}
	})
	t.Run("Count and Filter select by method and key prefix", func(t *testing.T) {
		tests := []struct {
			op     kvtest.Op
			prefix string
			want   int
		}{
			{kvtest.OpGet, "", 2},
			{kvtest.OpGet, "a:", 1},
			{kvtest.OpPut, "b:", 1},
			{kvtest.OpDelete, "b:", 0},
		}
		for _, tc := range tests {
			if got := rec.Count(tc.op, tc.prefix); got != tc.want {
				t.Errorf("Count(%v, %q) = %d, want %d", tc.op, tc.prefix, got, tc.want)
			}
			for _, c := range rec.Filter(tc.op, tc.prefix) {
				if c.Op != tc.op {
					t.Errorf("Filter(%v, %q) returned %v", tc.op, tc.prefix, c)
				}
			}
		}
	})
	t.Run("Writes are the Puts and Deletes", func(t *testing.T) {
		var got []string
		for _, c := range rec.Writes() {
			got = append(got, c.String())
		}
		if want := []string{"Put a:1", "Put b:1", "Delete a:1"}; !slices.Equal(got, want) {
			t.Errorf("Writes = %q, want %q", got, want)
		}
	})
}

func TestFaulty(t *testing.T) {
	ctx := context.Background()
	errUpstream := errors.New("upstream 500")
	tests := []struct {
		name    string
		err     error // Faulty.Err
		fault   kvtest.Fault
		call    func(s kv.Namespace) error
		wantErr error
		// wantStored is whether k:1 holds a value afterwards.
		wantStored bool
	}{
		{
			name:    "failed Get returns ErrFault",
			fault:   kvtest.Fault{Op: kvtest.OpGet},
			call:    func(s kv.Namespace) error { _, err := s.Get(ctx, "k:1"); return err },
			wantErr: kvtest.ErrFault,
		},
		{
			name:    "failed Put wraps Err and stores nothing",
			err:     errUpstream,
			fault:   kvtest.Fault{Op: kvtest.OpPut, Prefix: "k:"},
			call:    func(s kv.Namespace) error { return s.Put(ctx, "k:1", kv.Entry{Value: "v"}, kv.PutOptions{}) },
			wantErr: errUpstream,
		},
		{
			name:       "applied Put fails but lands",
			fault:      kvtest.Fault{Op: kvtest.OpPut, Applied: true},
			call:       func(s kv.Namespace) error { return s.Put(ctx, "k:1", kv.Entry{Value: "v"}, kv.PutOptions{}) },
			wantErr:    kvtest.ErrFault,
			wantStored: true,
		},
		{
			name:  "fault on another prefix passes the call",
			fault: kvtest.Fault{Op: kvtest.OpPut, Prefix: "other:"},
			call:  func(s kv.Namespace) error { return s.Put(ctx, "k:1", kv.Entry{Value: "v"}, kv.PutOptions{}) },
			// The Put goes through.
			wantStored: true,
		},
		{
			name:  "fault on another method passes the call",
			fault: kvtest.Fault{Op: kvtest.OpDelete},
			call:  func(s kv.Namespace) error { return s.Put(ctx, "k:1", kv.Entry{Value: "v"}, kv.PutOptions{}) },
			// The Put goes through.
			wantStored: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemoryNamespace()
			f := &kvtest.Faulty{Namespace: mem, Err: tc.err}
			f.Set(tc.fault)
			err := tc.call(f)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("call error = %v, want %v", err, tc.wantErr)
			}
			if _, err := mem.Get(ctx, "k:1"); (err == nil) != tc.wantStored {
				t.Errorf("k:1 stored = %v, want %v", err == nil, tc.wantStored)
			}
		})
	}

	t.Run("Nth fails only that call and Set restarts the count", func(t *testing.T) {
		f := &kvtest.Faulty{Namespace: kv.NewMemoryNamespace()}
		f.Set(kvtest.Fault{Op: kvtest.OpDelete, Nth: 2})
		var got []bool
		for range 3 {
			got = append(got, f.Delete(ctx, "k:1") != nil)
		}
		if want := []bool{false, true, false}; !slices.Equal(got, want) {
			t.Errorf("Deletes failed = %v, want %v", got, want)
		}
		f.Set(kvtest.Fault{Op: kvtest.OpDelete, Nth: 1})
		if err := f.Delete(ctx, "k:1"); !errors.Is(err, kvtest.ErrFault) {
			t.Errorf("first Delete after Set: error = %v, want ErrFault", err)
		}
		f.Set()
		if err := f.Delete(ctx, "k:1"); err != nil {
			t.Errorf("Delete after Set(): error = %v, want nil", err)
		}
	})
	t.Run("error names the method and key", func(t *testing.T) {
		f := &kvtest.Faulty{Namespace: kv.NewMemoryNamespace()}
		f.Set(kvtest.Fault{Op: kvtest.OpGet})
		_, err := f.Get(ctx, "k:1")
		if got, want := err.Error(), `Get "k:1": `+kvtest.ErrFault.Error(); got != want {
			t.Errorf("error = %q, want %q", got, want)
		}
	})
}

func TestHooked(t *testing.T) {
	ctx := context.Background()
	errRefused := errors.New("refused")
	t.Run("Before's error is returned without the call", func(t *testing.T) {
		rec := &kvtest.Recording{Namespace: kv.NewMemoryNamespace()}
		h := &kvtest.Hooked{Namespace: rec, Before: func(op kvtest.Op, key string) error {
			if op == kvtest.OpPut {
				return errRefused
			}
			return nil
		}}
		if err := h.Put(ctx, "k", kv.Entry{Value: "v"}, kv.PutOptions{}); !errors.Is(err, errRefused) {
			t.Fatalf("Put error = %v, want the hook's", err)
		}
		if _, err := h.Get(ctx, "k"); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("Get error = %v, want ErrNotFound", err)
		}
		if got := rec.Count(kvtest.OpPut, ""); got != 0 {
			t.Errorf("Puts that reached the store = %d, want 0", got)
		}
	})
	t.Run("After sees the call's result and decides the error", func(t *testing.T) {
		mem := kv.NewMemoryNamespace()
		var seen []string
		h := &kvtest.Hooked{Namespace: mem, After: func(op kvtest.Op, key string, err error) error {
			seen = append(seen, op.String()+" "+key)
			if op == kvtest.OpDelete {
				return errRefused
			}
			return err
		}}
		if err := h.Put(ctx, "k", kv.Entry{Value: "v"}, kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if e, err := h.Get(ctx, "k"); err != nil || e.Value != "v" {
			t.Fatalf("Get = %q, %v; want v", e.Value, err)
		}
		if err := h.Delete(ctx, "k"); !errors.Is(err, errRefused) {
			t.Fatalf("Delete error = %v, want the hook's", err)
		}
		if _, err := mem.Get(ctx, "k"); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("k after the Delete: error = %v, want ErrNotFound (the Delete landed)", err)
		}
		if want := []string{"Put k", "Get k", "Delete k"}; !slices.Equal(seen, want) {
			t.Errorf("After saw %q, want %q", seen, want)
		}
	})
}
