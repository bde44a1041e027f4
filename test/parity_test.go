//go:build !js

package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// TestParityWithJavaScriptInWorkerd sends the same tricky bodies to the Go
// Worker and to test/reference/port, a JavaScript Worker with the reference's
// validation, both in workerd, and checks they accept the same bodies and
// write the same receipts (apart from orderId and acceptedAt).
func TestParityWithJavaScriptInWorkerd(t *testing.T) {
	requireWorker(t)
	t.Parallel() // its own Workers: waits beside the others (go test -parallel, make test)
	js := startWorker(t, "reference", wranglerdev.Options{Config: "test/reference/port/wrangler.toml"})
	holdSharedWorkers(t)
	w := kvWorker
	bodies := []string{
		validOrder,
		"\xef\xbb\xbf" + validOrder, // a BOM: kept by workerd at the compatibility date, so JSON.parse fails
		`{"symbol":"MSFT","side":"buy","quantity":1.0}`,
		`{"symbol":"MSFT","side":"buy","quantity":1e21}`,
		`{"symbol":"MSFT","side":"buy","quantity":9007199254740993}`,
		`{"symbol":"MSFT","side":"buy","quantity":1e400}`,
		`{"symbol":"MSFT","side":"buy","quantity":1.5}`,
		`{"symbol":"MSFT","side":"buy","quantity":-0}`,
		`{"symbol":"MSFT","side":"buy","quantity":"100"}`,
		`{"SYMBOL":"MSFT","side":"buy","quantity":1}`,
		`{"symbol":"A","symbol":"B","side":"buy","quantity":1}`,
		`{"symbol":"MSFT","side":"buy","quantity":1,"side":"hold"}`,
		`{"symbol":"\ud800x<&>\u2028","side":"b\u0075y","quantity":2}`,
		`{"symbol":"\ud83d\ude00 \u0000\u001f\"\\","side":"sell","quantity":3}`,
		"{\"symbol\":\"bad \xe2\x82 utf8 \xff\",\"side\":\"buy\",\"quantity\":4}",
		`{"symbol":" ","side":"buy","quantity":5}`,
		`{"symbol":"","side":"buy","quantity":5}`,
		`{"symbol":"MSFT","side":"buy","quantity":6,"extra":1e400,"nested":[{"a":[1,2,{"b":null}]}]}`,
		`[{"symbol":"MSFT","side":"buy","quantity":1}]`,
		`{"symbol":"MSFT","side":"buy","quantity":1,}`,
		`{"symbol":"MSFT","side":"buy","quantity":01}`,
		"  \r\n\t" + validOrder + " \n",
		validOrder + "x",
		`null`,
		``,
	}
	// The one deliberate difference: JavaScript rounds a quantity beyond
	// 2^53 - 1, which the Go Worker refuses instead.
	beyondSafe := map[string]bool{
		`{"symbol":"MSFT","side":"buy","quantity":1e21}`:             true,
		`{"symbol":"MSFT","side":"buy","quantity":9007199254740993}`: true,
	}
	receiptMiddle := regexp.MustCompile(`^\{"orderId":"[^"]+","status":"accepted",(.*),"acceptedAt":"[^"]+"\}$`)
	for i, body := range bodies {
		key := newKey(t) + "-" + strings.Repeat("p", i)
		goResp := w.post(t, key, body)
		jsResp := js.send(t, "POST", body, "Idempotency-Key", key)
		if beyondSafe[body] {
			if goResp.status != 422 || jsResp.status != 201 {
				t.Errorf("body %q: Go %d, JavaScript %d; want Go to refuse (422) the quantity JavaScript rounds (201)", body, goResp.status, jsResp.status)
			}
			continue
		}
		if goResp.status != jsResp.status {
			t.Errorf("body %q: Go %d %s, JavaScript %d %s", body, goResp.status, goResp.body, jsResp.status, jsResp.body)
			continue
		}
		if goResp.status != 201 {
			continue
		}
		g, j := receiptMiddle.FindStringSubmatch(goResp.body), receiptMiddle.FindStringSubmatch(jsResp.body)
		if g == nil || j == nil || g[1] != j[1] {
			t.Errorf("body %q: receipts differ:\nGo         %s\nJavaScript %s", body, goResp.body, jsResp.body)
		}
	}
}
