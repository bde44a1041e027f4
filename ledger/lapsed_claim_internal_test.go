package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
)

// TestALapsedClaimWithoutAnOrderIDFreesItsKey: a claim whose lease ended
// with its holder gone and whose order never reached the gateway under an
// order id of the key's reads as absent, whatever the row's expiry: an
// older version's claim without an order id, kept past its lease (its
// rows were kept for max(Lease, Keep)), and a tentative claim of a
// migration's. A new claim takes the key as a free one, under its own
// order id, nothing is due for the settler, and the lapsed claim's release
// (and a tentative one's commit) changes nothing.
func TestALapsedClaimWithoutAnOrderIDFreesItsKey(t *testing.T) {
	ctx := context.Background()
	o := order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 10}
	k := intake.Key{Client: "desk", ID: "lapsed"}
	for _, tc := range []struct {
		name string
		// lost says the lapsed claim's commit is refused: a tentative
		// claim's, whose lapse freed the key. An older version's claim
		// may still commit past its lease while no other took the key
		// (Object.Commit), which this test leaves alone.
		lost  bool
		lapse func(t *testing.T, m *MemoryStore, now *time.Time) intake.Claim
	}{
		{"an older version's claim without an order id", false, func(t *testing.T, m *MemoryStore, now *time.Time) intake.Claim {
			// Its lease ended a minute ago; the row is kept a day more.
			m.obj.rows.put(row{key: k.String(), client: k.Client, token: "old", fingerprint: o.Fingerprint(),
				leaseUntil: now.Add(-time.Minute), expires: now.Add(24 * time.Hour)})
			return intake.Claim{Token: "old", Fingerprint: o.Fingerprint()}
		}},
		{"a tentative claim", true, func(t *testing.T, m *MemoryStore, now *time.Time) intake.Claim {
			c := intake.Claim{Token: "tentative", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-t", AcceptedAt: *now,
				Lease: time.Minute, KeepUntil: now.Add(48 * time.Hour), Stage: intake.StageTentative}
			if rec, err := m.Begin(ctx, k, c); err != nil || rec.Took != intake.EventClaim {
				t.Fatalf("the tentative Begin = %+v, %v; want a claim", rec, err)
			}
			*now = now.Add(time.Minute + time.Second)
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
			m := NewMemoryStore()
			m.Now = func() time.Time { return now }
			lapsed := tc.lapse(t, m, &now)
			if rec, err := m.Lookup(ctx, k); err != nil || rec.State != intake.Absent {
				t.Fatalf("Lookup = %+v, %v; want the key absent", rec, err)
			}
			if keys := m.DueKeys(10); len(keys) != 0 {
				t.Errorf("keys due: %v, want none: nothing reached the gateway", keys)
			}
			m.AlarmDone(intake.FirstSettleDelay)
			if tc.lost {
				if err := m.Commit(ctx, k, lapsed, intake.Result{Body: []byte(`{}`), Fingerprint: o.Fingerprint(), TTL: time.Hour}); !errors.Is(err, intake.ErrLostClaim) {
					t.Errorf("the lapsed claim's Commit = %v, want ErrLostClaim", err)
				}
			}
			if err := m.Release(ctx, k, lapsed); err != nil {
				t.Errorf("the lapsed claim's Release = %v", err)
			}
			if rec, err := m.Lookup(ctx, k); err != nil || rec.State != intake.Absent {
				t.Fatalf("after the lapsed claim's commit and release the key is %+v, %v; want it absent", rec, err)
			}
			c := intake.Claim{Token: "new", Fingerprint: o.Fingerprint(), Order: o, OrderID: "order-new", AcceptedAt: now,
				Lease: time.Minute, KeepUntil: now.Add(48 * time.Hour)}
			rec, err := m.Begin(ctx, k, c)
			if err != nil || rec.Took != intake.EventClaim || rec.OrderID != "" {
				t.Fatalf("a new claim's Begin = %+v, %v; want the free key claimed under its own order id", rec, err)
			}
			if rec, err := m.Lookup(ctx, k); err != nil || rec.State != intake.Held || rec.OrderID != "order-new" {
				t.Errorf("Lookup = %+v, %v; want the new claim holding the key with order-new", rec, err)
			}
		})
	}
}
