package httpapi

import (
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/config"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/workers"
)

// PolicyPath is where the Worker publishes its idempotency policy, as the
// IETF Idempotency-Key draft asks a server to.
const PolicyPath = "/idempotency"

// policyContent is Markdown (RFC 7763): plain text a person reads as it
// comes, in curl or a browser, whose headings and lists a tool can parse,
// with no markup to escape. HTML would need both a template and escaping,
// and reads badly as text.
var policyContent = workers.Field{Name: "Content-Type", Value: "text/markdown; charset=utf-8"}

// policyCache lets a browser keep the page but ask again each time: the
// figures change with the configuration, at any deploy.
var policyCache = workers.Field{Name: "Cache-Control", Value: "no-cache"}

// policyResponse answers GET PolicyPath with page.
func policyResponse(page []byte) *workers.Response {
	return &workers.Response{Status: statusOK, Header: []workers.Field{policyContent, policyCache, noSniff}, Body: page}
}

// policyPage is the published policy: the key's format, and what a client
// gets under it, with the figures p holds, which are those the Service
// runs with. scoped says whether keys are scoped to API clients.
func policyPage(p intake.Policy, scoped bool) []byte {
	var b strings.Builder
	// Each paragraph and item is one line: Markdown joins none, and a
	// reader's screen wraps it.
	line := func(parts ...string) {
		for _, s := range parts {
			b.WriteString(s)
		}
		b.WriteByte('\n')
	}
	item := func(parts ...string) { line(append([]string{"- "}, parts...)...) }
	retryAfter := strconv.Itoa(int(p.PendingTTL / time.Second))
	resultTTL := figure(p.ResultTTL, config.ResultTTLVar)
	settleMaxAge := figure(p.SettleMaxAge, config.SettleMaxAgeVar)

	line("# Idempotency policy")
	line()
	line("This Worker places each order at most once per `Idempotency-Key` request header, ",
		"as the IETF draft draft-ietf-httpapi-idempotency-key-header-07 describes. ",
		"The figures below are its running configuration. ",
		"Every problem about the key links here: `Link: ", describedByLink(PolicyPath), "`.")
	line()
	line("## The key")
	line()
	item("Send every order (`POST`) with an `Idempotency-Key`, and repeat it unchanged on every retry of that order; ",
		"a new order needs a new key. A `GET` with the key looks its outcome up and places nothing.")
	item("A key is 1 to ", strconv.Itoa(MaxIdempotencyKeyBytes), " printable ASCII characters (0x20 to 0x7E), such as a UUID.")
	item("The header holds one key, a Structured Field string: `\"abc\"`, with `\\\"` and `\\\\` escapes, is the same key as `abc`. ",
		"A key with a comma must be quoted. A list of keys, or the header sent twice, is refused.")
	if scoped {
		item("Keys belong to the client whose API token sent them: two clients never share a key.")
	} else {
		item("This Worker runs without API tokens: every caller shares one space of keys.")
	}
	item("A missing key is answered `400 missing_idempotency_key`, an invalid one `400 invalid_idempotency_key`.")
	line()
	line("## How long outcomes are kept")
	line()
	kvLimits := p.ReadsLag > 0
	but := ""
	if kvLimits {
		but = " (but see [KV's limits](#kvs-limits))"
	}
	item("An order's outcome (its receipt, or the order-management system's rejection) is kept ", resultTTL, " after it is stored. ",
		"Until then a retry of the same order under the key gets it again, byte for byte", but, ", with `Idempotent-Replay: true`, ",
		"and a lookup finds it. After that the key is free, and names a new order.")
	if p.Settles {
		item("With an order-management system, as here, every key is kept at least until its order's `acceptedAt` plus ",
			settleMaxAge, " plus ", resultTTL, ", ", human(p.SettleMaxAge+p.ResultTTL), " in all, whatever its outcome: ",
			"a key whose outcome is unknown keeps its `orderId` while the Worker may still ask about it, and for that long after. ",
			"Each later attempt under the key (a retry, or the Worker's own) keeps it as long again from its own time.")
	}
	if p.TellsExpiry {
		item("A lookup that finds an outcome says when it expires, in the `Idempotency-Expires` response header.")
	} else {
		item("A lookup does not say when an outcome expires: this Worker's store does not tell.")
	}
	line()
	line("## A duplicate of a request in flight")
	line()
	if p.Wait > 0 {
		item("While a request holds the key, a duplicate waits up to ", strconv.FormatInt(p.Wait.Milliseconds(), 10),
			" ms (`", config.WaitVar, "`) for its outcome, and then gets it as a replay. ",
			"If the outcome does not come within that wait, the duplicate gets `409 in_progress` with `Retry-After: ", retryAfter,
			"` (`", config.PendingTTLVar, "`, the longest a request that died holds the key).")
	} else {
		item("While a request holds the key, a duplicate gets `409 in_progress` at once (`", config.WaitVar, "` is 0), ",
			"with `Retry-After: ", retryAfter, "` (`", config.PendingTTLVar, "`, the longest a request that died holds the key).")
	}
	item("Retry under the same key: sooner than `Retry-After`, with backoff, is fine.")
	line()
	line("## A key reused for another order")
	line()
	item("An order under a key already used for a different order (another symbol, side or quantity, however the JSON is written) ",
		"gets `422 idempotency_key_reused`", but, ", and nothing of the key's outcome. Use a new key.")
	line()
	line("## An unknown outcome")
	line()
	switch {
	case p.Settles && p.SettlerRuns:
		item("When the order-management system's answer is lost (a timeout, a dropped connection, a 5xx), the order may or may not exist: ",
			"the key gets `503 outcome_unknown`, with the `orderId` it keeps, the `attempts` so far and `nextAttemptAt`, ",
			"and `Retry-After` until then. The Worker asks the order-management system again by itself, with the same `orderId`, ",
			"until it answers for good; a retry under the key does the same. Neither places a second order.")
		item("If it has not answered for good ", settleMaxAge, " after the order's acceptance, the Worker stops asking: ",
			"`503 outcome_unresolved`. The key keeps its `orderId` for another ", resultTTL, "; ",
			"reconcile with the order-management system. A retry under the key still asks it, with the same `orderId`.")
	case p.Settles:
		item("When the order-management system's answer is lost (a timeout, a dropped connection, a 5xx), the order may or may not exist: ",
			"the key gets `503 outcome_unknown`, with the `orderId` it keeps and the `attempts` so far, and a `Retry-After`. ",
			"This Worker does not ask again by itself: retry under the key, which asks the order-management system again ",
			"with the same `orderId` and never places a second order.")
	default:
		text := "This Worker has no order-management system configured: it accepts every order at once. " +
			"If the receipt cannot be stored after that, the key gets `503 outcome_unknown` until "
		if p.SettlerRuns {
			text += "the Worker stores it by itself or "
		}
		item(text, "a retry under the key stores it, with the same `orderId`; it never places a second order.")
	}
	if kvLimits {
		kvSection(line, item, p)
	}
	return []byte(b.String())
}

// kvSection states what KV mode does not promise, in the terms of
// docs/operating.md ("What KV mode promises, exactly"): for every key in
// KV mode, and during a migration for the keys still held in KV.
func kvSection(line func(...string), item func(...string), p intake.Policy) {
	lag := strconv.FormatInt(int64(p.ReadsLag/time.Second), 10) + " seconds"
	line()
	line("## KV's limits")
	line()
	if p.FallbackUntil.IsZero() {
		line("This Worker keeps its keys in Workers KV, which has no compare-and-swap and whose reads may miss a write for ",
			lag, " or more, in any location. So:")
	} else {
		line("This Worker keeps its keys in a Durable Object, where none of this applies, but until ", p.FallbackUntil.UTC().Format(time.RFC3339),
			" it also reads the keys an earlier version kept in Workers KV, which has no compare-and-swap and whose reads may miss a write for ",
			lag, " or more. For a key first used before the move, until it is next used here:")
	}
	item("Always: one `orderId` per key and order; no order placed for a request that was refused; ",
		"no receipt for an order the order-management system did not accept; no answer about another order than the one its client sent.")
	item("After a request's read missed another's claim or receipt of the key, or two requests claimed it in the same moment: ",
		"a replay of the same order may carry another `acceptedAt` than the 201 gave (the same `orderId`, the same order); ",
		"a second, different order under the key may be placed, instead of `422 idempotency_key_reused`, ",
		"and the key end with either order's outcome.")
}

// figure is d as configured: seconds and the var's name, with the time a
// person reads, as "86400 seconds (24 hours, `RESULT_TTL_SECONDS`)".
func figure(d time.Duration, name string) string {
	return strconv.FormatInt(int64(d/time.Second), 10) + " seconds (" + human(d) + ", `" + name + "`)"
}

// human is d in its largest whole unit: "24 hours", "90 minutes", "1 second".
func human(d time.Duration) string {
	n, unit := int64(d/time.Millisecond), "millisecond"
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if d%u.d == 0 {
			n, unit = int64(d/u.d), u.name
			break
		}
	}
	if n != 1 {
		unit += "s"
	}
	return strconv.FormatInt(n, 10) + " " + unit
}
