//go:build !js

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/edge-orders/edge-orders/client"
	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
)

// requireBrowserVar, set to 1, turns a missing Chromium into a failure
// rather than a skip: CI sets it (.ci/run), so the browser tests can never
// be skipped there without anyone noticing.
const requireBrowserVar = "EDGE_ORDERS_REQUIRE_BROWSER"

// chromiumPath finds Debian's Chromium (or EDGE_ORDERS_CHROMIUM), and
// skips t without one, unless requireBrowserVar is set.
func chromiumPath(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("EDGE_ORDERS_CHROMIUM"), "chromium", "chromium-browser", "/usr/bin/chromium"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv(requireBrowserVar) == "1" {
		t.Fatalf("no Chromium found (apt-get install chromium), and %s=1 forbids skipping the browser tests", requireBrowserVar)
	}
	t.Skip("browser tests skipped: Chromium is not installed (apt-get install chromium)")
	return ""
}

// startChromium starts a headless Chromium with a fresh profile, with the
// flags that work in a container without a GPU or a sandbox and any extra
// ones, and returns a context for it; the browser ends with t.
func startChromium(t *testing.T, path string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	profile := t.TempDir()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(800, 900),
	}, extra...)...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting Chromium (%s): %v", path, err)
	}
	return browser
}

// servePages serves the order ticket and the JavaScript client it imports
// (examples/ticket, clients/js) on a loopback port of its own, and returns
// the origin, http://127.0.0.1:PORT.
func servePages(t *testing.T) string {
	t.Helper()
	files := http.FileServer(http.Dir(root))
	mux := http.NewServeMux()
	for _, dir := range []string{"/examples/ticket/", "/clients/js/"} {
		mux.Handle(dir, files)
	}
	return serveLoopback(t, mux)
}

// serveLoopback serves h on a free loopback port until t ends, and
// returns its base URL.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// artifactsDir is where the screenshots go: EDGE_ORDERS_ARTIFACTS, or
// test/artifacts/browser (git-ignored).
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("EDGE_ORDERS_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(root, "test", "artifacts")
	}
	dir, _ = filepath.Abs(filepath.Join(dir, "browser"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tab is one browser tab on the order ticket.
type tab struct {
	t     *testing.T
	ctx   context.Context
	shot  string // the screenshots' folder
	label string // the case, for the screenshots' names
	// posts and gets count the POSTs and GETs the page sent to the Worker.
	posts, gets atomic.Int64
}

// openTicket opens the ticket at pageURL in a new tab (a fresh
// sessionStorage) and waits for it to mint its key.
func openTicket(t *testing.T, browser context.Context, pageURL, worker, shots string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx, shot: shots}
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			switch {
			case !strings.HasPrefix(ev.Request.URL, worker):
			case ev.Request.Method == http.MethodPost:
				tb.posts.Add(1)
			case ev.Request.Method == http.MethodGet:
				tb.gets.Add(1)
			}
		}
	}()
	tb.do(chromedp.Navigate(pageURL))
	tb.waitFor(`document.getElementById("key").textContent.length > 0`, 10*time.Second)
	return tb
}

// do runs actions in the tab, failing t on an error.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds, failing t after
// within.
func (tb *tab) waitFor(cond string, within time.Duration) {
	tb.t.Helper()
	deadline := time.Now().Add(within)
	for !eval[bool](tb, "!!("+cond+")") {
		if time.Now().After(deadline) {
			tb.screenshot("timeout")
			tb.t.Fatalf("%s did not hold within %v; the page says %s: %s", cond, within, tb.state(), tb.text("status"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// state is the ticket's state (#status's data-state).
func (tb *tab) state() string {
	tb.t.Helper()
	return eval[string](tb, `document.getElementById("status").dataset.state`)
}

// waitState waits until the ticket's state is one of want, and returns it.
func (tb *tab) waitState(within time.Duration, want ...string) string {
	tb.t.Helper()
	list := `["` + strings.Join(want, `","`) + `"]`
	tb.waitFor(list+`.includes(document.getElementById("status").dataset.state)`, within)
	return tb.state()
}

// text is an element's text.
func (tb *tab) text(id string) string {
	tb.t.Helper()
	return eval[string](tb, `document.getElementById("`+id+`").textContent`)
}

// storedKey is the key of the ticket kept in sessionStorage, or "".
func (tb *tab) storedKey() string {
	tb.t.Helper()
	return eval[string](tb, `JSON.parse(sessionStorage.getItem("edge-orders.ticket") ?? "{}").key ?? ""`)
}

// receipts are the order ids of the receipts the page shows.
func (tb *tab) receipts() []string {
	tb.t.Helper()
	return eval[[]string](tb, `[...document.querySelectorAll(".receipt")].map((r) => r.dataset.orderId)`)
}

// fill enters an order for symbol.
func (tb *tab) fill(symbol string) {
	tb.t.Helper()
	tb.do(chromedp.SetValue(chromedp.ID("symbol"), symbol), chromedp.SetValue(chromedp.ID("quantity"), "25"))
}

// submit clicks Submit.
func (tb *tab) submit() {
	tb.t.Helper()
	tb.do(chromedp.Click(chromedp.ID("submit")))
}

// doubleClick double-clicks Submit as a person does: press and release,
// then press and release again with a click count of 2, which makes two
// click events and a dblclick.
func (tb *tab) doubleClick() {
	tb.t.Helper()
	tb.do(chromedp.WaitVisible(chromedp.ID("submit")))
	box := eval[[]float64](tb, `(() => { const r = document.getElementById("submit").getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`)
	tb.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		for _, count := range []int64{1, 2} {
			for _, typ := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
				if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, input.DispatchMouseEventParams{
					Type: typ, X: box[0], Y: box[1], Button: input.MouseButtonLeft, Buttons: 1, ClickCount: count,
				}); err != nil {
					return err
				}
			}
		}
		return nil
	}))
}

// screenshot saves the page as <test>-<name>.png in the artifacts folder.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	file := filepath.Join(tb.shot, tb.label+"-"+name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		tb.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	tb.t.Logf("screenshot: %s", file)
}

// wantOneReceipt fails t unless the page shows one receipt, for the one
// order the OMS placed for symbol, whatever the number of calls.
func (tb *tab) wantOneReceipt(oms *fakeOMS, symbol string) string {
	tb.t.Helper()
	shown := tb.receipts()
	if len(shown) != 1 {
		tb.t.Fatalf("the page shows %d receipts %v, want 1", len(shown), shown)
	}
	ids := oms.orderIDs(symbol)
	if len(ids) == 0 {
		tb.t.Fatalf("the OMS saw no call for %s", symbol)
	}
	for _, id := range ids {
		if id != shown[0] {
			tb.t.Fatalf("the OMS saw order ids %v, want only the receipt's %s", ids, shown[0])
		}
	}
	if !oms.accepted(shown[0]) {
		tb.t.Fatalf("the receipt names %s, which the OMS never placed", shown[0])
	}
	return shown[0]
}

// TestBrowser proves the order ticket (examples/ticket) and the JavaScript
// client in Chromium, against the Worker under wrangler dev with a fake
// OMS of its own. The page is served from another origin than the Worker
// (127.0.0.1 and localhost, other ports), which ALLOWED_ORIGINS lists, so
// every call is a real CORS exchange, preflight included. Each case
// saves screenshots of the states it passes through (artifactsDir).
func TestBrowser(t *testing.T) {
	requireWorker(t)
	chromium := chromiumPath(t)
	t.Parallel() // its own Workers and fake OMS: waits beside the others
	oms, err := startFakeOMS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oms.stop)
	allowed, other := servePages(t), servePages(t)
	// A gateway call held by a test (gated) must outlast the reload case.
	w := startWorker(t, "kv", wranglerdev.Options{Vars: map[string]string{
		"OMS_URL": oms.URL, "OMS_TOKEN": omsToken, "OMS_TIMEOUT_MS": "10000", "ALLOWED_ORIGINS": allowed,
	}})
	worker := strings.Replace(w.URL(), "127.0.0.1", "localhost", 1)
	ticketAt := func(origin string) string {
		return origin + "/examples/ticket/?worker=" + url.QueryEscape(worker)
	}
	// desk is the other pages' server under a name that is not this
	// machine's, as a desk's deployed page would be; Chromium resolves it
	// to loopback, and treats it as secure as https would be.
	desk := strings.Replace(other, "127.0.0.1", "desk.example", 1)
	browser := startChromium(t, chromium,
		chromedp.Flag("host-resolver-rules", "MAP desk.example 127.0.0.1"),
		chromedp.Flag("unsafely-treat-insecure-origin-as-secure", desk))
	shots := artifactsDir(t)
	t.Logf("screenshots in %s", shots)
	// Each case names its tab: the screenshots' file names and its symbol,
	// short enough to read on them.
	open := func(t *testing.T, origin, label string) (*tab, string) {
		tb := openTicket(t, browser, ticketAt(origin), worker, shots)
		tb.label = label
		return tb, fmt.Sprintf("%s-%d", strings.ToUpper(label), time.Now().UnixNano()%1e6)
	}

	t.Run("a double-click places one order and shows one receipt", func(t *testing.T) {
		tb, symbol := open(t, allowed, "double-click")
		tb.fill(symbol)
		key := tb.text("key")
		tb.screenshot("1-new")
		tb.doubleClick()
		if got := tb.waitState(20*time.Second, "placed", "replayed", "rejected", "unknown", "unreadable", "error"); got != "placed" {
			t.Fatalf("state %s (%s), want placed", got, tb.text("status"))
		}
		tb.screenshot("2-placed")
		tb.wantOneReceipt(oms, symbol)
		if n := len(oms.orderIDs(symbol)); n != 1 {
			t.Fatalf("OMS calls = %d, want 1", n)
		}
		if n := tb.posts.Load(); n != 1 {
			t.Fatalf("the page sent %d POSTs for a double-click, want 1: Submit must be disabled in flight", n)
		}
		if tb.text("key") != key || tb.storedKey() != "" {
			t.Fatalf("key %q, stored %q; want the ticket's key %q shown and nothing stored after the final answer", tb.text("key"), tb.storedKey(), key)
		}
	})

	t.Run("a lost response is retried under the same key and shows the one order", func(t *testing.T) {
		tb, symbol := open(t, allowed, "lost-response")
		tb.fill(symbol)
		// Let the Worker answer the first POST, then fail its response
		// in the browser, as a network that drops mid-flight.
		if _, err := chromedp.Call(tb.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: worker + "*", RequestStage: fetch.RequestStageResponse},
		}}); err != nil {
			t.Fatal(err)
		}
		paused := chromedp.Events(tb.ctx, fetch.RequestPaused)
		var failed atomic.Int64
		go func() {
			for ev, err := range paused {
				if err != nil {
					return
				}
				if ev.Request.Method == http.MethodPost && failed.Add(1) == 1 {
					chromedp.Call(tb.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonConnectionReset})
					continue
				}
				chromedp.Call(tb.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			}
		}()
		tb.submit()
		got := tb.waitState(20*time.Second, "replayed", "placed", "rejected", "unknown", "unreadable", "error")
		tb.screenshot("replayed")
		if got != "replayed" {
			t.Fatalf("state %s (%s), want replayed: the first POST placed the order and its answer was lost", got, tb.text("status"))
		}
		if failed.Load() < 2 || tb.posts.Load() < 2 {
			t.Fatalf("%d POSTs paused, %d sent; want the failed one and its retry", failed.Load(), tb.posts.Load())
		}
		tb.wantOneReceipt(oms, symbol)
		if n := len(oms.orderIDs(symbol)); n != 1 {
			t.Fatalf("OMS calls = %d, want 1: the retry replays", n)
		}
	})

	t.Run("the OMS's answer lost: the page shows the outcome unknown, keeps the key, and ends with the one order", func(t *testing.T) {
		tb, symbol := open(t, allowed, "oms-answer-lost")
		// The first call is accepted and its answer dropped; the next
		// fails too; then the OMS answers (the page's retry or the settler).
		oms.script(symbol, drop, failBefore)
		tb.fill(symbol)
		key := tb.text("key")
		tb.submit()
		tb.waitState(20*time.Second, "unknown")
		tb.screenshot("1-unknown")
		if tb.storedKey() != key || !strings.Contains(tb.text("status"), oms.orderIDs(symbol)[0]) {
			t.Fatalf("while unknown: stored key %q (want %q), status %q (want the order id %s)", tb.storedKey(), key, tb.text("status"), oms.orderIDs(symbol)[0])
		}
		got := tb.waitState(30*time.Second, "placed", "replayed", "rejected", "unreadable", "error", "unresolved")
		tb.screenshot("2-settled")
		if got != "placed" && got != "replayed" {
			t.Fatalf("state %s (%s), want the order placed", got, tb.text("status"))
		}
		tb.wantOneReceipt(oms, symbol)
		if n := len(oms.orderIDs(symbol)); n < 3 {
			t.Fatalf("OMS calls = %d, want the dropped one, the failed one and the one that placed it", n)
		}
	})

	t.Run("a reload in flight re-sends the same intent: one order", func(t *testing.T) {
		tb, symbol := open(t, allowed, "reload")
		oms.script(symbol, gated)
		tb.fill(symbol)
		key := tb.text("key")
		tb.submit()
		oms.waitArrival(t, symbol) // the OMS holds the order
		tb.screenshot("1-in-flight")
		if tb.state() != "sending" || tb.storedKey() != key {
			t.Fatalf("in flight: state %s, stored key %q; want sending under %q", tb.state(), tb.storedKey(), key)
		}
		tb.do(chromedp.Reload())
		tb.waitFor(`document.getElementById("key").textContent.length > 0`, 10*time.Second)
		if got := tb.text("key"); got != key {
			t.Fatalf("after the reload the ticket's key is %q, want %q", got, key)
		}
		tb.waitState(10*time.Second, "resuming", "sending")
		tb.screenshot("2-resuming")
		oms.open(symbol)
		got := tb.waitState(30*time.Second, "placed", "replayed", "rejected", "unknown", "unreadable", "error")
		tb.screenshot("3-placed-earlier")
		if got != "replayed" {
			t.Fatalf("state %s (%s), want replayed: the request before the reload placed it", got, tb.text("status"))
		}
		tb.wantOneReceipt(oms, symbol)
		if n := len(oms.orderIDs(symbol)); n != 1 {
			t.Fatalf("OMS calls = %d, want 1", n)
		}
	})

	t.Run("New ticket is refused while a check is in flight, and a reload resumes the intent: one order", func(t *testing.T) {
		tb, symbol := open(t, allowed, "check-pending")
		oms.script(symbol, drop) // placed, its answer lost: the outcome is unknown
		hold := holdCheck(t, tb, worker)
		tb.fill(symbol)
		key := tb.text("key")
		tb.submit()
		hold.wait(t, tb)
		tb.screenshot("1-check-pending")
		// It checks by sending the order again, which settles it in every
		// mode; a lookup may find nothing where the order exists.
		if n := tb.gets.Load(); n != 0 {
			t.Errorf("the page sent %d GETs, want none: it checks an unknown outcome by POST", n)
		}
		if disabled := eval[bool](tb, `document.getElementById("new").disabled`); !disabled {
			t.Errorf("New ticket is enabled while the ticket's check is in flight, want it disabled")
		}
		tb.do(chromedp.Click(chromedp.ID("new")))
		if got, stored := tb.text("key"), tb.storedKey(); got != key || stored != key {
			t.Fatalf("after New ticket with the check in flight: key %q, stored %q; want the ticket's %q kept", got, stored, key)
		}
		// Let the reloaded page's requests through; the held check dies
		// with the page it was sent from, unanswered.
		hold.passOthers()
		tb.do(chromedp.Reload())
		tb.waitFor(`document.getElementById("key").textContent.length > 0`, 10*time.Second)
		if got := tb.text("key"); got != key {
			t.Fatalf("after the reload the ticket's key is %q, want %q: the intent was lost", got, key)
		}
		got := tb.waitState(30*time.Second, "placed", "replayed", "rejected", "unknown", "unreadable", "error", "unresolved")
		tb.screenshot("2-after-reload")
		if got != "placed" && got != "replayed" {
			t.Fatalf("state %s (%s), want the one order placed", got, tb.text("status"))
		}
		tb.wantOneReceipt(oms, symbol)
		if stored := tb.storedKey(); stored != "" {
			t.Errorf("stored key %q after the final answer, want none", stored)
		}
	})

	t.Run("a stale check never touches a newer ticket, nor its saved intent", func(t *testing.T) {
		tb, symbol := open(t, allowed, "stale-check")
		oms.script(symbol, drop)
		hold := holdCheck(t, tb, worker)
		tb.fill(symbol)
		older := tb.text("key")
		tb.submit()
		hold.wait(t, tb)
		// The Worker settles the order meanwhile, so the held check's
		// answer is a receipt: what would show on, and clear, a newer ticket.
		settle := newGoClient(t, w.URL(), nil)
		placed, err := settle.SubmitWithKey(t.Context(), older, client.Order{Symbol: symbol, Side: client.Buy, Quantity: 25})
		if err != nil {
			t.Fatalf("settling the older ticket's order: %v", err)
		}
		// New ticket is disabled in flight; open one anyway, as any other
		// path to a new ticket would.
		eval[bool](tb, `(() => { const b = document.getElementById("new"); b.disabled = false; b.click(); return true; })()`)
		newer := tb.text("key")
		if newer == older || tb.storedKey() != newer {
			t.Fatalf("forced New ticket: key %q, stored %q; want a new key saved (older %q)", newer, tb.storedKey(), older)
		}
		hold.releaseUntilAnswered(t, tb)
		// The page's one request is over: its answer has been handled.
		tb.waitFor(`!document.getElementById("submit").disabled`, 20*time.Second)
		tb.screenshot("1-stale-answer-ignored")
		if got, shown, state := tb.storedKey(), tb.receipts(), tb.state(); got != newer || len(shown) != 0 || state != "new" {
			t.Errorf("after the older ticket's check answered: stored key %q, receipts %v, state %s (%s); want %q, none, new",
				got, shown, state, tb.text("status"), newer)
		}
		tb.do(chromedp.Reload())
		tb.waitFor(`document.getElementById("key").textContent.length > 0`, 10*time.Second)
		if got := tb.text("key"); got != newer {
			t.Fatalf("after the reload the ticket's key is %q, want the newer ticket's %q", got, newer)
		}
		if ids := oms.orderIDs(symbol); len(slices.Compact(ids)) != 1 || ids[0] != placed.Receipt.OrderID {
			t.Fatalf("OMS order ids %v, want only %s", ids, placed.Receipt.OrderID)
		}
	})

	t.Run("?worker= is ignored on a page not served from this machine", func(t *testing.T) {
		tb := openTicket(t, browser, ticketAt(desk), worker, shots)
		tb.label = "worker-pinned"
		tb.screenshot("desk")
		// ticket.js's pinnedWorker.
		if got, want := tb.text("worker"), "http://127.0.0.1:8787"; got != want {
			t.Fatalf("the page on %s sends orders to %s, want its pinned Worker %s, not ?worker=%s", desk, got, want, worker)
		}
	})

	t.Run("a rejection shows its reason, and a second Submit does not call the OMS again", func(t *testing.T) {
		tb, symbol := open(t, allowed, "rejected")
		oms.script(symbol, reject)
		tb.fill(symbol)
		tb.submit()
		if got := tb.waitState(20*time.Second, "rejected", "placed", "replayed", "unknown", "unreadable", "error"); got != "rejected" {
			t.Fatalf("state %s (%s), want rejected", got, tb.text("status"))
		}
		tb.screenshot("1-rejected")
		if status := tb.text("status"); !strings.Contains(status, rejectReason) {
			t.Fatalf("status %q, want the OMS's reason %q", status, rejectReason)
		}
		tb.submit()
		tb.waitFor(`document.getElementById("status-title").textContent === "Refused (earlier)"`, 20*time.Second)
		tb.screenshot("2-rejected-again")
		if n := len(oms.orderIDs(symbol)); n != 1 {
			t.Fatalf("OMS calls = %d, want 1: the second Submit replays the stored rejection", n)
		}
		if n := tb.posts.Load(); n != 2 {
			t.Fatalf("the page sent %d POSTs, want 2", n)
		}
	})

	t.Run("a rate limit is shown with the wait the Worker asks for", func(t *testing.T) {
		// The Worker of these tests has no rate limit bound: the browser
		// answers the POST itself with the Worker's 429 as it sends it,
		// CORS headers included, once the real preflight has passed. The
		// page can show the wait only because Retry-After is exposed.
		tb, symbol := open(t, allowed, "rate-limited")
		answerPOSTs(t, tb, worker, allowed, 429, "60",
			`{"type":"tag:edge-orders,2026:rate_limited","title":"Too many new orders","status":429,`+
				`"detail":"This client placed more new orders than its budget allows; retry after 60 seconds at the latest. Replays and lookups are not limited.","error":"rate_limited"}`)
		tb.fill(symbol)
		key := tb.text("key")
		tb.submit()
		if got := tb.waitState(20*time.Second, "rate-limited", "placed", "replayed", "rejected", "unknown", "unreadable", "error"); got != "rate-limited" {
			t.Fatalf("state %s (%s), want rate-limited", got, tb.text("status"))
		}
		tb.screenshot("rate-limited")
		if status := tb.text("status"); !strings.Contains(status, "60 s") {
			t.Fatalf("status %q, want the Worker's 60 s wait", status)
		}
		if tb.posts.Load() != 1 || tb.storedKey() != key {
			t.Fatalf("%d POSTs, stored key %q; want one POST, not retried, and the ticket's key %q kept", tb.posts.Load(), tb.storedKey(), key)
		}
	})

	t.Run("an answer naming no order is checked by a lookup, which places nothing: not placed, and Submit places it once", func(t *testing.T) {
		tb, symbol := open(t, allowed, "not-placed")
		// The Worker's storage is down for the page's POSTs until passed
		// is set: each is answered 503 storage_unavailable in the browser.
		passed := answerPOSTs(t, tb, worker, allowed, 503, "1",
			`{"type":"tag:edge-orders,2026:storage_unavailable","title":"Storage unavailable","status":503,`+
				`"detail":"The Worker's storage failed; retry under the same key.","error":"storage_unavailable"}`)
		tb.fill(symbol)
		key := tb.text("key")
		tb.submit()
		if got := tb.waitState(40*time.Second, "not-placed", "placed", "replayed", "rejected", "unreadable", "error"); got != "not-placed" {
			t.Fatalf("state %s (%s), want not-placed: the lookup found nothing under the key", got, tb.text("status"))
		}
		tb.screenshot("1-not-placed")
		if tb.gets.Load() == 0 || len(oms.orderIDs(symbol)) != 0 || tb.storedKey() != key {
			t.Fatalf("%d GETs, OMS calls %v, stored key %q; want the page's lookup, no order, and the ticket's key %q kept",
				tb.gets.Load(), oms.orderIDs(symbol), tb.storedKey(), key)
		}
		passed.Store(true)
		tb.submit()
		if got := tb.waitState(20*time.Second, "placed", "replayed", "rejected", "unknown", "unreadable", "error"); got != "placed" {
			t.Fatalf("state %s (%s), want placed", got, tb.text("status"))
		}
		tb.screenshot("2-placed")
		tb.wantOneReceipt(oms, symbol)
		if n := len(oms.orderIDs(symbol)); n != 1 {
			t.Fatalf("OMS calls = %d, want 1", n)
		}
	})

	t.Run("a page on an origin the Worker does not allow cannot read the answer, and says so", func(t *testing.T) {
		tb, symbol := open(t, other, "wrong-origin")
		tb.fill(symbol)
		key := tb.text("key")
		tb.submit()
		if got := tb.waitState(30*time.Second, "unreadable", "placed", "replayed", "rejected", "unknown", "error"); got != "unreadable" {
			t.Fatalf("state %s (%s), want unreadable", got, tb.text("status"))
		}
		tb.screenshot("unreadable")
		if status := tb.text("status"); !strings.Contains(status, other) || !strings.Contains(status, "ALLOWED_ORIGINS") {
			t.Fatalf("status %q, want it to name this page's origin %s and ALLOWED_ORIGINS", status, other)
		}
		if n := len(oms.orderIDs(symbol)); n != 0 {
			t.Fatalf("OMS calls = %d, want none: the preflight was refused", n)
		}
		if tb.storedKey() != key {
			t.Fatalf("stored key %q, want the ticket's %q kept: the outcome is unknown to the page", tb.storedKey(), key)
		}
		if !w.sawLog(`"outcome":"origin_not_allowed"`, 10*time.Second) {
			t.Fatal("the Worker logged no origin_not_allowed preflight")
		}
		if !strings.Contains(w.Logs(), other) {
			t.Fatalf("the Worker's log does not name the refused origin %s", other)
		}
	})
}

// answerPOSTs has the browser answer each POST the tab sends to worker
// itself, as the Worker would, CORS headers included for the page on
// allowed: with status, Retry-After retryAfter and the problem body, until
// the flag it returns is set; then POSTs reach the Worker. Every other
// request, the preflight included, goes through.
func answerPOSTs(t *testing.T, tb *tab, worker, allowed string, status int64, retryAfter, body string) *atomic.Bool {
	t.Helper()
	if _, err := chromedp.Call(tb.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: worker + "*", RequestStage: fetch.RequestStageRequest},
	}}); err != nil {
		t.Fatal(err)
	}
	var passed atomic.Bool
	paused := chromedp.Events(tb.ctx, fetch.RequestPaused)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			if ev.Request.Method != http.MethodPost || passed.Load() {
				chromedp.Call(tb.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				continue
			}
			chromedp.Call(tb.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{
				RequestID: ev.RequestID, ResponseCode: status,
				ResponseHeaders: []*fetch.HeaderEntry{
					{Name: "Content-Type", Value: "application/problem+json"},
					{Name: "X-Content-Type-Options", Value: "nosniff"},
					{Name: "Retry-After", Value: retryAfter},
					{Name: "Access-Control-Allow-Origin", Value: allowed},
					{Name: "Access-Control-Expose-Headers", Value: "Idempotent-Replay, Retry-After, Link, Idempotency-Expires"},
					{Name: "Vary", Value: "Origin"},
				},
				Body: []byte(body),
			})
		}
	}()
	return &passed
}

// checkHold drives a tab's order to an unknown outcome in a few seconds
// and holds the page's first check of it (the order sent again by itself,
// #status[data-checking]) before it reaches the Worker. The Worker's
// answer to the order (the OMS's answer lost: 503 outcome_unknown)
// reaches the page with Retry-After: 1, and the browser repeats it for the
// client's retries instead of sending them, so the client gives up after
// its attempts and the page checks again.
type checkHold struct {
	held     chan fetch.RequestID // the held check, once
	released atomic.Bool          // every request from now on passes
	first    atomic.Int64         // the status of the Worker's answer to the order
	ctx      context.Context
	// answered is closed once the Worker's answer to a released check has
	// gone on to the page.
	answered   chan struct{}
	answerOnce sync.Once
}

// holdCheck starts holding a tab's requests to worker as checkHold says.
func holdCheck(t *testing.T, tb *tab, worker string) *checkHold {
	t.Helper()
	if _, err := chromedp.Call(tb.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: worker + "*", RequestStage: fetch.RequestStageRequest},
		{URLPattern: worker + "*", RequestStage: fetch.RequestStageResponse},
	}}); err != nil {
		t.Fatal(err)
	}
	h := &checkHold{held: make(chan fetch.RequestID, 1), answered: make(chan struct{}), ctx: tb.ctx}
	paused := chromedp.Events(tb.ctx, fetch.RequestPaused)
	// checking reports whether the page's request now is its check.
	checking := func() bool {
		ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
		defer cancel()
		on, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("status").hasAttribute("data-checking")`))
		return err == nil && on
	}
	go func() {
		var unknown *fetch.FulfillRequestParams // the Worker's answer to the order, Retry-After: 1
		for ev, err := range paused {
			if err != nil {
				return
			}
			atResponse := ev.ResponseStatusCode != 0 || ev.ResponseErrorReason != ""
			method := ev.Request.Method
			switch {
			case h.released.Load() || method != http.MethodPost:
			case atResponse && unknown == nil:
				h.first.Store(ev.ResponseStatusCode)
				body, err := chromedp.Call(tb.ctx, fetch.GetResponseBody, fetch.GetResponseBodyParams{RequestID: ev.RequestID})
				if err != nil {
					break
				}
				var headers []*fetch.HeaderEntry
				for _, e := range ev.ResponseHeaders {
					switch strings.ToLower(e.Name) {
					case "retry-after", "content-length", "content-encoding":
						continue
					}
					headers = append(headers, e)
				}
				unknown = &fetch.FulfillRequestParams{ResponseCode: ev.ResponseStatusCode, Body: body.Body,
					ResponseHeaders: append(headers, &fetch.HeaderEntry{Name: "Retry-After", Value: "1"})}
				answer := *unknown
				answer.RequestID = ev.RequestID
				chromedp.Call(tb.ctx, fetch.FulfillRequest, answer)
				continue
			case !atResponse && unknown != nil && checking():
				select {
				case h.held <- ev.RequestID:
					continue
				default:
				}
			case !atResponse && unknown != nil:
				answer := *unknown
				answer.RequestID = ev.RequestID
				chromedp.Call(tb.ctx, fetch.FulfillRequest, answer)
				continue
			}
			chromedp.Call(tb.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			if method == http.MethodPost && atResponse && h.released.Load() {
				h.answerOnce.Do(func() { close(h.answered) })
			}
		}
	}()
	return h
}

// wait waits until the page's check is held.
func (h *checkHold) wait(t *testing.T, tb *tab) {
	t.Helper()
	select {
	case id := <-h.held:
		h.held <- id
	case <-time.After(30 * time.Second):
		tb.screenshot("no-check")
		t.Fatalf("no check held in 30 s; the Worker answered the order with %d; the page says %s: %s", h.first.Load(), tb.state(), tb.text("status"))
	}
	if got := h.first.Load(); got != http.StatusServiceUnavailable {
		t.Fatalf("the Worker answered the order with %d, want 503 outcome_unknown", got)
	}
}

// passOthers lets every later request through, and keeps the held check.
func (h *checkHold) passOthers() { h.released.Store(true) }

// release lets the held check and every later request through.
func (h *checkHold) release() {
	h.released.Store(true)
	select {
	case id := <-h.held:
		chromedp.Call(h.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
	default:
	}
}

// releaseUntilAnswered releases the held check and waits until the
// browser has passed the Worker's answer to it on to the page.
func (h *checkHold) releaseUntilAnswered(t *testing.T, tb *tab) {
	t.Helper()
	h.release()
	select {
	case <-h.answered:
	case <-time.After(20 * time.Second):
		t.Fatal("the held check got no answer from the Worker in 20 s")
	}
}
