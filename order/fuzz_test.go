package order_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/order"
)

func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.body))
	}
	now := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := order.Parse(body)
		if err != nil {
			return
		}
		if o.Symbol == "" {
			t.Errorf("Parse(%q) accepted an empty symbol", body)
		}
		if o.Side != order.Buy && o.Side != order.Sell {
			t.Errorf("Parse(%q) accepted side %q", body, o.Side)
		}
		if q := o.Quantity; !(q > 0) || math.IsInf(q, 0) || q != math.Trunc(q) {
			t.Errorf("Parse(%q) accepted quantity %v", body, q)
		}
		receipt := order.Receipt{OrderID: "id", Status: order.StatusAccepted, Order: o, AcceptedAt: now}.JSON()
		if !json.Valid(receipt) {
			t.Fatalf("receipt for %q is not valid JSON: %q", body, receipt)
		}
		again, err := order.Parse(receipt)
		if err != nil {
			t.Fatalf("Parse(receipt %q) = %v; want the order back", receipt, err)
		}
		if got, want := again.Fingerprint(), o.Fingerprint(); got != want {
			t.Errorf("re-parsed receipt %q: Fingerprint = %s, want %s (order %s, then %s)", receipt, got, want, show(o), show(again))
		}
	})
}
