// Package config reads the Worker's settings from its environment, with
// their defaults, and refuses values that would fail later, naming the
// variable.
package config

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/eventlog"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/jsjson"
)

// Names of the variables, as set in wrangler.toml [vars] or as secrets.
const (
	StorageVar         = "STORAGE"
	ResultTTLVar       = "RESULT_TTL_SECONDS"
	PendingTTLVar      = "PENDING_TTL_SECONDS"
	WaitVar            = "IN_PROGRESS_WAIT_MS"
	LedgerShardsVar    = "LEDGER_SHARDS"
	KVFallbackUntilVar = "KV_FALLBACK_UNTIL"
	LogLevelVar        = "LOG_LEVEL"
	TokensVar          = "API_TOKENS"
	// AdminTokensVar holds the admin API's named tokens, as API_TOKENS
	// holds the clients'.
	AdminTokensVar = "ADMIN_TOKENS"
	// ClaimAfterReceiptVar says what KV mode does with a claim once the
	// receipt is stored.
	ClaimAfterReceiptVar = "KV_CLAIM_AFTER_RECEIPT"
	OMSURLVar            = "OMS_URL"
	OMSTimeoutVar        = "OMS_TIMEOUT_MS"
	OMSTokenVar          = "OMS_TOKEN"
	// SettleMaxAgeVar is how long the settler calls the gateway for an
	// order whose outcome is unknown, in seconds from its acceptance.
	SettleMaxAgeVar = "SETTLE_MAX_AGE_SECONDS"
	// SweepGraceVar is how long past its due time KV mode's sweep takes a
	// key's settle message for lost, in seconds.
	SweepGraceVar = "SETTLE_SWEEP_GRACE_SECONDS"
	// KVReadLagVar is how long, in seconds, a KV read may miss a write:
	// KV mode's settler checks a give-up twice this long after its last
	// call before it raises the alert.
	KVReadLagVar = "KV_READ_LAG_SECONDS"
	// AllowedOriginsVar lists the origins whose pages may call the Worker
	// from a browser (CORS), comma-separated.
	AllowedOriginsVar = "ALLOWED_ORIGINS"
	// OpenAccessVar, "true", lets a Worker without API_TOKENS take orders
	// from anyone, as the reference does; unset or "false", a Worker
	// without API_TOKENS takes them from no one. It is never inferred:
	// make dev and the tests set it.
	OpenAccessVar = "OPEN_ACCESS"
	// DeadLetterQueueVar names the dead-letter queue, as wrangler.toml
	// creates it: the Worker consumes it too, and tells its messages from
	// the settle queue's by this name.
	DeadLetterQueueVar = "DEAD_LETTER_QUEUE"
	// AlertURLVar is where the Worker pages an operator (PagerDuty's
	// Events API v2, https://events.pagerduty.com/v2/enqueue, or a
	// stand-in), and AlertRoutingKeyVar the PagerDuty service's
	// integration key: both secrets, set together or not at all.
	AlertURLVar        = "ALERT_WEBHOOK_URL"
	AlertRoutingKeyVar = "ALERT_ROUTING_KEY"
)

// Values of KV_CLAIM_AFTER_RECEIPT.
const (
	// ClaimRelease deletes the claim after the response, as the reference
	// does: check, claim, write, release.
	ClaimRelease = "release"
	// ClaimExpire leaves it to expire with its lease: one billed KV write
	// fewer per order, and a claim still seen where the receipt has not yet
	// arrived keeps other locations from placing the order again.
	ClaimExpire = "expire"
)

// Storage modes, the values of STORAGE.
const (
	// StorageKV keeps claims and receipts in Workers KV, as the reference does.
	StorageKV = "kv"
	// StorageLedger keeps them in the Durable Object ledger.
	StorageLedger = "ledger"
)

// Defaults, for variables that are not set.
const (
	DefaultStorage = StorageKV
	// DefaultSweepGrace gives a settle message a minute past its due time
	// before the sweep takes it for lost.
	DefaultSweepGrace = time.Minute
	// DefaultKVReadLag is Cloudflare's figure for KV: a read may miss a
	// write for 60 seconds or more. Lower it only where reads are exact
	// (wrangler dev's local KV), to raise an unresolved alert sooner.
	DefaultKVReadLag = 60 * time.Second
	// DefaultResultTTL keeps a receipt replayable for a day of client retries.
	DefaultResultTTL = 24 * time.Hour
	// DefaultPendingTTL is the shortest claim KV accepts: a claim whose holder
	// died mid-request unblocks its key after this long.
	DefaultPendingTTL = MinTTL
	// DefaultWait lets a duplicate wait out a request in flight, which
	// takes well under a second, instead of being told to come back.
	DefaultWait = 2 * time.Second
	// ledgerOpenClient is the name the ledger's objects give the open
	// Worker's keys, which no client may have (ledger.ObjectName).
	ledgerOpenClient = "open"
	// DefaultLedgerShards spreads each client's keys over this many ledger
	// objects.
	DefaultLedgerShards = 8
	// DefaultLogLevel logs every order placed and every error, not replays.
	DefaultLogLevel = eventlog.Orders
	// DefaultDeadLetterQueue is the dead-letter queue wrangler.toml
	// creates.
	DefaultDeadLetterQueue = "edge-orders-settle-dlq"
	// DefaultOMSTimeout is long for an OMS that answers in milliseconds and
	// far under the claim lease, so a slow gateway never outlives its claim.
	DefaultOMSTimeout = 5 * time.Second
)

// Bounds on the settings that have no limit of their own elsewhere.
const (
	maxTTL          = 10 * 365 * 24 * time.Hour
	maxWait         = 30 * time.Second
	maxLedgerShards = 1024
	// maxOMSTimeout keeps a gateway call inside the 30 s that waitUntil
	// gives a request whose client went away.
	maxOMSTimeout = 20 * time.Second
	// maxQueueNameBytes is the longest name Cloudflare Queues gives a queue.
	maxQueueNameBytes = 63
)

// Config is the Worker's configuration.
type Config struct {
	// Storage is StorageKV or StorageLedger.
	Storage    string
	ResultTTL  time.Duration
	PendingTTL time.Duration
	// SettleMaxAge is how long the settler tries an order whose outcome
	// is unknown before it leaves the key unresolved.
	SettleMaxAge time.Duration
	// SweepGrace is how long past its due time KV mode's sweep takes a
	// key's settle message for lost.
	SweepGrace time.Duration
	// KVReadLag is how long a KV read may miss a write (KVReadLagVar).
	KVReadLag time.Duration
	// Wait is how long a duplicate waits for a request in flight.
	Wait time.Duration
	// LedgerShards is how many ledger objects each client's keys spread over.
	LedgerShards int
	// KVFallbackUntil, in ledger mode, is when the ledger stops looking up
	// KV for receipts stored before the switch; zero means never look.
	KVFallbackUntil time.Time
	// LogLevel says which request lines are logged.
	LogLevel eventlog.Level
	// Clients holds the API clients; nil means the Worker runs open, without
	// authentication, as the reference does.
	Clients *auth.Clients
	// Admins holds the admin API's tokens, by name; nil turns the admin
	// API off: /admin/ paths are then answered as any other path.
	Admins *auth.Clients
	// ReleaseClaims, in KV mode, deletes each claim once its receipt is
	// stored (ClaimRelease); false leaves it to expire (ClaimExpire).
	ReleaseClaims bool
	// OMSURL is the gateway's URL; empty means the stand-in, unless an OMS
	// service binding is bound.
	OMSURL string
	// OMSTimeout bounds each gateway call.
	OMSTimeout time.Duration
	// OMSToken, if set, is sent to the gateway as a bearer token.
	OMSToken string
	// AllowedOrigins are the exact origins, as browsers send them, whose
	// pages may call the Worker; nil turns CORS off.
	AllowedOrigins []string
	// OpenAccess, with no Clients, serves anyone; false, with no Clients,
	// serves no one. Never true with Clients.
	OpenAccess bool
	// DeadLetterQueue is the name of the dead-letter queue the Worker
	// consumes (DeadLetterQueueVar).
	DeadLetterQueue string
	// AlertURL and AlertRoutingKey page an operator; empty pages no one
	// (the error-level log line stays).
	AlertURL, AlertRoutingKey string
}

// Error is a setting the Worker cannot run with. Its message names the
// variable and never quotes a secret.
type Error struct {
	Var    string
	Reason string
}

func (e *Error) Error() string { return e.Var + ": " + e.Reason }

// Load reads the configuration through lookup, which returns a variable's
// value and whether it is set. Unset variables take their defaults. It
// returns an *Error for the first variable that cannot work, in the order
// of the constants above.
func Load(lookup func(name string) (string, bool)) (Config, error) {
	c := Config{
		Storage:         DefaultStorage,
		ResultTTL:       DefaultResultTTL,
		PendingTTL:      DefaultPendingTTL,
		Wait:            DefaultWait,
		LedgerShards:    DefaultLedgerShards,
		LogLevel:        DefaultLogLevel,
		ReleaseClaims:   true,
		OMSTimeout:      DefaultOMSTimeout,
		SettleMaxAge:    intake.DefaultSettleMaxAge,
		SweepGrace:      DefaultSweepGrace,
		KVReadLag:       DefaultKVReadLag,
		DeadLetterQueue: DefaultDeadLetterQueue,
	}
	settings := []struct {
		name  string
		parse func(string) error
	}{
		{StorageVar, func(v string) (err error) { c.Storage, err = parseStorage(v); return }},
		{ResultTTLVar, func(v string) (err error) { c.ResultTTL, err = parseTTL(v); return }},
		{PendingTTLVar, func(v string) (err error) { c.PendingTTL, err = parseTTL(v); return }},
		{WaitVar, func(v string) (err error) { c.Wait, err = parseWait(v); return }},
		{LedgerShardsVar, func(v string) (err error) { c.LedgerShards, err = parseShards(v); return }},
		{KVFallbackUntilVar, func(v string) (err error) { c.KVFallbackUntil, err = parseTime(v); return }},
		{LogLevelVar, func(v string) (err error) { c.LogLevel, err = parseLogLevel(v); return }},
		{TokensVar, func(v string) (err error) {
			if strings.TrimSpace(v) != "" {
				c.Clients, err = auth.Parse(v)
			}
			return
		}},
		{AdminTokensVar, func(v string) (err error) {
			if strings.TrimSpace(v) != "" {
				c.Admins, err = auth.Parse(v)
			}
			return
		}},
		{ClaimAfterReceiptVar, func(v string) (err error) { c.ReleaseClaims, err = parseClaimAfterReceipt(v); return }},
		{OMSURLVar, func(v string) (err error) { c.OMSURL, err = parseURL(v); return }},
		{OMSTimeoutVar, func(v string) (err error) { c.OMSTimeout, err = parseOMSTimeout(v); return }},
		{OMSTokenVar, func(v string) (err error) { c.OMSToken, err = parseToken(v); return }},
		{SettleMaxAgeVar, func(v string) (err error) { c.SettleMaxAge, err = parseTTL(v); return }},
		{SweepGraceVar, func(v string) (err error) { c.SweepGrace, err = parseSeconds(v); return }},
		{KVReadLagVar, func(v string) (err error) { c.KVReadLag, err = parseSeconds(v); return }},
		{AllowedOriginsVar, func(v string) (err error) { c.AllowedOrigins, err = parseOrigins(v); return }},
		{OpenAccessVar, func(v string) (err error) { c.OpenAccess, err = parseBool(v); return }},
		{DeadLetterQueueVar, func(v string) (err error) { c.DeadLetterQueue, err = parseQueueName(v); return }},
		{AlertURLVar, func(v string) (err error) { c.AlertURL, err = parseAlertURL(v); return }},
		{AlertRoutingKeyVar, func(v string) (err error) { c.AlertRoutingKey, err = parseToken(v); return }},
	}
	for _, s := range settings {
		if v, ok := lookup(s.name); ok {
			if err := s.parse(v); err != nil {
				return Config{}, &Error{Var: s.name, Reason: err.Error()}
			}
		}
	}
	if c.Admins != nil && c.Clients != nil && c.Admins.SharesToken(c.Clients) {
		// Such a token would place orders and act as an admin.
		return Config{}, &Error{Var: AdminTokensVar, Reason: "a token is also a client's in " + TokensVar + ": give admins tokens of their own"}
	}
	if c.OpenAccess && c.Clients != nil {
		// Which one was meant is not for the Worker to guess.
		return Config{}, &Error{Var: OpenAccessVar, Reason: "is true, but " + TokensVar + " is set: a Worker with tokens is never open; remove one"}
	}
	if c.Storage == StorageLedger && c.Clients != nil && c.Clients.Has(ledgerOpenClient) {
		// The open Worker's ledger objects are open/<n>: a client of that
		// id would share them, and its key k the open Worker's key open:k.
		return Config{}, &Error{Var: TokensVar, Reason: `the client id "` + ledgerOpenClient + `" names the open Worker's ledger objects: give that client another id`}
	}
	if (c.AlertURL == "") != (c.AlertRoutingKey == "") {
		// Half a pager pages no one, and would fail every page at run time.
		return Config{}, &Error{Var: AlertURLVar, Reason: "and " + AlertRoutingKeyVar + " are set together or not at all"}
	}
	if c.PendingTTL > MaxSeconds*time.Second {
		// A lease is how long a request that died blocks its key, and
		// when a settler that found the key held looks again: a day is
		// far past any request, and keeps that look within the settle
		// queue's MaxDue.
		return Config{}, &Error{Var: PendingTTLVar, Reason: "a claim's " + strconv.FormatInt(int64(c.PendingTTL/time.Second), 10) +
			" seconds is over a day (" + strconv.Itoa(MaxSeconds) + ")"}
	}
	if c.PendingTTL > c.ResultTTL {
		// A claim that outlived its receipt would block a key that is
		// otherwise free, and expire after it.
		return Config{}, &Error{Var: PendingTTLVar, Reason: "a claim's " + strconv.FormatInt(int64(c.PendingTTL/time.Second), 10) +
			" seconds is over " + ResultTTLVar + "'s " + strconv.FormatInt(int64(c.ResultTTL/time.Second), 10)}
	}
	return c, nil
}

func parseBool(v string) (bool, error) {
	switch v = strings.TrimSpace(v); v {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, errors.New(strconv.Quote(v) + ` is neither "true" nor "false"`)
}

// parseQueueName reads a queue's name: 1 to maxQueueNameBytes
// characters, none a space or a control character.
func parseQueueName(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > maxQueueNameBytes || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", errors.New("a queue's name is 1 to " + strconv.Itoa(maxQueueNameBytes) + " characters, without spaces")
	}
	return v, nil
}

func parseClaimAfterReceipt(v string) (bool, error) {
	switch v = strings.TrimSpace(v); v {
	case ClaimRelease:
		return true, nil
	case ClaimExpire:
		return false, nil
	}
	return false, errors.New(strconv.Quote(v) + " is neither " + strconv.Quote(ClaimRelease) + " nor " + strconv.Quote(ClaimExpire))
}

// parseURL reads an absolute http or https URL; empty means none. It
// checks the form only: a gateway that cannot be reached is an unknown
// outcome for every order, which the log lines show. Its errors never
// quote the URL, which is shown in a public 500 and may carry a password;
// a URL that carries credentials is refused, since the token belongs in
// OMS_TOKEN, a secret.
func parseURL(v string) (string, error) {
	v, authority, err := absoluteURL(v)
	if err == nil && strings.Contains(authority, "@") {
		return "", errors.New("the URL carries credentials before its host: send them as " + OMSTokenVar + ", a secret, instead")
	}
	return v, err
}

// parseAlertURL reads ALERT_WEBHOOK_URL as parseURL does, credentials
// and all: it is a secret, never shown.
func parseAlertURL(v string) (string, error) {
	v, _, err := absoluteURL(v)
	return v, err
}

// absoluteURL reads an absolute http or https URL, trimmed, and returns
// it with its authority; empty means none. Its errors never quote it.
func absoluteURL(v string) (url, authority string, err error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", "", nil
	}
	rest, ok := strings.CutPrefix(v, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(v, "http://")
	}
	if !ok || rest == "" || rest[0] == '/' || strings.ContainsAny(v, " \t\r\n") {
		return "", "", errors.New("the URL is not an absolute http:// or https:// URL")
	}
	authority, _, _ = strings.Cut(rest, "/")
	return v, authority, nil
}

// parseToken reads OMS_TOKEN: one header value, so visible ASCII only. A
// space or a control character would split or end the Authorization
// header, and a character beyond ASCII is no header byte: fetch refuses
// it, or workerd warns on every call, quoting the value into the logs.
// Its errors never quote it.
func parseToken(v string) (string, error) {
	v = strings.TrimSpace(v)
	for _, r := range v {
		if r < 0x21 || r > 0x7e {
			return "", errors.New("the token holds a character other than visible ASCII (a space, a control character or a character beyond ASCII), which an Authorization header cannot carry")
		}
	}
	return v, nil
}

func parseOMSTimeout(v string) (time.Duration, error) {
	n, err := parseInt(v, "milliseconds")
	if err != nil {
		return 0, err
	}
	if n < 1 || n > int64(maxOMSTimeout/time.Millisecond) {
		return 0, errors.New(strconv.FormatInt(n, 10) + " milliseconds is not from 1 to " + strconv.FormatInt(int64(maxOMSTimeout/time.Millisecond), 10))
	}
	return time.Duration(n) * time.Millisecond, nil
}

func parseStorage(v string) (string, error) {
	switch v = strings.TrimSpace(v); v {
	case StorageKV, StorageLedger:
		return v, nil
	}
	return "", errors.New(strconv.Quote(v) + " is neither " + strconv.Quote(StorageKV) + " nor " + strconv.Quote(StorageLedger))
}

// parseTTL reads a whole number of seconds that KV accepts as
// expirationTtl. The ledger could take less, but one rule for both modes
// keeps a receipt alive at least as long as the instance caches it.
func parseTTL(v string) (time.Duration, error) {
	n, err := parseInt(v, "seconds")
	if err != nil {
		return 0, err
	}
	if n > int64(maxTTL/time.Second) {
		return 0, errors.New(strconv.FormatInt(n, 10) + " seconds is over ten years")
	}
	d := time.Duration(n) * time.Second
	if d < MinTTL {
		return 0, errors.New(strconv.FormatInt(n, 10) + " seconds is under the minimum of " + strconv.FormatInt(int64(MinTTL/time.Second), 10) +
			", the shortest expiration KV accepts")
	}
	return d, nil
}

// MinTTL is the shortest receipt TTL and claim lease the Worker takes:
// KV's minimum expirationTtl (kv.MinTTL; package app's tests keep the two
// equal), in both modes, so that a configuration moves between them.
const MinTTL = 60 * time.Second

func parseWait(v string) (time.Duration, error) {
	n, err := parseInt(v, "milliseconds")
	if err != nil {
		return 0, err
	}
	if n <= int64(maxWait/time.Millisecond) {
		return time.Duration(n) * time.Millisecond, nil
	}
	return 0, errors.New(strconv.FormatInt(n, 10) + " milliseconds is over the " + strconv.FormatInt(int64(maxWait/time.Second), 10) + " s a request may wait")
}

func parseShards(v string) (int, error) {
	n, err := parseInt(v, "objects")
	if err != nil {
		return 0, err
	}
	if n < 1 || n > maxLedgerShards {
		return 0, errors.New(strconv.FormatInt(n, 10) + " is not from 1 to " + strconv.Itoa(maxLedgerShards))
	}
	return int(n), nil
}

// parseTime reads an RFC 3339 time such as 2026-11-22T12:00:00Z; empty
// means never.
func parseTime(v string) (time.Time, error) {
	if v = strings.TrimSpace(v); v == "" {
		return time.Time{}, nil
	}
	t, ok := jsjson.ParseRFC3339(v)
	if !ok {
		return time.Time{}, errors.New(strconv.Quote(v) + " is not an RFC 3339 time such as 2026-11-22T12:00:00Z")
	}
	return t, nil
}

func parseLogLevel(v string) (eventlog.Level, error) {
	if l, ok := eventlog.LevelNames[strings.TrimSpace(v)]; ok {
		return l, nil
	}
	names := slices.Sorted(maps.Keys(eventlog.LevelNames))
	return 0, errors.New(strconv.Quote(v) + " is not one of " + strings.Join(names, ", "))
}

// parseInt reads a non-negative whole number of unit.
func parseInt(v, unit string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New(strconv.Quote(v) + " is not a whole number of " + unit)
	}
	return n, nil
}

// MaxSeconds is the most a setting read in seconds (parseSeconds) may
// say: a day.
const MaxSeconds = 86400

// parseSeconds reads a whole number of seconds, at least 1 and at most
// MaxSeconds.
func parseSeconds(v string) (time.Duration, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > MaxSeconds {
		return 0, errors.New("must be a whole number of seconds from 1 to " + strconv.Itoa(MaxSeconds))
	}
	return time.Duration(n) * time.Second, nil
}

// parseOrigins reads ALLOWED_ORIGINS: exact origins, comma-separated,
// each written as a browser sends it in the Origin header
// (scheme://host[:port], lowercase, no default port, no path), since the
// Worker compares them byte for byte. Empty means none: CORS is off.
//
// "*" is refused, and so is "null". A trading Worker's browser callers are
// the front-ends its operator runs, and a list of them is what to audit.
// With "*", any page on the web could make its visitors' browsers send
// orders: with API tokens, any page holding a token (a copied front-end on
// another domain); without them, any page at all, each visitor under the
// rate limit of their own address. Today the preflight that every request
// with an Idempotency-Key needs keeps all of them out. "null" is the
// origin of every sandboxed frame and file: page, so it would let anyone
// in too.
func parseOrigins(v string) ([]string, error) {
	var list []string
	for _, origin := range strings.Split(v, ",") {
		origin = strings.TrimSpace(origin)
		if origin == "" {
			continue
		}
		if err := checkOrigin(origin); err != nil {
			return nil, err
		}
		if !slices.Contains(list, origin) {
			list = append(list, origin)
		}
	}
	return list, nil
}

// checkOrigin says why origin is not one a browser would send, if it is not.
func checkOrigin(origin string) error {
	quoted := strconv.Quote(origin)
	switch origin {
	case "*":
		return errors.New(`"*" is not allowed: list each origin whose pages may call the Worker, such as https://desk.example.com`)
	case "null":
		return errors.New(`"null" is not allowed: it is the origin of every sandboxed frame and file: page`)
	}
	scheme, rest, ok := strings.Cut(origin, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return errors.New(quoted + " is not an http:// or https:// origin, such as https://desk.example.com")
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return errors.New(quoted + " has a path: an origin is scheme://host[:port], such as " + scheme + "://" + rest[:i])
	}
	if strings.Contains(rest, "@") {
		return errors.New(quoted + " has a user name: an origin is scheme://host[:port]")
	}
	host, port := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.HasSuffix(rest, "]") {
		host, port = rest[:i], rest[i+1:]
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return errors.New(quoted + " has no valid port after the colon")
		}
		if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
			return errors.New(quoted + " names its scheme's default port, which browsers leave out: write " + scheme + "://" + host)
		}
	}
	if host == "" {
		return errors.New(quoted + " has no host")
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1] // an IPv6 address
		if host == "" || strings.Trim(host, "0123456789abcdef:.") != "" {
			return errors.New(quoted + " is not an IPv6 address in lowercase hex between brackets")
		}
		return nil
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
		case c >= 'A' && c <= 'Z':
			return errors.New(quoted + " has capitals, which browsers never send: write " + scheme + "://" + strings.ToLower(rest))
		default:
			return errors.New(quoted + " has " + strconv.QuoteRune(rune(c)) + " in its host: write an international name in its xn-- form, as browsers send it")
		}
	}
	return nil
}
