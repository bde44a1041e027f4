package ledger

import (
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
)

// TestTheMemoryTableKeepsWhatSQLKeeps: the memory table reads a row back
// as the Durable Object's SQL table would (rowAt): a give-up awaiting its
// check with no due time as given up, since a give-up is stored as a flag
// and the due time; and an order that does not parse as none, since the
// table keeps the order as JSON and parses it back. It kept both as
// written, kinder than the object.
func TestTheMemoryTableKeepsWhatSQLKeeps(t *testing.T) {
	table := &memTable{rows: map[string]row{}}
	due := time.UnixMilli(1_800_000_000_000)
	for _, c := range []struct {
		name      string
		r         row
		giveUp    intake.GiveUp
		keepOrder bool
	}{
		{"awaiting its check, due", row{key: "a", giveUp: intake.AwaitingCheck, due: due}, intake.AwaitingCheck, false},
		{"awaiting its check, never due", row{key: "b", giveUp: intake.AwaitingCheck}, intake.GivenUp, false},
		{"an order that parses", row{key: "c", order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 1}, hasOrder: true}, intake.NotGivenUp, true},
		{"an order that does not", row{key: "d", order: order.Order{Symbol: "AAPL", Side: order.Buy, Quantity: 0}, hasOrder: true}, intake.NotGivenUp, false},
	} {
		table.put(c.r)
		got, ok := table.get(c.r.key)
		if !ok || got.giveUp != c.giveUp || got.hasOrder != c.keepOrder {
			t.Errorf("%s: read back give-up %v, order %v (%v); want %v, %v", c.name, got.giveUp, got.hasOrder, ok, c.giveUp, c.keepOrder)
		}
	}
}
