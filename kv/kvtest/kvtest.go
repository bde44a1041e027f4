// Package kvtest checks that a kv.Namespace behaves like Workers KV, and wraps
// any kv.Namespace in test doubles that record, fail or hook its calls.
package kvtest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/kv"
)

// Run checks s against the behaviour every kv.Namespace must share with Workers KV:
// missing keys, round trips with metadata, overwrites, deletes, and the limits
// KV enforces. Keys it writes start with prefix, so that runs against a
// persistent store do not collide.
func Run(t *testing.T, s kv.Namespace, prefix string) {
	ctx := context.Background()
	key := func(name string) string { return prefix + name }

	t.Run("missing key is ErrNotFound", func(t *testing.T) {
		_, err := s.Get(ctx, key("missing"))
		if !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("Get(missing) error = %v, want ErrNotFound", err)
		}
	})

	t.Run("put then get returns value and metadata", func(t *testing.T) {
		want := kv.Entry{Value: `{"a":"ü 😀"}`, Metadata: []byte(`{"fingerprint":"abc"}`)}
		if err := s.Put(ctx, key("roundtrip"), want, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := s.Get(ctx, key("roundtrip"))
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got.Value != want.Value || string(got.Metadata) != string(want.Metadata) {
			t.Fatalf("Get = %q %s, want %q %s", got.Value, got.Metadata, want.Value, want.Metadata)
		}
	})

	t.Run("a read of several keys gives each its entry, nil for one missing", func(t *testing.T) {
		if err := s.Put(ctx, key("many"), kv.Entry{Value: "v", Metadata: []byte(`{"m":1}`)}, kv.PutOptions{}); err != nil {
			t.Fatalf("Put: %v", err)
		}
		// Through the binding's GetMany in workerd, one Get after another
		// in memory: Store's lookup reads a key's receipt and claim so.
		got, err := kv.GetMany(ctx, s, key("missing"), key("many"))
		if err != nil {
			t.Fatalf("GetMany: %v", err)
		}
		if len(got) != 2 || got[0] != nil || got[1] == nil || got[1].Value != "v" || string(got[1].Metadata) != `{"m":1}` {
			t.Fatalf("GetMany(missing, many) = %v, want [nil, v with its metadata]", got)
		}
	})

	t.Run("entry without metadata has nil metadata", func(t *testing.T) {
		if err := s.Put(ctx, key("plain"), kv.Entry{Value: "1"}, kv.PutOptions{}); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := s.Get(ctx, key("plain"))
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got.Value != "1" || got.Metadata != nil {
			t.Fatalf("Get = %q %q, want \"1\" and nil metadata", got.Value, got.Metadata)
		}
	})

	t.Run("empty value is stored, not missing", func(t *testing.T) {
		if err := s.Put(ctx, key("empty"), kv.Entry{}, kv.PutOptions{}); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := s.Get(ctx, key("empty"))
		if err != nil || got.Value != "" {
			t.Fatalf("Get = %q, %v; want \"\", nil", got.Value, err)
		}
	})

	t.Run("last put wins", func(t *testing.T) {
		for _, v := range []string{"first", "second"} {
			if err := s.Put(ctx, key("overwrite"), kv.Entry{Value: v}, kv.PutOptions{}); err != nil {
				t.Fatalf("Put(%s): %v", v, err)
			}
		}
		got, err := s.Get(ctx, key("overwrite"))
		if err != nil || got.Value != "second" {
			t.Fatalf("Get = %q, %v; want \"second\", nil", got.Value, err)
		}
	})

	t.Run("delete removes and is idempotent", func(t *testing.T) {
		if err := s.Put(ctx, key("doomed"), kv.Entry{Value: "x"}, kv.PutOptions{}); err != nil {
			t.Fatalf("Put: %v", err)
		}
		for i := 0; i < 2; i++ {
			if err := s.Delete(ctx, key("doomed")); err != nil {
				t.Fatalf("Delete #%d: %v", i+1, err)
			}
		}
		if _, err := s.Get(ctx, key("doomed")); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("Get after Delete error = %v, want ErrNotFound", err)
		}
	})

	t.Run("limits KV accepts are accepted", func(t *testing.T) {
		longest := key(strings.Repeat("k", kv.MaxKeyBytes-len(key(""))))
		meta := []byte(`"` + strings.Repeat("m", kv.MaxMetadataBytes-2) + `"`)
		if err := s.Put(ctx, longest, kv.Entry{Value: "v", Metadata: meta}, kv.PutOptions{TTL: kv.MinTTL}); err != nil {
			t.Fatalf("Put(%d-byte key, %d-byte metadata, TTL %v): %v", len(longest), len(meta), kv.MinTTL, err)
		}
		if got, err := s.Get(ctx, longest); err != nil || got.Value != "v" {
			t.Fatalf("Get(%d-byte key) = %q, %v; want \"v\", nil", len(longest), got.Value, err)
		}
	})

	t.Run("limits KV refuses are ErrInvalid", func(t *testing.T) {
		tooLong := key(strings.Repeat("k", kv.MaxKeyBytes+1-len(key(""))))
		cases := []struct {
			name string
			key  string
			e    kv.Entry
			opts kv.PutOptions
		}{
			{"key over 512 bytes", tooLong, kv.Entry{Value: "v"}, kv.PutOptions{}},
			{"empty key", "", kv.Entry{Value: "v"}, kv.PutOptions{}},
			{"dot key", ".", kv.Entry{Value: "v"}, kv.PutOptions{}},
			{"TTL under a minute", key("ttl"), kv.Entry{Value: "v"}, kv.PutOptions{TTL: 30 * time.Second}},
			{"metadata over 1024 bytes", key("meta"), kv.Entry{Value: "v", Metadata: []byte(`"` + strings.Repeat("m", kv.MaxMetadataBytes) + `"`)}, kv.PutOptions{}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if err := s.Put(ctx, c.key, c.e, c.opts); !errors.Is(err, kv.ErrInvalid) {
					t.Fatalf("Put error = %v, want ErrInvalid", err)
				}
			})
		}
		if _, err := s.Get(ctx, tooLong); !errors.Is(err, kv.ErrInvalid) {
			t.Fatalf("Get(%d-byte key) error = %v, want ErrInvalid", len(tooLong), err)
		}
		if _, err := s.Get(ctx, key("ttl")); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("Get after refused Put error = %v, want ErrNotFound", err)
		}
	})
}

// RunLister checks s's List against what Store's walks, the admin
// listing and the dead letters rely on from Workers KV's list: only the
// names under the prefix, in byte order (':' '/' '%' and the dead
// letters' separator 0x7f included), each with its metadata, every name
// once across pages whatever the limit, "" as the last page's cursor, and
// a limit from 1 to kv.MaxListKeys. Keys it writes start with prefix.
func RunLister(t *testing.T, s interface {
	kv.Namespace
	kv.Lister
}, prefix string) {
	ctx := context.Background()
	p := prefix + "list:"
	names := []string{p + "a", p + "a/b", p + "a:b", p + "a%3A", p + "a\x7f1", p + "b", p + "1", p + "10000", p + "1\x7fz"}
	for i, n := range names {
		meta := []byte(`{"i":` + string(rune('0'+i)) + `}`)
		if err := s.Put(ctx, n, kv.Entry{Value: "1", Metadata: meta}, kv.PutOptions{TTL: time.Hour}); err != nil {
			t.Fatalf("Put(%q): %v", n, err)
		}
	}
	if err := s.Put(ctx, prefix+"lisu", kv.Entry{Value: "1"}, kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	want := append([]string(nil), names...)
	slices.Sort(want) // byte order, as KV lists
	for _, limit := range []int{1, 2, 3, kv.MaxListKeys} {
		t.Run("every name once, in order, at limit "+strconv.Itoa(limit), func(t *testing.T) {
			var got []string
			cursor := ""
			for calls := 0; ; calls++ {
				if calls > 2*len(names)+2 {
					t.Fatalf("no last page after %d calls: %q", calls, got)
				}
				page, next, err := s.List(ctx, p, cursor, limit)
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				if len(page) > limit {
					t.Fatalf("List(limit %d) = %d names", limit, len(page))
				}
				for _, l := range page {
					got = append(got, l.Name)
					i := slices.Index(names, l.Name)
					if i < 0 || string(l.Metadata) != `{"i":`+string(rune('0'+i))+`}` {
						t.Errorf("List gave %q with metadata %s", l.Name, l.Metadata)
					}
				}
				if next == "" {
					break
				}
				cursor = next
			}
			if !slices.Equal(got, want) {
				t.Errorf("listed %q, want %q", got, want)
			}
		})
	}
	t.Run("the prefix ends at the separator", func(t *testing.T) {
		page, next, err := s.List(ctx, p+"1\x7f", "", kv.MaxListKeys)
		if err != nil || next != "" || len(page) != 1 || page[0].Name != p+"1\x7fz" {
			t.Errorf("List(%q) = %v, %q, %v; want only %q", p+"1\x7f", page, next, err, p+"1\x7fz")
		}
	})
	t.Run("a limit outside 1 to MaxListKeys is ErrInvalid", func(t *testing.T) {
		for _, limit := range []int{0, -1, kv.MaxListKeys + 1, 5000} {
			if _, _, err := s.List(ctx, p, "", limit); !errors.Is(err, kv.ErrInvalid) {
				t.Errorf("List(limit %d) error = %v, want ErrInvalid", limit, err)
			}
		}
	})
}
