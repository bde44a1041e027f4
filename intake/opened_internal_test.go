package intake

import (
	"testing"
	"time"
)

// TestOpenedOrdersOutlastKVsStaleWindow: an order id left open is
// remembered at least openedTTL after it was put, to the second after,
// so that no read within KV's stale window of the write it stands for
// finds the instance without it.
func TestOpenedOrdersOutlastKVsStaleWindow(t *testing.T) {
	put := time.Date(2026, 11, 24, 9, 30, 0, 40_000_000, time.UTC) // .040 s into a second
	o := newOpenedOrders()
	o.put("k", Claim{OrderID: "order-1"}, put)
	for _, tc := range []struct {
		after time.Duration
		want  bool
	}{
		{openedTTL - time.Millisecond, true},
		{openedTTL, true},
		{openedTTL + 900*time.Millisecond, true},
		{openedTTL + time.Second, false},
	} {
		if _, got := o.get("k", put.Add(tc.after)); got != tc.want {
			t.Errorf("remembered %v after the put = %v, want %v", tc.after, got, tc.want)
		}
	}
}
