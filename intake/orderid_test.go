package intake_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// TestARetryKeepsItsOrderIDWhateverTheStoreForgot: a retry whose read of
// KV misses the key's open claim (KV promises no read-after-write, within
// a location or across them) sends the order id the first call sent, from
// another instance with no memory of the key, and from the same instance
// after more keys were left open than it remembers.
func TestARetryKeepsItsOrderIDWhateverTheStoreForgot(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// others is how many other keys the first instance leaves open
		// after k; retryOnFirst sends the retry to it.
		others       int
		retryOnFirst bool
	}{
		{"on another instance", 0, false},
		{"on the same instance, after 1,100 other keys were left open", 1100, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemoryNamespace()
			// stale hides every claim from reads, as a stale read of KV
			// may: the key looks free.
			stale := false
			ns := &kvtest.Hooked{Namespace: mem, After: func(op kvtest.Op, k string, err error) error {
				if stale && op == kvtest.OpGet && strings.HasPrefix(k, "pending:") {
					return kv.ErrNotFound
				}
				return err
			}}
			g := &idRecorder{answer: func(n int, _ intake.Placement) error { return errLost }}
			opts := intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g}
			first := intake.New(kv.NewStore(ns, nil), opts)
			if _, err := first.Submit(ctx, key("k"), []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
				t.Fatalf("first Submit = %v, want an unknown outcome", err)
			}
			for i := range tc.others {
				first.Submit(ctx, key("other-"+strconv.Itoa(i)), []byte(validBody), "")
			}
			retry := intake.New(kv.NewStore(ns, nil), opts)
			if tc.retryOnFirst {
				retry = first
			}
			stale = true
			retry.Submit(ctx, key("k"), []byte(validBody), "")
			ids := g.orderIDs()
			if got, want := ids[len(ids)-1], ids[0]; got != want {
				t.Fatalf("the retry sent order id %s, want %s, the key's first", got, want)
			}
		})
	}
}

// TestOrderIDForIsOnePerKeyAndOrder: the order id names the key and the
// order, and nothing else, in the form of a version 4 UUID.
func TestOrderIDForIsOnePerKeyAndOrder(t *testing.T) {
	a := intake.OrderIDFor(intake.Key{Client: "desk-a", ID: "k"}, "fp1")
	for _, tc := range []struct {
		name string
		key  intake.Key
		fp   string
		same bool
	}{
		{"the same key and order", intake.Key{Client: "desk-a", ID: "k"}, "fp1", true},
		{"another order", intake.Key{Client: "desk-a", ID: "k"}, "fp2", false},
		{"another key", intake.Key{Client: "desk-a", ID: "k2"}, "fp1", false},
		{"another client", intake.Key{Client: "desk-b", ID: "k"}, "fp1", false},
		{"the open Worker's key that reads the same", intake.Key{ID: "desk-a:k"}, "fp1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := intake.OrderIDFor(tc.key, tc.fp); (got == a) != tc.same {
				t.Errorf("OrderIDFor = %s beside %s, want same %v", got, a, tc.same)
			}
		})
	}
	const v4 = `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`
	if !regexp.MustCompile(v4).MatchString(a) {
		t.Errorf("OrderIDFor = %s, want the form %s", a, v4)
	}
}
