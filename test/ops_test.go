//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/edge-orders/edge-orders/internal/devtools/wranglerdev"
	"github.com/edge-orders/edge-orders/kv"
)

// The hostile values of the ops page's tests: what a client or an operator
// could send as a symbol, a key, a reason or a note. Each must show as
// these characters and run nothing.
const (
	hostileSymbol = `<img src=x onerror=alert(1)>`
	hostileKey    = `<svg onload=alert(2)>`
	hostileReason = `<b>filled</b><script>alert(3)</script>`
	hostileNote   = `checked by hand <iframe src=javascript:alert(4)>`
)

// markupFromData selects the elements that only markup built from data
// could have made: the page itself has none of these.
const markupFromData = `img, svg, iframe, b, object, embed, script:not([src])`

// opsPage is one browser tab on the ops page (public/ops).
type opsPage struct {
	*tab
	// dialogs counts the alert, confirm and prompt dialogs the page opened
	// (none is ever expected: the page confirms in a <dialog>); each is
	// dismissed.
	dialogs atomic.Int64
	mu      sync.Mutex
	// thrown are the page's uncaught exceptions; urls every URL it asked
	// for.
	thrown []string
	urls   []string
}

// openOps opens the ops page at pageURL in a new tab (a fresh
// sessionStorage) and waits for it to show either the sign-in form or
// the console.
func openOps(t *testing.T, browser context.Context, pageURL, shots, label string) *opsPage {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	p := &opsPage{tab: &tab{t: t, ctx: ctx, shot: shots, label: label}}
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			p.dialogs.Add(1)
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	thrown := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range thrown {
			if err != nil {
				return
			}
			text := ev.ExceptionDetails.Text
			if e := ev.ExceptionDetails.Exception; e != nil {
				text += " " + e.Description
			}
			p.mu.Lock()
			p.thrown = append(p.thrown, text)
			p.mu.Unlock()
		}
	}()
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.urls = append(p.urls, ev.Request.URL)
			p.mu.Unlock()
		}
	}()
	p.do(chromedp.Navigate(pageURL))
	p.waitFor(`!document.getElementById("login").hidden || !document.getElementById("console").hidden`, 10*time.Second)
	return p
}

// jsString is s as a JavaScript string literal, and as JSON.stringify
// writes it.
func jsString(s string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// waitFor polls a JavaScript condition until it holds, failing t after
// within with what the page shows.
func (p *opsPage) waitFor(cond string, within time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for !eval[bool](p.tab, "!!("+cond+")") {
		if time.Now().After(deadline) {
			p.screenshot("timeout")
			p.t.Fatalf("%s did not hold within %v; the page says: %s", cond, within, p.says())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// says is what the page shows that a failure message needs: its problem,
// its list's error and rows, and its exceptions.
func (p *opsPage) says() string {
	p.t.Helper()
	shown := eval[string](p.tab, `JSON.stringify({
		problem: document.getElementById("problem").hidden ? null : document.getElementById("problem").textContent.trim(),
		listError: document.getElementById("list-error").textContent,
		rows: [...document.querySelectorAll("#rows tr")].map((r) => r.dataset.client + "/" + r.dataset.key + ": " + r.dataset.state),
		detail: document.getElementById("detail").hidden ? null : document.getElementById("detail").dataset.state,
	})`)
	return shown + fmt.Sprintf("; exceptions %q", p.exceptions())
}

// exceptions are the page's uncaught exceptions so far.
func (p *opsPage) exceptions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.thrown)
}

// requested are the URLs the page asked for so far.
func (p *opsPage) requested() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.urls)
}

// signIn enters token and clicks Sign in.
func (p *opsPage) signIn(token string) {
	p.t.Helper()
	p.do(chromedp.SetValue(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("sign-in")))
}

// waitLoaded waits until the console shows a list fetched after since
// (Date.now() in the page).
func (p *opsPage) waitLoaded(since int64, within time.Duration) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`!document.getElementById("console").hidden && Number(document.getElementById("updated").dataset.at ?? 0) > %d`, since), within)
}

// now is Date.now() in the page.
func (p *opsPage) now() int64 {
	p.t.Helper()
	return int64(eval[float64](p.tab, `Date.now()`))
}

// waitRow waits until the attention list shows client's key in one of
// states.
func (p *opsPage) waitRow(client, key string, within time.Duration, states ...string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`[...document.querySelectorAll("#rows tr")].some((r) => r.dataset.client === %s && r.dataset.key === %s && %s.includes(r.dataset.state))`,
		jsString(client), jsString(key), jsStrings(states)), within)
}

func jsStrings(s []string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// row evaluates expr (of r, the row of client's key) in the page.
func rowEval[T any](p *opsPage, client, key, expr string) T {
	p.t.Helper()
	return eval[T](p.tab, fmt.Sprintf(`(() => { const r = [...document.querySelectorAll("#rows tr")].find((r) => r.dataset.client === %s && r.dataset.key === %s); return %s; })()`,
		jsString(client), jsString(key), expr))
}

// openRow clicks Open on the row of client's key, in the page's own
// event loop (a refresh may redraw the list between a lookup of the
// button and a mouse click at its place), and waits for its detail.
func (p *opsPage) openRow(client, key string) {
	p.t.Helper()
	before := p.renders()
	if !rowEval[bool](p, client, key, `(r?.querySelector("button.open").click(), !!r)`) {
		p.t.Fatalf("no row for %s/%s; the page says: %s", client, key, p.says())
	}
	p.waitDetail(key, before)
}

// renders is how many times the page has drawn a key's detail.
func (p *opsPage) renders() int {
	p.t.Helper()
	return int(eval[float64](p.tab, `Number(document.getElementById("detail").dataset.rendered ?? 0)`))
}

// waitDetail waits until the detail shows key, drawn after the count
// of renderings was before.
func (p *opsPage) waitDetail(key string, before int) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`!document.getElementById("detail").hidden && Number(document.getElementById("detail").dataset.rendered) > %d && document.getElementById("detail-key").textContent === %s`,
		before, jsString(key)), 10*time.Second)
}

// field is the text of the detail's field name ("" when it shows none).
func (p *opsPage) field(name string) string {
	p.t.Helper()
	return eval[string](p.tab, fmt.Sprintf(`[...document.querySelectorAll("#detail [data-field]")].find((e) => e.dataset.field === %s)?.textContent ?? ""`, jsString(name)))
}

// confirm waits for the confirmation dialog, saves its screenshot as
// shot if not "", and clicks Confirm.
func (p *opsPage) confirm(shot string) string {
	p.t.Helper()
	p.do(chromedp.WaitVisible(chromedp.ID("confirm-yes")))
	if shot != "" {
		p.screenshot(shot)
	}
	text := p.text("confirm")
	p.do(chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor(`!document.getElementById("confirm").open`, 5*time.Second)
	return text
}

// problem is the problem the page shows: its status and text.
func (p *opsPage) problem() (status, title, detail string) {
	p.t.Helper()
	return eval[string](p.tab, `document.getElementById("problem").dataset.status ?? ""`), p.text("problem-title"), p.text("problem-detail")
}

// wantNothingRan fails t if the page opened a JavaScript dialog, threw,
// or holds an element that only markup built from data could make.
func (p *opsPage) wantNothingRan() {
	p.t.Helper()
	if n := p.dialogs.Load(); n != 0 {
		p.t.Errorf("the page opened %d JavaScript dialogs, want none: a value ran as script", n)
	}
	if made := eval[string](p.tab, `[...document.querySelectorAll(`+jsString(markupFromData)+`)].map((e) => e.outerHTML).join(" ")`); made != "" {
		p.t.Errorf("the page holds elements made from data: %s; want none", made)
	}
	if thrown := p.exceptions(); len(thrown) != 0 {
		p.t.Errorf("the page threw %q", thrown)
	}
}

// wantTokenOnlyInSession fails t unless token is in the page's
// sessionStorage, and in no URL, localStorage or cookie.
func (p *opsPage) wantTokenOnlyInSession(token string) {
	p.t.Helper()
	if got := eval[string](p.tab, `sessionStorage.getItem("edge-orders.ops.token") ?? ""`); got != token {
		p.t.Errorf("sessionStorage holds %q, want the admin token", got)
	}
	if n := eval[float64](p.tab, `localStorage.length`); n != 0 {
		p.t.Errorf("localStorage holds %v items, want none", n)
	}
	if c := eval[string](p.tab, `document.cookie`); c != "" {
		p.t.Errorf("cookies %q, want none", c)
	}
	for _, u := range append(p.requested(), eval[string](p.tab, `location.href`)) {
		if strings.Contains(u, token) {
			p.t.Errorf("the admin token is in the URL %s", u)
		}
	}
}

// stubAdmin is the admin API as the ops page calls it (docs/operating.md),
// in memory, with a hostile value in every field a client or an operator
// fills. It serves the page from public/ without the CSP of
// public/_headers, so a value put on the page as markup would run: the
// test proves the rendering itself.
type stubAdmin struct {
	token string
	mu    sync.Mutex
	// resolved are the bodies of the resolve requests; auths the
	// Authorization headers the admin API got; listed the list requests'
	// queries; preconditions the orderId each resolve and purge named.
	resolved      []map[string]string
	auths         []string
	listed        []string
	preconditions []string
	state         string // the hostile key's state
	reason        string // its rejection's reason, once resolved
	// letters are the dead letters listed; acknowledged the URLs of the
	// acknowledgements, the path decoded.
	letters      []map[string]any
	acknowledged []string
}

// The stub's two keys: the hostile one, unresolved until resolved, on
// the list's first page; a plain one, unknown, on its second page.
const (
	stubClient  = "desk-1"
	stubOrderID = "0a6b3f1e-2d4c-4b5a-9e8f-7c6d5e4f3a2b"
	stubPlain   = "plain-key-2"
	// The dead letters': the hostile key's, and one of a dot key, which
	// only the query form can name.
	stubLetter    = "3f9c2a7d1e4b5c6a8d9e0f1a2b3c4d5e"
	stubDotLetter = "7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d"
)

// stubLetters are the stub's dead letters at the start.
func stubLetters() []map[string]any {
	return []map[string]any{
		{"client": stubClient, "key": hostileKey, "letterId": stubLetter, "state": "unresolved", "orderId": stubOrderID, "attempts": 7, "receivedAt": "2026-11-25T05:00:00.000Z"},
		{"client": stubClient, "key": "..", "letterId": stubDotLetter, "state": "none", "attempts": 0, "receivedAt": "2026-11-25T06:00:00.000Z"},
	}
}

func (s *stubAdmin) entry() map[string]any {
	e := map[string]any{"client": stubClient, "key": hostileKey, "state": s.state, "orderId": stubOrderID,
		"order":      map[string]any{"symbol": hostileSymbol, "side": "buy", "quantity": 25},
		"acceptedAt": "2026-11-24T05:00:00.000Z", "attempts": 7}
	if s.state == "rejected" {
		// As the Worker stores a rejection: its problem, and rejected.
		e["receipt"] = map[string]any{"type": problemTypePrefix + "order_rejected", "title": "Order rejected", "status": 422, "detail": s.reason, "error": "order_rejected", "orderId": stubOrderID}
		e["rejected"] = true
		e["expiresAt"] = "2026-11-25T05:30:00.000Z"
	}
	return e
}

func (s *stubAdmin) problem(w http.ResponseWriter, status int, code, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": problemTypePrefix + code, "title": title, "status": status, "detail": detail, "error": code})
}

func (s *stubAdmin) answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (s *stubAdmin) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.FileServer(http.Dir(filepath.Join(root, "public"))))
	admin := http.NewServeMux()
	admin.HandleFunc("GET /admin/orders", func(w http.ResponseWriter, r *http.Request) {
		s.listed = append(s.listed, r.URL.RawQuery)
		if r.URL.Query().Get("cursor") == "" {
			first := []any{}
			if s.state == "unresolved" {
				first = append(first, s.entry())
			}
			s.answer(w, map[string]any{"orders": first, "cursor": "page-2"})
			return
		}
		s.answer(w, map[string]any{"orders": []any{map[string]any{"client": "desk-2", "key": stubPlain, "state": "unknown", "orderId": "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a",
			"order": map[string]any{"symbol": "MSFT", "side": "sell", "quantity": 10}, "acceptedAt": "2026-11-24T05:10:00.000Z", "attempts": 2, "nextAttemptAt": "2026-11-24T05:10:03.000Z"}}})
	})
	admin.HandleFunc("GET /admin/orders/{client}/{key}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("client") != stubClient || r.PathValue("key") != hostileKey {
			s.problem(w, 404, "not_found", "No such key", "The Worker holds nothing for this client's key.")
			return
		}
		s.answer(w, s.entry())
	})
	admin.HandleFunc("DELETE /admin/orders/{client}/{key}", func(w http.ResponseWriter, r *http.Request) {
		s.preconditions = append(s.preconditions, "purge "+r.URL.Query().Get("orderId"))
		s.problem(w, 409, "outcome_not_final", "<b>Not final</b>", "Outcome unknown <img src=x onerror=alert(5)>: a retry could place it again.")
	})
	admin.HandleFunc("POST /admin/orders/{client}/{key}/resolve", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			s.problem(w, 400, "invalid_body", "Invalid body", err.Error())
			return
		}
		s.resolved = append(s.resolved, body)
		s.preconditions = append(s.preconditions, "resolve "+r.URL.Query().Get("orderId"))
		s.state, s.reason = body["status"], body["reason"]
		s.answer(w, s.entry())
	})
	admin.HandleFunc("GET /admin/deadletters", func(w http.ResponseWriter, r *http.Request) {
		s.answer(w, map[string]any{"deadLetters": s.letters})
	})
	// The hostile key's letter is acknowledged; the dot key's, named in
	// the query, is refused as if another letter had come meanwhile.
	admin.HandleFunc("DELETE /admin/deadletters/{client}/{key}", func(w http.ResponseWriter, r *http.Request) {
		s.acknowledged = append(s.acknowledged, r.URL.Path+"?"+r.URL.RawQuery)
		if r.PathValue("client") != stubClient || r.PathValue("key") != hostileKey || r.URL.Query().Get("letterId") != stubLetter {
			s.problem(w, 404, "not_found", "No such letter", "")
			return
		}
		done := s.letters[0]
		s.letters = s.letters[1:]
		s.answer(w, done)
	})
	admin.HandleFunc("DELETE /admin/deadletter", func(w http.ResponseWriter, r *http.Request) {
		s.acknowledged = append(s.acknowledged, r.URL.Path+"?"+r.URL.RawQuery)
		s.problem(w, 409, "dead_letter_changed", "Another dead letter", "This key holds another dead letter <img src=x onerror=alert(6)>.")
	})
	mux.HandleFunc("/admin/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			s.problem(w, 401, "unauthorized", "Unauthorized", "An admin token is required.")
			return
		}
		admin.ServeHTTP(w, r)
	})
	return mux
}

// TestOpsPageShowsEveryValueAsText drives the ops page in Chromium against
// a stub of the admin API that answers hostile values everywhere, served
// without the page's CSP, so nothing but the page's own rendering stands
// between a value and the DOM: every value shows as its characters, and
// nothing runs. It also proves the page's mechanics, which need no
// Worker: the token refused and then kept in sessionStorage only, the
// list fetched page by page and counted, Resolve and Purge behind the
// dialog, and a refusal's title and detail shown as they came.
func TestOpsPageShowsEveryValueAsText(t *testing.T) {
	requireWorker(t)
	chromium := chromiumPath(t)
	t.Parallel()
	stub := &stubAdmin{token: "stub-admin-token-0123456789", state: "unresolved", letters: stubLetters()}
	origin := serveLoopback(t, stub.handler())
	browser := startChromium(t, chromium)
	p := openOps(t, browser, origin+"/ops/", artifactsDir(t), "ops-stub")

	t.Run("a refused token is forgotten and the page says so", func(t *testing.T) {
		p.t = t
		p.signIn("not-the-admin-token-0000")
		p.waitFor(`!document.getElementById("login").hidden && !document.getElementById("problem").hidden`, 10*time.Second)
		if status, title, _ := p.problem(); status != "401" || !strings.Contains(title, "Unauthorized") {
			t.Errorf("problem %s %q, want the 401's title", status, title)
		}
		if got := eval[string](p.tab, `sessionStorage.getItem("edge-orders.ops.token") ?? ""`); got != "" {
			t.Errorf("sessionStorage keeps the refused token %q", got)
		}
	})

	t.Run("the list is fetched page by page and counted, and every value shows as text", func(t *testing.T) {
		p.t = t
		since := p.now()
		p.signIn(stub.token)
		p.waitLoaded(since, 10*time.Second)
		p.waitRow(stubClient, hostileKey, 5*time.Second, "unresolved")
		p.screenshot("1-list")
		p.wantTokenOnlyInSession(stub.token)
		if got := [3]string{p.text("count-unresolved"), p.text("count-unknown"), p.text("count-in_progress")}; got != [3]string{"1", "1", "0"} {
			t.Errorf("counts unresolved, unknown, in progress = %v, want 1, 1, 0 over both pages", got)
		}
		if got := rowEval[string](p, stubClient, hostileKey, `r.querySelector(".symbol").textContent + "|" + r.querySelector(".key").textContent`); got != hostileSymbol+"|"+hostileKey {
			t.Errorf("the row shows symbol|key %q, want %q", got, hostileSymbol+"|"+hostileKey)
		}
		stub.mu.Lock()
		listed := slices.Clone(stub.listed)
		stub.mu.Unlock()
		if len(listed) < 2 || !strings.Contains(listed[0], "state=unresolved,unknown,in_progress") || !strings.Contains(listed[1], "cursor=page-2") {
			t.Errorf("list queries %q, want the three states, then the second page by its cursor", listed)
		}
		p.wantNothingRan()
	})

	t.Run("a reload stays signed in", func(t *testing.T) {
		p.t = t
		since := p.now()
		p.do(chromedp.Reload())
		p.waitLoaded(since, 10*time.Second)
		p.waitRow(stubClient, hostileKey, 5*time.Second, "unresolved")
	})

	t.Run("the detail shows every value as text", func(t *testing.T) {
		p.t = t
		p.openRow(stubClient, hostileKey)
		p.screenshot("2-detail")
		if got := p.field("Symbol"); got != hostileSymbol {
			t.Errorf("the detail's symbol is %q, want %q", got, hostileSymbol)
		}
		if got := p.field("Order id"); got != stubOrderID {
			t.Errorf("the detail's order id is %q, want %q", got, stubOrderID)
		}
		p.wantNothingRan()
	})

	t.Run("a refused purge shows the problem's title and detail as text", func(t *testing.T) {
		p.t = t
		p.do(chromedp.Click(chromedp.ID("purge-open")))
		p.confirm("")
		p.waitFor(`!document.getElementById("problem").hidden`, 10*time.Second)
		p.screenshot("3-purge-refused")
		status, title, detail := p.problem()
		if status != "409" || !strings.HasSuffix(title, "<b>Not final</b>") || detail != "Outcome unknown <img src=x onerror=alert(5)>: a retry could place it again." {
			t.Errorf("problem %s %q: %q, want the stub's 409 as text", status, title, detail)
		}
		if eval[bool](p.tab, `document.getElementById("detail").hidden`) {
			t.Errorf("a refused purge hid the key's detail")
		}
		p.wantNothingRan()
	})

	t.Run("Cancel sends nothing", func(t *testing.T) {
		p.t = t
		p.do(chromedp.Click(chromedp.ID("resolve-open")), chromedp.WaitVisible(chromedp.ID("confirm-no")), chromedp.Click(chromedp.ID("confirm-no")))
		p.waitFor(`!document.getElementById("confirm").open`, 5*time.Second)
		stub.mu.Lock()
		n := len(stub.resolved)
		stub.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d resolve requests after Cancel, want none", n)
		}
	})

	t.Run("Resolve sends the operator's reason and note as they were typed, and shows them as text", func(t *testing.T) {
		p.t = t
		if !eval[bool](p.tab, `document.getElementById("resolve-reason").disabled`) {
			t.Errorf("the reason can be typed for an acceptance, which the admin API refuses")
		}
		p.do(chromedp.SetValue(chromedp.ID("resolve-status"), "rejected"))
		eval[bool](p.tab, `document.getElementById("resolve-status").dispatchEvent(new Event("change"))`)
		p.do(chromedp.SetValue(chromedp.ID("resolve-reason"), hostileReason), chromedp.SetValue(chromedp.ID("resolve-note"), hostileNote),
			chromedp.Click(chromedp.ID("resolve-open")))
		asked := p.confirm("4-resolve-confirm")
		for _, want := range []string{hostileKey, stubOrderID, hostileReason, hostileNote, "rejected"} {
			if !strings.Contains(asked, want) {
				t.Errorf("the confirmation %q does not name %q", asked, want)
			}
		}
		p.waitFor(`document.getElementById("detail").dataset.state === "rejected" && !document.getElementById("notice").hidden`, 10*time.Second)
		// The list, fetched again, no longer has the key.
		p.waitFor(`document.getElementById("count-unresolved").textContent === "0"`, 10*time.Second)
		p.screenshot("5-resolved")
		stub.mu.Lock()
		resolved := slices.Clone(stub.resolved)
		stub.mu.Unlock()
		want := map[string]string{"status": "rejected", "reason": hostileReason, "note": hostileNote}
		if len(resolved) != 1 || fmt.Sprint(resolved[0]) != fmt.Sprint(want) {
			t.Errorf("resolve bodies %v, want one: %v", resolved, want)
		}
		stub.mu.Lock()
		sent := slices.Clone(stub.preconditions)
		stub.mu.Unlock()
		if wantSent := []string{"purge " + stubOrderID, "resolve " + stubOrderID}; !slices.Equal(sent, wantSent) {
			t.Errorf("the actions named the order ids %q, want %q: the order the operator confirmed", sent, wantSent)
		}
		if got := p.field("Stored rejection"); !strings.Contains(got, jsString(hostileReason)) {
			t.Errorf("the stored rejection shows %q, want the reason %s as text", got, jsString(hostileReason))
		}
		p.wantNothingRan()
	})

	t.Run("the dead letters show as text, and Acknowledge names the letter", func(t *testing.T) {
		p.t = t
		letterRow := func(key string) string {
			return `[...document.querySelectorAll("#letter-rows tr")].find((r) => r.dataset.key === ` + jsString(key) + `)`
		}
		p.waitFor(letterRow(hostileKey)+` && `+letterRow(".."), 10*time.Second)
		if got := eval[string](p.tab, letterRow(hostileKey)+`.querySelector(".key").textContent`); got != hostileKey {
			t.Errorf("the letter's key shows %q, want %q", got, hostileKey)
		}
		eval[bool](p.tab, `(`+letterRow(hostileKey)+`.querySelector("button.ack").click(), true)`)
		asked := p.confirm("6-acknowledge-confirm")
		for _, want := range []string{hostileKey, stubLetter, stubOrderID} {
			if !strings.Contains(asked, want) {
				t.Errorf("the confirmation %q does not name %q", asked, want)
			}
		}
		p.waitFor(`document.getElementById("notice").dataset.kind === "acknowledged" && !document.getElementById("notice").hidden`, 10*time.Second)
		p.waitFor(`!(`+letterRow(hostileKey)+`)`, 10*time.Second)
		// The dot key's letter: by the query form, refused, and nothing ran.
		eval[bool](p.tab, `(`+letterRow("..")+`.querySelector("button.ack").click(), true)`)
		p.confirm("")
		p.waitFor(`!document.getElementById("problem").hidden`, 10*time.Second)
		p.screenshot("7-acknowledge-refused")
		if status, title, detail := p.problem(); status != "409" || title != "Acknowledge refused: Another dead letter" || !strings.Contains(detail, "<img src=x onerror=alert(6)>") {
			t.Errorf("problem %s %q: %q, want the stub's 409 as text", status, title, detail)
		}
		stub.mu.Lock()
		acknowledged := slices.Clone(stub.acknowledged)
		stub.mu.Unlock()
		want := []string{"/admin/deadletters/" + stubClient + "/" + hostileKey + "?letterId=" + stubLetter,
			"/admin/deadletter?client=" + stubClient + "&key=..&letterId=" + stubDotLetter}
		if !slices.Equal(acknowledged, want) {
			t.Errorf("acknowledgements %q, want %q: each names its letter, the dot key's in the query", acknowledged, want)
		}
		p.wantNothingRan()
	})

	t.Run("sign out forgets the token and what the page showed", func(t *testing.T) {
		p.t = t
		p.do(chromedp.Click(chromedp.ID("sign-out")))
		p.waitFor(`!document.getElementById("login").hidden`, 5*time.Second)
		if got := eval[string](p.tab, `(sessionStorage.getItem("edge-orders.ops.token") ?? "") + document.getElementById("rows").textContent`); got != "" {
			t.Errorf("after sign out the page keeps %q", got)
		}
		stub.mu.Lock()
		defer stub.mu.Unlock()
		for _, a := range stub.auths {
			if a != "Bearer "+stub.token && a != "Bearer not-the-admin-token-0000" {
				t.Errorf("the admin API got Authorization %q, want only the bearer tokens typed", a)
			}
		}
	})
}

// TestOpsPageIsServedBesideTheWorker checks, in each mode, that the ops
// page is served from Static Assets at /ops/ with its CSP, and that every
// other path still reaches the Worker: no asset can shadow it.
func TestOpsPageIsServedBesideTheWorker(t *testing.T) {
	shareWorkers(t)
	noRedirect := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(t *testing.T, url string) (*http.Response, string) {
		t.Helper()
		resp, err := noRedirect.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	forEachMode(t, func(t *testing.T, w *target) {
		for _, c := range []struct{ path, contentType, body string }{
			{"/ops/", "text/html", `<script type="module" src="ops.js">`},
			{"/ops/ops.js", "text/javascript", `sessionStorage`},
			{"/ops/ops.css", "text/css", `dialog`},
		} {
			resp, body := get(t, w.URL()+c.path)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.contentType) || !strings.Contains(body, c.body) {
				t.Errorf("GET %s = %d %s, want 200 %s with the page's file", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.contentType)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "require-trusted-types-for 'script'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("GET %s: Content-Security-Policy %q, want %s (public/_headers)", c.path, csp, want)
				}
			}
		}
		if resp, _ := get(t, w.URL()+"/ops"); resp.StatusCode/100 != 3 || resp.Header.Get("Location") != "/ops/" {
			t.Errorf("GET /ops = %d to %q, want a redirect to /ops/", resp.StatusCode, resp.Header.Get("Location"))
		}
		if resp, _ := get(t, w.URL()+"/_headers"); resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET /_headers = %d %s, want the Worker's problem: the headers file is no asset", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		// The Worker's own paths, each answered by the Worker as before.
		for _, c := range []struct{ method, path, contentType string }{
			{"GET", "/", "application/problem+json"},
			{"GET", "/orders", "application/problem+json"},
			{"GET", "/idempotency", "text/markdown; charset=utf-8"},
			{"GET", "/admin/orders", "application/problem+json"},
			{"GET", "/index.html", "application/problem+json"},
		} {
			resp, body := get(t, w.URL()+c.path)
			if resp.Header.Get("Content-Type") != c.contentType || resp.Header.Get("Content-Security-Policy") != "" {
				t.Errorf("%s %s = %d %s (CSP %q): %.80s; want the Worker's answer, %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"),
					resp.Header.Get("Content-Security-Policy"), body, c.contentType)
			}
		}
		if got := w.post(t, newKey(t), validOrder); got.status != 201 {
			t.Errorf("POST /orders = %d %s, want 201", got.status, got.body)
		}
	})
}

// TestOpsPage proves the ops page against the Worker's admin API in
// Chromium, in each mode, with client and admin tokens and a fake OMS
// that places every order and loses every answer. The settler gives up
// after SETTLE_MAX_AGE_SECONDS (60 s, the least it takes), so the test
// takes a little over a minute, mostly waiting. On the page, the operator:
// tries to purge the key while its outcome is unknown, and is refused
// with the reason; sees it become unresolved; resolves it as accepted
// (the OMS has the order); and purges it once final. The client's retry
// gets the receipt the operator recorded, and the OMS sees no call more.
// A second order's symbol is hostile, and shows as its characters in the
// list and the detail, with nothing run.
func TestOpsPage(t *testing.T) {
	requireWorker(t)
	chromium := chromiumPath(t)
	t.Parallel()
	const client, clientToken = "desk", "ops-desk-token-0123456789"
	const admin, adminToken = "oncall", "ops-oncall-token-0123456789"
	env := filepath.Join(t.TempDir(), "ops.vars")
	if err := os.WriteFile(env, []byte("API_TOKENS="+client+":"+clientToken+"\nADMIN_TOKENS="+admin+":"+adminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	browser := startChromium(t, chromium)
	shots := artifactsDir(t)
	t.Run("without ADMIN_TOKENS the page says the admin API is off", func(t *testing.T) {
		t.Parallel() // it waits for the shared Worker; the modes go on
		holdSharedWorkers(t)
		p := openOps(t, browser, kvWorker.URL()+"/ops/", shots, "ops-off")
		p.signIn(adminToken)
		p.waitFor(`!document.getElementById("login").hidden && !document.getElementById("problem").hidden`, 15*time.Second)
		p.screenshot("admin-api-off")
		if status, title, detail := p.problem(); status != "400" || title != "The admin API is off" || !strings.Contains(detail, "ADMIN_TOKENS") {
			t.Errorf("problem %s %q: %q, want the admin API off, naming ADMIN_TOKENS", status, title, detail)
		}
		if got := eval[string](p.tab, `sessionStorage.getItem("edge-orders.ops.token") ?? ""`); got != "" {
			t.Errorf("sessionStorage keeps the token %q", got)
		}
	})
	for _, mode := range []string{"kv", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			oms := startOwnFakeOMS(t)
			w := startWorker(t, mode, wranglerdev.Options{EnvFile: env, Vars: giveUpVars(oms)})
			post := func(key, symbol string) response {
				return w.send(t, http.MethodPost, gatewayOrder(symbol), "Idempotency-Key", key, "Content-Type", "application/json", "Authorization", "Bearer "+clientToken)
			}
			adminCall := func(method, path string) response {
				t.Helper()
				req, err := http.NewRequest(method, w.URL()+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+adminToken)
				resp, err := httpClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
			}
			// Every call is placed and its answer lost: the client's, and
			// the settler's until it gives up.
			lost := slices.Repeat([]step{drop}, 30)
			symbol, key := fmt.Sprintf("OPS-%s-%d", strings.ToUpper(mode), time.Now().UnixNano()%1e6), newKey(t)
			xssKey := hostileKey + "-" + mode
			oms.script(symbol, lost...)
			oms.script(hostileSymbol, lost...)
			wantUnknown(t, post(key, symbol))
			wantUnknown(t, post(xssKey, hostileSymbol))
			orderID := oms.orderIDs(symbol)[0]

			p := openOps(t, browser, w.URL()+"/ops/", shots, "ops-"+mode)
			p.screenshot("01-sign-in")
			if eval[bool](p.tab, `document.getElementById("login").hidden`) {
				t.Fatalf("the page does not ask for a token; it says: %s", p.says())
			}
			since := p.now()
			p.signIn(adminToken)
			p.waitLoaded(since, 15*time.Second)
			p.wantTokenOnlyInSession(adminToken)
			// The page runs under its CSP: markup from a string throws.
			if got := eval[string](p.tab, `(() => { try { document.createElement("div").innerHTML = "<b>x</b>"; return "allowed"; } catch (e) { return e.name; } })()`); got != "TypeError" {
				t.Errorf("innerHTML from a string: %s, want a TypeError (Trusted Types, public/_headers)", got)
			}

			t.Run("a purge while the outcome is unknown is refused, and the page says why", func(t *testing.T) {
				p.t = t
				p.waitRow(client, key, 15*time.Second, "unknown", "in_progress")
				p.screenshot("02-list-unknown")
				p.openRow(client, key)
				p.do(chromedp.Click(chromedp.ID("purge-open")))
				p.confirm("03-purge-confirm")
				p.waitFor(`!document.getElementById("problem").hidden`, 10*time.Second)
				p.screenshot("04-purge-refused")
				status, title, detail := p.problem()
				if status != "409" || !strings.HasPrefix(title, "Purge refused: ") || detail == "" {
					t.Fatalf("problem %s %q: %q, want a 409 with its title and detail", status, title, detail)
				}
				// The Worker refuses it too (outcome_not_final, or in_progress
				// while a settle attempt holds the key), and still holds it.
				if again := adminCall(http.MethodDelete, "/admin/orders/"+client+"/"+key); again.status != 409 {
					t.Errorf("the Worker answers a purge with %d %s, want 409; the page showed %q", again.status, again.body, title)
				}
				if got := adminCall(http.MethodGet, "/admin/orders/"+client+"/"+key); got.status != 200 || !strings.Contains(got.body, orderID) {
					t.Errorf("after the refused purge, the key's detail = %d %s, want it kept", got.status, got.body)
				}
			})

			t.Run("the order whose answer was lost appears as unresolved once the settler gives up", func(t *testing.T) {
				p.t = t
				p.waitRow(client, key, 120*time.Second, "unresolved")
				p.waitRow(client, xssKey, 30*time.Second, "unresolved")
				p.screenshot("05-list-unresolved")
				if got := [3]string{p.text("count-unresolved"), p.text("count-unknown"), p.text("count-in_progress")}; got != [3]string{"2", "0", "0"} {
					t.Errorf("counts unresolved, unknown, in progress = %v, want 2, 0, 0", got)
				}
				if got := rowEval[string](p, client, key, `r.querySelector(".symbol").textContent`); got != symbol {
					t.Errorf("the row's symbol is %q, want %q", got, symbol)
				}
				p.openRow(client, key)
				p.screenshot("06-detail")
				if got, state := p.field("Order id"), p.text("detail-state"); got != orderID || state != "unresolved" {
					t.Errorf("the detail shows order %q, %s; want %s, unresolved", got, state, orderID)
				}
			})

			t.Run("the settler's dead letter is listed until acknowledged on the page", func(t *testing.T) {
				if mode != "kv" {
					t.Skip("ledger mode has no queue: its unresolved keys are listed by /admin/orders")
				}
				p.t = t
				// The Worker consumes SETTLE_DLQ and records each letter. Over
				// KV the give-up, and its letter, wait for a check once reads
				// have caught up (2 × kv.ReadsLag after the last call).
				row := `[...document.querySelectorAll("#letter-rows tr")].find((r) => r.dataset.client === ` + jsString(client) + ` && r.dataset.key === ` + jsString(key) + `)`
				p.waitFor(row, 2*kv.ReadsLag+time.Minute)
				p.screenshot("06b-dead-letter")
				letterID := eval[string](p.tab, row+`.dataset.letter`)
				if got := adminCall(http.MethodGet, "/admin/deadletters/"+client+"/"+url.PathEscape(key)); got.status != 200 ||
					!strings.Contains(got.body, `"letterId":`+jsString(letterID)) || !strings.Contains(got.body, `"state":"unresolved"`) || letterID == "" {
					t.Fatalf("GET the key's dead letters = %d %s, want the letter %q the page shows, unresolved", got.status, got.body, letterID)
				}
				eval[bool](p.tab, `(`+row+`.querySelector("button.ack").click(), true)`)
				if asked := p.confirm("06c-acknowledge-confirm"); !strings.Contains(asked, letterID) || !strings.Contains(asked, key) {
					t.Errorf("the confirmation %q does not name the letter %s and its key", asked, letterID)
				}
				p.waitFor(`document.getElementById("notice").dataset.kind === "acknowledged" && !document.getElementById("notice").hidden`, 15*time.Second)
				p.waitFor(`!(`+row+`)`, 15*time.Second)
				if got := adminCall(http.MethodGet, "/admin/deadletters"); strings.Contains(got.body, `"key":`+jsString(key)) {
					t.Errorf("after the acknowledgement the letters are %s, want %s gone", got.body, key)
				}
				w.countLog(t, `"action":"acknowledge"`, 10*time.Second)
				if audit := linesWith(w.Logs(), `"action":"acknowledge"`); !strings.Contains(audit, `"letterId":`+jsString(letterID)) || !strings.Contains(audit, `"admin":"`+admin+`"`) {
					t.Errorf("the acknowledgement's audit lines %q, want the letter %s and the admin %s", audit, letterID, admin)
				}
			})

			// Counted after the give-up's check (KV), which calls the OMS once
			// more, and which the dead letter waits for.
			calls := len(oms.orderIDs(symbol))
			t.Run("the operator resolves it as accepted", func(t *testing.T) {
				p.t = t
				p.do(chromedp.SetValue(chromedp.ID("resolve-note"), "found in the OMS by hand, filled"), chromedp.Click(chromedp.ID("resolve-open")))
				asked := p.confirm("07-resolve-confirm")
				if !strings.Contains(asked, orderID) || !strings.Contains(asked, key) {
					t.Errorf("the confirmation %q does not name the order %s and its key", asked, orderID)
				}
				p.waitFor(`document.getElementById("detail").dataset.state === "accepted" && !document.getElementById("notice").hidden`, 15*time.Second)
				p.waitFor(`document.getElementById("count-unresolved").textContent === "1"`, 15*time.Second)
				p.screenshot("08-resolved")
				if got := p.field("Receipt"); !strings.Contains(got, orderID) {
					t.Errorf("the detail's receipt %q, want the order %s", got, orderID)
				}
				w.countLog(t, `"action":"resolve"`, 10*time.Second)
				if audit := linesWith(w.Logs(), `"action":"resolve"`); !strings.Contains(audit, `"admin":"`+admin+`"`) || !strings.Contains(audit, "found in the OMS by hand") {
					t.Errorf("the resolve's audit lines %q, want the admin %s and the note", audit, admin)
				}
			})

			t.Run("the client's retry gets that receipt, and the OMS is not called again", func(t *testing.T) {
				p.t = t
				retry := post(key, symbol)
				if retry.status != 200 {
					t.Fatalf("the client's retry = %d %s, want the 200 receipt the operator recorded", retry.status, retry.body)
				}
				r := decodeReceipt(t, retry.body)
				if r.OrderID != orderID || r.Status != "accepted" || r.Symbol != symbol {
					t.Errorf("the retry's receipt %+v, want order %s accepted for %s", r, orderID, symbol)
				}
				if n := len(oms.orderIDs(symbol)); n != calls {
					t.Errorf("OMS calls for the key %d → %d: the retry called the OMS again", calls, n)
				}
				if !oms.accepted(orderID) {
					t.Errorf("the OMS never placed %s, whose receipt the operator recorded", orderID)
				}
			})

			t.Run("the symbol a client sent shows as text and runs nothing", func(t *testing.T) {
				p.t = t
				if got := rowEval[string](p, client, xssKey, `r.querySelector(".symbol").textContent + "|" + r.querySelector(".key").textContent`); got != hostileSymbol+"|"+xssKey {
					t.Errorf("the row shows symbol|key %q, want %q", got, hostileSymbol+"|"+xssKey)
				}
				p.openRow(client, xssKey)
				p.screenshot("09-hostile-symbol")
				if got := p.field("Symbol"); got != hostileSymbol {
					t.Errorf("the detail's symbol is %q, want %q", got, hostileSymbol)
				}
				p.wantNothingRan()
			})

			t.Run("a purge of the final key works", func(t *testing.T) {
				p.t = t
				before := p.renders()
				p.do(chromedp.SetValue(chromedp.ID("find-client"), client), chromedp.SetValue(chromedp.ID("find-key"), key), chromedp.Click(chromedp.ID("find-open")))
				p.waitDetail(key, before)
				p.waitFor(`document.getElementById("detail").dataset.state === "accepted"`, 5*time.Second)
				p.do(chromedp.Click(chromedp.ID("purge-open")))
				p.confirm("")
				p.waitFor(`document.getElementById("notice").dataset.kind === "purged" && !document.getElementById("notice").hidden && document.getElementById("detail").hidden`, 15*time.Second)
				p.screenshot("10-purged")
				if got := adminCall(http.MethodGet, "/admin/orders/"+client+"/"+key); got.status != 404 {
					t.Errorf("after the purge the key's detail = %d %s, want 404", got.status, got.body)
				}
				if got := w.send(t, http.MethodGet, "", "Idempotency-Key", key, "Authorization", "Bearer "+clientToken); got.status != 404 {
					t.Errorf("after the purge a lookup = %d %s, want 404", got.status, got.body)
				}
				p.wantNothingRan()
			})
		})
	}
}

// pagingAdmin is an admin API whose listing spans many pages, as a ledger
// listing over many clients' shards does (32 objects a page): every page
// but the last is empty, and the last holds what last holds.
type pagingAdmin struct {
	token, realm string
	pages        int
	mu           sync.Mutex
	last         []any
	served       int // the list pages served
	lastServed   bool
}

func (s *pagingAdmin) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.FileServer(http.Dir(filepath.Join(root, "public"))))
	mux.HandleFunc("/admin/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+s.realm+`", error="invalid_token"`)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(401)
			json.NewEncoder(w).Encode(map[string]any{"type": problemTypePrefix + "unauthorized", "title": "Unauthorized", "status": 401, "detail": "No client has this token.", "error": "unauthorized"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/admin/deadletters" {
			json.NewEncoder(w).Encode(map[string]any{"deadLetters": []any{}})
			return
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Query().Get("cursor"), "p"))
		s.served++
		if n+1 < s.pages {
			json.NewEncoder(w).Encode(map[string]any{"orders": []any{}, "cursor": "p" + strconv.Itoa(n+1)})
			return
		}
		s.lastServed = true
		json.NewEncoder(w).Encode(map[string]any{"orders": s.last})
	})
	return mux
}

// TestOpsPageReadsEveryPageBeforeSayingNothingNeedsAttention: a listing
// of more pages than one refresh reads (41 clients at 8 shards is 11
// pages of 32 objects): the page goes on from the cursor until the last
// page, shows the key found there, and says "Nothing needs attention"
// only once every page was read. And a token refused under the order
// path's challenge (API_TOKENS set, ADMIN_TOKENS not) says the admin API
// is off, not that the token was refused.
func TestOpsPageReadsEveryPageBeforeSayingNothingNeedsAttention(t *testing.T) {
	requireWorker(t)
	chromium := chromiumPath(t)
	t.Parallel()
	browser := startChromium(t, chromium)
	const token, pages = "paging-admin-token-0123456789", 25
	t.Run("a key on the last page is shown", func(t *testing.T) {
		stub := &pagingAdmin{token: token, realm: "edge-orders-admin", pages: pages, last: []any{map[string]any{"client": "desk-41", "key": "late-key",
			"state": "unresolved", "orderId": "0a6b3f1e-2d4c-4b5a-9e8f-7c6d5e4f3a2b", "order": map[string]any{"symbol": "IBM", "side": "buy", "quantity": 1},
			"acceptedAt": "2026-11-24T05:00:00.000Z", "attempts": 3}}}
		p := openOps(t, browser, serveLoopback(t, stub.handler())+"/ops/", artifactsDir(t), "ops-paging-key")
		p.signIn(token)
		p.waitRow("desk-41", "late-key", 20*time.Second, "unresolved")
		if got := p.text("count-unresolved"); got != "1" {
			t.Errorf("unresolved count %q, want 1", got)
		}
		p.wantNothingRan()
	})
	t.Run("nothing needs attention only after the last page", func(t *testing.T) {
		stub := &pagingAdmin{token: token, realm: "edge-orders-admin", pages: pages}
		p := openOps(t, browser, serveLoopback(t, stub.handler())+"/ops/", artifactsDir(t), "ops-paging-empty")
		p.signIn(token)
		// Watch #empty from inside the page, so that no moment is missed:
		// the first time it shows, the page must have read every page.
		eval[bool](p.tab, `new MutationObserver(() => {
			if (!document.getElementById("empty").hidden && window.emptyAfter === undefined) {
				window.emptyAfter = performance.getEntriesByType("resource").filter((e) => e.name.includes("/admin/orders")).length;
			}
		}).observe(document.getElementById("empty"), { attributes: true }); true`)
		p.waitFor(`!document.getElementById("empty").hidden`, 20*time.Second)
		stub.mu.Lock()
		served, last := stub.served, stub.lastServed
		stub.mu.Unlock()
		if !last || served < pages {
			t.Errorf(`"Nothing needs attention" shown after %d list pages, before the last of %d`, served, pages)
		}
		if seen := eval[float64](p.tab, `window.emptyAfter ?? -1`); seen >= 0 && seen < pages {
			t.Errorf(`"Nothing needs attention" first shown after %v list requests, want %d`, seen, pages)
		}
	})
	t.Run("a token refused by a Worker without the admin API says the API is off", func(t *testing.T) {
		stub := &pagingAdmin{token: token, realm: "edge-orders", pages: 1}
		p := openOps(t, browser, serveLoopback(t, stub.handler())+"/ops/", artifactsDir(t), "ops-paging-off")
		p.signIn("some-admin-token-0123456789")
		p.waitFor(`!document.getElementById("login").hidden && !document.getElementById("problem").hidden`, 10*time.Second)
		if _, title, _ := p.problem(); !strings.Contains(title, "admin API is off") || strings.Contains(title, "Token refused") {
			t.Errorf("problem title %q, want that the admin API is off", title)
		}
	})
}
