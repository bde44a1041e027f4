//go:build !js

package e2e

import (
	"strconv"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/oms"
)

// TestAnswersThatSayNothingAreUnknown has the fake OMS answer the first
// call in ways no gateway should: a redirect to an origin that would
// accept the order, an answer past the cap (plainly or once decoded), and
// an echo of the request. Each must leave the outcome unknown: a 503
// outcome_unknown, logged with what was wrong, that the settler then
// settles with the same order id; no redirect is followed, and an
// oversized answer is not read to its end.
func TestAnswersThatSayNothingAreUnknown(t *testing.T) {
	shareWorkers(t)
	limit := strconv.Itoa(oms.MaxAnswerBytes)
	forEachGatewayMode(t, func(t *testing.T, g *gatewayWorkers, w *target) {
		for _, c := range []struct {
			name string
			step step
			// logged returns what the key's log line must hold.
			logged func(symbol string) string
		}{
			{"a 302 to an origin that would accept is not followed", redirectFound,
				func(symbol string) string { return "302 to " + g.oms.elsewhereURL + symbol }},
			{"a 307 to an origin that would accept is not followed", redirectTemporary,
				func(symbol string) string { return "307 to " + g.oms.elsewhereURL + symbol }},
			{"an answer past the cap is cut short", oversized,
				func(string) string { return "over " + limit + " bytes" }},
			{"a gzip answer that decodes past the cap is cut short", gzipped,
				func(string) string { return "over " + limit + " bytes" }},
			{"a 200 echo of the request is not an acceptance", echo200,
				func(string) string { return "HTTP 200 without" }},
			{"a 400 echo of the request is not a rejection", echo400,
				func(string) string { return "HTTP 400 without" }},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				symbol, key := newSymbol(t), newKey(t)
				g.oms.script(symbol, c.step)
				wantUnknown(t, w.post(t, key, gatewayOrder(symbol)))
				// wrangler relays the Worker's log lines beside the answer,
				// not before it: the line may come a moment after.
				waitLogged(t, w, 10*time.Second, key, c.logged(symbol))
				stored := waitSettled(t, w, key, settleWithin)
				if stored.status != 200 {
					t.Fatalf("settled lookup = %d %s, want the 200 receipt", stored.status, stored.body)
				}
				r := decodeReceipt(t, stored.body)
				wantOneOrderID(t, g.oms, symbol, r)
				if !g.oms.accepted(r.OrderID) {
					t.Errorf("the receipt names %s, which the OMS never accepted", r.OrderID)
				}
				if got := len(g.oms.orderIDs(symbol)); got != 2 {
					t.Errorf("gateway calls = %d, want 2: the client's and the settler's", got)
				}
				if got := g.oms.redirectedCalls(symbol); got != 0 {
					t.Errorf("calls at the redirect's target = %d, want 0", got)
				}
				if c.step == oversized {
					if got, want := g.oms.cutShort(symbol), 1; got != want {
						t.Errorf("oversized answers cut short = %d, want %d: the Worker read one to its end", got, want)
					}
				}
			})
		}
	})
}
