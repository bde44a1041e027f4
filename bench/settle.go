//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/intake"
)

// settle is one key of the settling check.
type settle struct {
	// took is from the Worker's 503 outcome_unknown answer until a lookup
	// of the key first answered 200.
	took time.Duration
	// gatewayCalls is how many calls the key's order made to the gateway.
	gatewayCalls int
}

// A settling key's lookup is polled every settlePoll, for at most
// settleWithin: the bench's gateway accepts the settler's first call, due
// a second after the unknown outcome, so anything near 30 s is a settler
// that is stuck, not slow.
const (
	settlePoll   = 50 * time.Millisecond
	settleWithin = 30 * time.Second
)

// settling sends keys orders to the Worker at url, one after another, each
// with a symbol of its own that the gateway refuses on its first call, and
// times how long the Worker's settler, with no client involved, takes to
// store the final outcome. Each order must reach the gateway exactly twice,
// the Worker's call and the settler's, under the order id the 503 and the
// receipt name. Otherwise, and when a key does not settle within
// settleWithin, it returns an error that quotes the lines of logs (the
// Worker's log) that name the key or its order id.
func settling(ctx context.Context, url string, logs func() string, gw *gateway, keys int) ([]settle, error) {
	var out []settle
	var symbols []string
	for k := range keys {
		// The symbol, unique to the order, is its Idempotency-Key too.
		symbol := fmt.Sprintf("%s-%d-%d", settleMarker, time.Now().UnixNano(), k)
		s, orderID, err := settleOne(ctx, url, gw, symbol)
		if err != nil {
			return out, fmt.Errorf("key %s: %w; the Worker's log for it:\n%s", symbol, err, linesNaming(logs(), symbol, orderID))
		}
		out, symbols = append(out, s), append(symbols, symbol)
	}
	// Once more at the end: a settler that calls again after it stored
	// the receipt shows only later.
	for _, symbol := range symbols {
		if calls := gw.calls(symbol); len(calls) != 2 {
			return out, fmt.Errorf("key %s: %d gateway calls by the end, want 2; the Worker's log for it:\n%s", symbol, len(calls), linesNaming(logs(), symbol, calls[0]))
		}
	}
	return out, nil
}

// settleOne places the order for symbol under the key symbol, which the
// gateway refuses first, and polls the key's lookup until it answers 200;
// it returns the order id the 503 named.
func settleOne(ctx context.Context, url string, gw *gateway, symbol string) (settle, string, error) {
	key := symbol
	var unknown, receipt struct {
		Error   string `json:"error"`
		OrderID string `json:"orderId"`
	}
	status, body, err := send(ctx, http.MethodPost, url, key, fmt.Sprintf(`{"symbol":%q,"side":"buy","quantity":100}`, symbol))
	unknownAt := time.Now()
	if err != nil {
		return settle{}, "", err
	}
	json.Unmarshal(body, &unknown) // checked by its members
	if status != http.StatusServiceUnavailable || unknown.Error != "outcome_unknown" {
		return settle{}, unknown.OrderID, fmt.Errorf("the order's answer = %d %s, want 503 outcome_unknown", status, body)
	}
	for status != http.StatusOK {
		if time.Since(unknownAt) > settleWithin {
			return settle{}, unknown.OrderID, fmt.Errorf("no receipt %v after the unknown outcome: lookup = %d %s; gateway calls %q", settleWithin, status, body, gw.calls(symbol))
		}
		select {
		case <-ctx.Done():
			return settle{}, unknown.OrderID, ctx.Err()
		case <-time.After(settlePoll):
		}
		if status, body, err = send(ctx, http.MethodGet, url, key, ""); err != nil {
			return settle{}, unknown.OrderID, err
		}
	}
	took := time.Since(unknownAt)
	json.Unmarshal(body, &receipt)
	calls := gw.calls(symbol)
	if len(calls) != 2 || calls[0] != unknown.OrderID || calls[1] != unknown.OrderID || receipt.OrderID != unknown.OrderID {
		return settle{}, unknown.OrderID, fmt.Errorf("gateway calls with order ids %q, receipt %s, want two calls, both with the order id of the 503, %s", calls, body, unknown.OrderID)
	}
	return settle{took: took, gatewayCalls: len(calls)}, unknown.OrderID, nil
}

// linesNaming returns the lines of logs that contain any of names.
func linesNaming(logs string, names ...string) string {
	var b strings.Builder
	for _, line := range strings.Split(logs, "\n") {
		if slices.ContainsFunc(names, func(n string) bool { return n != "" && strings.Contains(line, n) }) {
			b.WriteString(line + "\n")
		}
	}
	if b.Len() == 0 {
		return "(no line names it)\n"
	}
	return b.String()
}

// settlingTable gives, per Worker with the gateway, how long the settler
// took from an unknown outcome to a stored receipt, beside the wait its
// backoff starts with: the rest is the settle path (a queue's batch wait in
// KV mode, the Durable Object's alarm in ledger mode), the gateway's call
// and the lookups' polling.
func (r *report) settlingTable(b *strings.Builder, p *phase) {
	b.WriteString("### Settling: from an unknown outcome to a stored receipt\n\n")
	fmt.Fprintf(b, "One key at a time; the gateway answers 503 to each order's first call, the Worker answers the client 503 outcome_unknown, "+
		"and its settler calls the gateway again with no client involved; the lookup is polled every %v.\n\n", settlePoll)
	b.WriteString("| Worker | keys | p50 ms | max ms | the settler's first backoff ms | gateway calls per key |\n|---|---|---|---|---|---|\n")
	for _, s := range p.subjects {
		if len(s.settles) == 0 {
			continue
		}
		var ms []float64
		calls := 0
		for _, st := range s.settles {
			ms, calls = append(ms, float64(st.took.Microseconds())/1000), max(calls, st.gatewayCalls)
		}
		fmt.Fprintf(b, "| %s | %d | %.0f | %.0f | %d | %d |\n", s.name, len(s.settles), median(ms), slices.Max(ms), intake.FirstSettleDelay.Milliseconds(), calls)
	}
	b.WriteString("\nEvery key settled with the order id of its 503, in two gateway calls (the bench fails otherwise).\n\n")
}
