package intake_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
	"github.com/edge-orders/edge-orders/ledger"
	"github.com/edge-orders/edge-orders/order"
)

// gatewayDouble is an intake.Gateway that records every placement and
// answers each call with the next of its answers (then nil: accepted).
type gatewayDouble struct {
	mu      sync.Mutex
	calls   []intake.Placement
	answers []error
}

func (g *gatewayDouble) Place(_ context.Context, p intake.Placement) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, p)
	if len(g.answers) == 0 {
		return nil
	}
	err := g.answers[0]
	g.answers = g.answers[1:]
	return err
}

func (g *gatewayDouble) placements() []intake.Placement {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]intake.Placement(nil), g.calls...)
}

// errLost is a gateway call whose answer was lost.
var errLost = errors.New("oms: no answer: the connection was reset")

// gatewayStores are the two stores a gateway test runs against.
func gatewayStores(t *testing.T) map[string]func(opts intake.Options) *intake.Service {
	return map[string]func(opts intake.Options) *intake.Service{
		"kv": func(opts intake.Options) *intake.Service {
			return newHarness(t, opts, intake.Lifecycle{ReleaseAfterCommit: true}).svc
		},
		"ledger": func(opts intake.Options) *intake.Service {
			if opts.ResultTTL == 0 {
				opts.ResultTTL, opts.PendingTTL = config.DefaultResultTTL, config.DefaultPendingTTL
			}
			return intake.New(ledger.NewMemoryStore(), opts)
		},
	}
}

// TestGatewayOutcomes drives each answer of the gateway through the
// Service over both stores: what the client gets, what a retry gets, and
// which order ids the gateway saw.
func TestGatewayOutcomes(t *testing.T) {
	ctx := context.Background()
	for mode, newService := range gatewayStores(t) {
		t.Run(mode, func(t *testing.T) {
			t.Run("accepted: one call, and the receipt names its order id", func(t *testing.T) {
				g := &gatewayDouble{}
				svc := newService(intake.Options{Gateway: g})
				out, err := svc.Submit(ctx, key("a"), []byte(validBody), "")
				if err != nil {
					t.Fatalf("Submit: %v", err)
				}
				calls := g.placements()
				if len(calls) != 1 || calls[0].OrderID != out.OrderID || calls[0].Order.Symbol != "AAPL" {
					t.Fatalf("gateway calls %+v, want one for order %s", calls, out.OrderID)
				}
				id, status, _ := order.ReceiptFields(out.Receipt)
				if id != calls[0].OrderID || status != order.StatusAccepted {
					t.Fatalf("receipt %s, want it to name the gateway's order %s", out.Receipt, calls[0].OrderID)
				}
				if again, err := svc.Submit(ctx, key("a"), []byte(validBody), ""); err != nil || !again.Replayed || len(g.placements()) != 1 {
					t.Fatalf("replay: %v %v, %d gateway calls; want a replay and no second call", again.Replayed, err, len(g.placements()))
				}
			})

			t.Run("rejected: stored, replayed, and the gateway is not called again", func(t *testing.T) {
				g := &gatewayDouble{answers: []error{&intake.Rejection{Reason: "halted"}}}
				svc := newService(intake.Options{Gateway: g})
				_, err := svc.Submit(ctx, key("r"), []byte(validBody), "")
				var first *intake.Rejection
				if !errors.As(err, &first) || !errors.Is(err, intake.ErrRejected) || first.Reason != "halted" || first.Replayed {
					t.Fatalf("Submit = %v, want a new Rejection for halted", err)
				}
				if first.OrderID != g.placements()[0].OrderID {
					t.Errorf("rejection names order %q, the gateway saw %q", first.OrderID, g.placements()[0].OrderID)
				}
				for name, retry := range map[string]func() error{
					"submit": func() error { _, err := svc.Submit(ctx, key("r"), []byte(validBody), ""); return err },
					"lookup": func() error { _, err := svc.Lookup(ctx, key("r")); return err },
				} {
					var again *intake.Rejection
					// The receipt keeps the time to the millisecond, as JavaScript's toISOString.
					accepted := g.placements()[0].AcceptedAt.Truncate(time.Millisecond)
					if err := retry(); !errors.As(err, &again) || again.Reason != "halted" || again.OrderID != first.OrderID || !again.Replayed || !again.AcceptedAt.Equal(accepted) {
						t.Errorf("%s after the rejection = %v (%+v), want its replay, accepted at %v", name, err, again, accepted)
					}
				}
				if n := len(g.placements()); n != 1 {
					t.Errorf("gateway calls = %d, want 1", n)
				}
			})

			t.Run("unknown: retriable at once with the same order id and time", func(t *testing.T) {
				g := &gatewayDouble{answers: []error{errLost, errLost}}
				svc := newService(intake.Options{Gateway: g})
				for range 2 {
					if _, err := svc.Submit(ctx, key("u"), []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
						t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
					}
					if _, err := svc.Lookup(ctx, key("u")); !errors.Is(err, intake.ErrOutcomeUnknown) {
						t.Fatalf("Lookup = %v, want ErrOutcomeUnknown", err)
					}
				}
				out, err := svc.Submit(ctx, key("u"), []byte(validBody), "")
				if err != nil {
					t.Fatalf("the third Submit: %v", err)
				}
				calls := g.placements()
				if len(calls) != 3 {
					t.Fatalf("gateway calls = %d, want 3", len(calls))
				}
				for _, c := range calls {
					if c.OrderID != calls[0].OrderID || c.Order != calls[0].Order || !c.AcceptedAt.Equal(calls[0].AcceptedAt) {
						t.Fatalf("gateway calls %+v, want the same placement every time", calls)
					}
				}
				if out.OrderID != calls[0].OrderID {
					t.Fatalf("receipt order %s, want the gateway's %s", out.OrderID, calls[0].OrderID)
				}
			})

			t.Run("unknown: another order under the key is refused without a call", func(t *testing.T) {
				g := &gatewayDouble{answers: []error{errLost}}
				svc := newService(intake.Options{Gateway: g})
				if _, err := svc.Submit(ctx, key("o"), []byte(validBody), ""); !errors.Is(err, intake.ErrOutcomeUnknown) {
					t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
				}
				if _, err := svc.Submit(ctx, key("o"), []byte(`{"symbol":"AAPL","side":"sell","quantity":10}`), ""); !errors.Is(err, intake.ErrKeyReused) {
					t.Fatalf("another order = %v, want ErrKeyReused", err)
				}
				if n := len(g.placements()); n != 1 {
					t.Fatalf("gateway calls = %d, want 1", n)
				}
				if _, err := svc.Submit(ctx, key("o"), []byte(validBody), ""); err != nil {
					t.Fatalf("the same order after the refusal: %v", err)
				}
			})
		})
	}
}

// TestGatewayAcceptedButNotStored fails the receipt's write, after the
// response, once the gateway accepted: the client has its receipt, and a
// lookup says the outcome is unknown rather than tell a receipt that is
// not stored. Then a retry in the instance (rather than replay from memory
// what is stored nowhere) or the settler calls the gateway again with the
// same order id and stores the same bytes, which a retry elsewhere
// replays.
func TestGatewayAcceptedButNotStored(t *testing.T) {
	for _, by := range []string{"a retry in the instance", "the settler"} {
		t.Run(by, func(t *testing.T) {
			ctx := context.Background()
			g := &gatewayDouble{}
			h := newHarness(t, intake.Options{Gateway: g}, intake.Lifecycle{ReleaseAfterCommit: true})
			h.faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "result:", Nth: 1})
			first, err := h.submit("k", validBody)
			h.faulty.Set()
			if err != nil {
				t.Fatalf("Submit = %v, want the receipt: the commit follows the response", err)
			}
			if _, ok := h.stored(t, "result:k"); ok {
				t.Fatalf("result:k stored, want its write failed")
			}
			if _, err := h.svc.Lookup(ctx, key("k")); !errors.Is(err, intake.ErrOutcomeUnknown) {
				t.Errorf("Lookup = %v, want ErrOutcomeUnknown: the receipt is not stored", err)
			}
			if by == "the settler" {
				h.now = acceptedAt.Add(intake.FirstSettleDelay) // the key is due
				if st, err := h.svc.Settle(ctx, key("k")); err != nil || st.Result != intake.SettleAccepted {
					t.Fatalf("Settle = %+v, %v; want the receipt stored", st, err)
				}
			} else if again, err := h.submit("k", validBody); err != nil || !bytes.Equal(again.Receipt, first.Receipt) {
				t.Fatalf("retry in the instance = %s, %v; want the first receipt", again.Receipt, err)
			}
			calls := g.placements()
			if len(calls) != 2 || calls[1].OrderID != calls[0].OrderID || first.OrderID != calls[0].OrderID {
				t.Fatalf("gateway calls %+v and receipt %s: want one order id throughout", calls, first.OrderID)
			}
			h.wantReceiptStored(t, "k", first.Receipt)
			elsewhere := intake.New(h.store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL,
				Gateway: g, Now: func() time.Time { return acceptedAt }})
			if out, err := elsewhere.Submit(ctx, key("k"), []byte(validBody), ""); err != nil || !out.Replayed || !bytes.Equal(out.Receipt, first.Receipt) {
				t.Errorf("retry elsewhere = %s replayed %v, %v; want the first receipt replayed", out.Receipt, out.Replayed, err)
			}
		})
	}
}

// TestGatewayKVClaimKeepsTheOrderID checks the KV layout once orders reach
// a gateway: the claim's value stays the reference's "1", its metadata
// holds the order id, and it lives as long as the settler may try and a
// receipt's TTL after that, so a dead request's order id survives its
// lease.
func TestGatewayKVClaimKeepsTheOrderID(t *testing.T) {
	g := &gatewayDouble{answers: []error{errLost}}
	h := newHarness(t, intake.Options{Gateway: g})
	if _, err := h.submit("k", validBody); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
	}
	claims := h.rec.Filter(kvtest.OpPut, "pending:k")
	if len(claims) != 2 {
		t.Fatalf("claim writes %v, want the claim and its release as open", claims)
	}
	for _, c := range claims {
		if c.Entry.Value != "1" || c.Options.TTL < intake.DefaultSettleMaxAge+config.DefaultResultTTL {
			t.Errorf("claim write %+v, want the value 1 kept past the settler's last attempt and a receipt's TTL", c)
		}
	}
	id := g.placements()[0].OrderID
	if got := string(claims[1].Entry.Metadata); !strings.Contains(got, `"orderId":"`+id+`"`) || !strings.Contains(got, `"state":"open"`) {
		t.Errorf("released claim's metadata %s, want the order id %s, open", got, id)
	}
	// Past the lease, and with the instance's memory gone, the key keeps
	// its order id.
	h.now = h.now.Add(kv.MinTTL + time.Second)
	fresh := intake.New(h.store, intake.Options{ResultTTL: config.DefaultResultTTL, PendingTTL: config.DefaultPendingTTL, Gateway: g,
		Now: func() time.Time { return acceptedAt }})
	out, err := fresh.Submit(context.Background(), key("k"), []byte(validBody), "")
	if err != nil || out.OrderID != id {
		t.Fatalf("a later retry = %s, %v; want the receipt of order %s", out.OrderID, err, id)
	}
}

// TestStaleInFlightEntryDoesNotHideAReceipt holds a key in this instance
// with a request that never finishes, as one the runtime abandoned, while
// the receipt is stored elsewhere: a duplicate whose wait runs out must be
// answered with the receipt, not a 409.
func TestStaleInFlightEntryDoesNotHideAReceipt(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	arrived := make(chan struct{})
	g := gatewayFunc(func(ctx context.Context, p intake.Placement) error {
		close(arrived)
		<-stuck
		return nil
	})
	h := newHarness(t, intake.Options{Gateway: g, Wait: 50 * time.Millisecond})
	go h.submit("k", validBody) // never returns while stuck is open
	<-arrived
	const stored = `{"orderId":"elsewhere","status":"accepted","symbol":"AAPL","side":"buy","quantity":10,"acceptedAt":"2026-03-14T15:09:26.535Z"}`
	h.put(t, "result:k", kv.Entry{Value: stored, Metadata: []byte(`{"fingerprint":"` + fingerprint(t, validBody) + `"}`)}, time.Hour)
	out, err := h.submit("k", validBody)
	if err != nil || !out.Replayed || string(out.Receipt) != stored {
		t.Fatalf("duplicate = %s replayed %v, %v; want the stored receipt", out.Receipt, out.Replayed, err)
	}
}

// gatewayFunc is a Gateway from a function.
type gatewayFunc func(ctx context.Context, p intake.Placement) error

func (f gatewayFunc) Place(ctx context.Context, p intake.Placement) error { return f(ctx, p) }

// TestKVTakeoverThatFailsReopensTheKey: retrying after an unknown outcome,
// the takeover's claim write fails after landing; the key must be open
// again at once, not held for the lease, and keep its order id.
func TestKVTakeoverThatFailsReopensTheKey(t *testing.T) {
	g := &gatewayDouble{answers: []error{errLost}}
	h := newHarness(t, intake.Options{Gateway: g})
	if _, err := h.submit("k", validBody); !errors.Is(err, intake.ErrOutcomeUnknown) {
		t.Fatalf("Submit = %v, want ErrOutcomeUnknown", err)
	}
	// The claim, its release as open, then the takeover: the third put.
	h.faulty.Set(kvtest.Fault{Op: kvtest.OpPut, Prefix: "pending:", Nth: 1, Applied: true})
	if _, err := h.submit("k", validBody); !errors.Is(err, intake.ErrStorageUnavailable) {
		t.Fatalf("retry with the takeover failing = %v, want ErrUnavailable", err)
	}
	h.faulty.Set()
	out, err := h.submit("k", validBody)
	if err != nil {
		t.Fatalf("the next retry = %v, want the key open at once", err)
	}
	if id := g.placements()[0].OrderID; out.OrderID != id {
		t.Fatalf("receipt order %s, want the kept %s", out.OrderID, id)
	}
}
