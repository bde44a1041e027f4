package config_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/config"
)

// The variable names are the contract with wrangler.toml and the secrets:
// written out here so that a rename fails a test.
const (
	resultVar  = "RESULT_TTL_SECONDS"
	pendingVar = "PENDING_TTL_SECONDS"
	tokensVar  = "API_TOKENS"
)

// env is a lookup over a map: a name missing from it is unset.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestLoadDefaults(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
	}{
		{"nothing set takes the defaults", nil},
		{"unrelated variables take the defaults", map[string]string{"ORDERS": "x", "result_ttl_seconds": "5"}},
		{"blank API_TOKENS runs open", map[string]string{tokensVar: ""}},
		{"white-space API_TOKENS runs open", map[string]string{tokensVar: " \n\t "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(tc.vars))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got, want := c.ResultTTL, 86400*time.Second; got != want {
				t.Errorf("ResultTTL = %v, want %v", got, want)
			}
			if got, want := c.PendingTTL, 60*time.Second; got != want {
				t.Errorf("PendingTTL = %v, want %v", got, want)
			}
			if c.Clients != nil {
				t.Errorf("Clients = %d clients, want nil (open)", c.Clients.Len())
			}
		})
	}
}

func TestLoadOverrides(t *testing.T) {
	tests := []struct {
		name        string
		vars        map[string]string
		wantResult  time.Duration
		wantPending time.Duration
	}{
		{"a result TTL of 120 is read", map[string]string{resultVar: "120"}, 120 * time.Second, 60 * time.Second},
		{"a result TTL with spaces is read", map[string]string{resultVar: " 3600 "}, 3600 * time.Second, 60 * time.Second},
		{"a pending TTL of 120 is read", map[string]string{pendingVar: "120"}, 86400 * time.Second, 120 * time.Second},
		{"a pending TTL with spaces is read", map[string]string{pendingVar: " 3600 "}, 86400 * time.Second, 3600 * time.Second},
		{"both are read", map[string]string{resultVar: "7200", pendingVar: "90"}, 7200 * time.Second, 90 * time.Second},
		{"KV's minimum of 60 is read", map[string]string{resultVar: "60", pendingVar: "60"}, 60 * time.Second, 60 * time.Second},
		{"exactly ten years is read", map[string]string{resultVar: "315360000"}, 315360000 * time.Second, 60 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(tc.vars))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := c.ResultTTL; got != tc.wantResult {
				t.Errorf("ResultTTL = %v, want %v", got, tc.wantResult)
			}
			if got := c.PendingTTL; got != tc.wantPending {
				t.Errorf("PendingTTL = %v, want %v", got, tc.wantPending)
			}
		})
	}
}

// wantConfigError checks err is a *config.Error for name whose message names
// it, and returns it.
func wantConfigError(t *testing.T, err error, name string) *config.Error {
	t.Helper()
	var cerr *config.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("Load error = %v (%T), want a *config.Error", err, err)
	}
	if cerr.Var != name {
		t.Errorf("Var = %q, want %q", cerr.Var, name)
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("error %q does not name %s", err, name)
	}
	return cerr
}

func TestLoadRefusesTTL(t *testing.T) {
	tests := []struct {
		name  string
		value string
	}{
		{"59 is under KV's minimum", "59"},
		{"0 is under KV's minimum", "0"},
		{"a negative TTL is refused", "-5"},
		{"letters are refused", "abc"},
		{"a fraction is refused", "1.5"},
		{"empty is refused", ""},
		{"white space is refused", "  "},
		{"a unit is refused", "60s"},
		{"a Go duration is refused", "1h"},
		{"one second over ten years is refused", "315360001"},
		{"far over ten years is refused", "9223372036854775807"},
		{"beyond int64 is refused", "99999999999999999999"},
	}
	for _, name := range []string{resultVar, pendingVar} {
		for _, tc := range tests {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				c, err := config.Load(env(map[string]string{name: tc.value}))
				if err == nil {
					t.Fatalf("Load(%s=%q) = %+v, want an error", name, tc.value, c)
				}
				wantConfigError(t, err, name)
				if !reflect.DeepEqual(c, config.Config{}) {
					t.Errorf("Load returned %+v with its error, want the zero Config", c)
				}
			})
		}
	}
}

// TestLoadFirstErrorWins checks the error names the first variable that
// cannot work, in the documented order.
func TestLoadFirstErrorWins(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		wantVar string
	}{
		{"the result TTL comes first", map[string]string{resultVar: "1", pendingVar: "1", tokensVar: "x"}, resultVar},
		{"the pending TTL comes before the tokens", map[string]string{pendingVar: "1", tokensVar: "x"}, pendingVar},
		{"the tokens come last", map[string]string{resultVar: "120", tokensVar: "x"}, tokensVar},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load(env(tc.vars))
			wantConfigError(t, err, tc.wantVar)
		})
	}
}

func TestLoadTokens(t *testing.T) {
	const alice, bob = "alice-tok-0123456789abcdef", "bob-tok-ZYXWVUTSRQ987654"
	c, err := config.Load(env(map[string]string{tokensVar: "alice:" + alice + "\nbob:" + bob + "\n"}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Clients == nil || c.Clients.Len() != 2 {
		t.Fatalf("Clients = %v, want alice and bob", c.Clients)
	}
	for token, want := range map[string]string{alice: "alice", bob: "bob"} {
		if got, err := c.Clients.Authenticate("Bearer " + token); err != nil || got != want {
			t.Errorf("Authenticate(%s's token) = %q, %v; want %q", want, got, err, want)
		}
	}
}

func TestLoadRefusesTokens(t *testing.T) {
	const token = "s3cret-tok-0123456789abcdef"
	tests := []struct {
		name  string
		value string
	}{
		{"a token without an id is refused", token},
		{"a short token is refused", "alice:s3cret-short"},
		{"a bad id is refused", "al/ice:" + token},
		{"a token with a control character is refused", "alice:" + token + "\x01"},
		{"a duplicate id is refused", "alice:" + token + ",alice:" + token + "x"},
		{"a duplicate token is refused", "alice:" + token + ",bob:" + token},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(map[string]string{tokensVar: tc.value}))
			if err == nil {
				t.Fatalf("Load(%s=...) = %+v, want an error", tokensVar, c)
			}
			cerr := wantConfigError(t, err, tokensVar)
			for _, secret := range []string{token, "s3cret"} {
				if strings.Contains(err.Error(), secret) || strings.Contains(cerr.Reason, secret) {
					t.Errorf("error %q quotes the token text %q", err, secret)
				}
			}
			if c.Clients != nil {
				t.Errorf("Clients = %d clients with an error, want nil", c.Clients.Len())
			}
		})
	}
}

// TestPendingTTLOverResultTTLIsRefused: a claim must not outlive the
// receipt it guards, or the key would be blocked after its receipt is gone.
func TestPendingTTLOverResultTTLIsRefused(t *testing.T) {
	_, err := config.Load(env(map[string]string{resultVar: "120", pendingVar: "121"}))
	var cerr *config.Error
	if !errors.As(err, &cerr) || cerr.Var != pendingVar || !strings.Contains(cerr.Reason, "RESULT_TTL_SECONDS") {
		t.Fatalf("Load = %v, want an error naming %s and RESULT_TTL_SECONDS", err, pendingVar)
	}
	if _, err := config.Load(env(map[string]string{resultVar: "120", pendingVar: "120"})); err != nil {
		t.Fatalf("equal TTLs: %v", err)
	}
}

// TestTheOpenWorkersLedgerNameIsNoClients: in ledger mode the open
// Worker's objects are open/<n>; a client of that id would share them,
// and an operator's purge of its key k would act on the open Worker's
// key open:k (found by a review). KV mode names no objects.
func TestTheOpenWorkersLedgerNameIsNoClients(t *testing.T) {
	tokens := "open:0123456789abcdef0123, desk-a:fedcba9876543210fedc"
	_, err := config.Load(env(map[string]string{"STORAGE": "ledger", tokensVar: tokens}))
	var cerr *config.Error
	if !errors.As(err, &cerr) || cerr.Var != tokensVar || !strings.Contains(cerr.Reason, `"open"`) || strings.Contains(cerr.Reason, "0123456789abcdef") {
		t.Fatalf("Load in ledger mode with a client named open = %v, want an error naming %s and the id, no token", err, tokensVar)
	}
	if _, err := config.Load(env(map[string]string{"STORAGE": "kv", tokensVar: tokens})); err != nil {
		t.Fatalf("Load in KV mode with a client named open = %v, want it taken", err)
	}
	if _, err := config.Load(env(map[string]string{"STORAGE": "ledger", tokensVar: "opener:0123456789abcdef0123"})); err != nil {
		t.Fatalf("Load in ledger mode with a client named opener = %v, want it taken", err)
	}
}

func TestGatewayAndClaimSettings(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		want    func(c config.Config) bool
		wantVar string // the variable refused; "" for none
	}{
		{"defaults: the stand-in, 5 s, claims released", nil,
			func(c config.Config) bool {
				return c.OMSURL == "" && c.OMSTimeout == 5*time.Second && c.ReleaseClaims && c.OMSToken == ""
			}, ""},
		{"an https URL is read", map[string]string{"OMS_URL": " https://oms.example/orders "},
			func(c config.Config) bool { return c.OMSURL == "https://oms.example/orders" }, ""},
		{"an http URL on loopback is read", map[string]string{"OMS_URL": "http://127.0.0.1:9000/orders"},
			func(c config.Config) bool { return c.OMSURL == "http://127.0.0.1:9000/orders" }, ""},
		{"a URL without a scheme is refused", map[string]string{"OMS_URL": "oms.example/orders"}, nil, "OMS_URL"},
		{"a URL without a host is refused", map[string]string{"OMS_URL": "https:///orders"}, nil, "OMS_URL"},
		{"a ftp URL is refused", map[string]string{"OMS_URL": "ftp://oms.example"}, nil, "OMS_URL"},
		{"a URL with credentials is refused", map[string]string{"OMS_URL": "https://desk:s3cret@oms.example/orders"}, nil, "OMS_URL"},
		{"a token with a newline is refused", map[string]string{"OMS_TOKEN": "t0k\r\nX-Injected: 1"}, nil, "OMS_TOKEN"},
		{"a token with a NUL is refused", map[string]string{"OMS_TOKEN": "t0k\x00"}, nil, "OMS_TOKEN"},
		{"a timeout is read in ms", map[string]string{"OMS_TIMEOUT_MS": "250"},
			func(c config.Config) bool { return c.OMSTimeout == 250*time.Millisecond }, ""},
		{"a zero timeout is refused", map[string]string{"OMS_TIMEOUT_MS": "0"}, nil, "OMS_TIMEOUT_MS"},
		{"a timeout past waitUntil's reach is refused", map[string]string{"OMS_TIMEOUT_MS": "20001"}, nil, "OMS_TIMEOUT_MS"},
		{"a token is read", map[string]string{"OMS_TOKEN": "t0k"}, func(c config.Config) bool { return c.OMSToken == "t0k" }, ""},
		{"claims left to expire", map[string]string{"KV_CLAIM_AFTER_RECEIPT": "expire"},
			func(c config.Config) bool { return !c.ReleaseClaims }, ""},
		{"claims released", map[string]string{"KV_CLAIM_AFTER_RECEIPT": "release"},
			func(c config.Config) bool { return c.ReleaseClaims }, ""},
		{"another claim setting is refused", map[string]string{"KV_CLAIM_AFTER_RECEIPT": "delete"}, nil, "KV_CLAIM_AFTER_RECEIPT"},
		{"KV's read lag is Cloudflare's minute by default", nil,
			func(c config.Config) bool { return c.KVReadLag == time.Minute }, ""},
		{"KV's read lag is read in seconds", map[string]string{"KV_READ_LAG_SECONDS": "5"},
			func(c config.Config) bool { return c.KVReadLag == 5*time.Second }, ""},
		{"no read lag is refused", map[string]string{"KV_READ_LAG_SECONDS": "0"}, nil, "KV_READ_LAG_SECONDS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(tc.vars))
			if tc.wantVar != "" {
				var cerr *config.Error
				if !errors.As(err, &cerr) || cerr.Var != tc.wantVar {
					t.Fatalf("Load = %v, want an error naming %s", err, tc.wantVar)
				}
				return
			}
			if err != nil || !tc.want(c) {
				t.Fatalf("Load = %+v, %v", c, err)
			}
		})
	}
}

func TestLoadAllowedOrigins(t *testing.T) {
	const originsVar = "ALLOWED_ORIGINS"
	tests := []struct {
		name  string
		value string // unset when "-"
		want  []string
	}{
		{"unset turns CORS off", "-", nil},
		{"empty turns CORS off", "", nil},
		{"commas and spaces alone turn CORS off", " , ,", nil},
		{"one origin is read", "https://desk.example.com", []string{"https://desk.example.com"}},
		{"a list is read, trimmed, in order", " https://desk.example.com , http://127.0.0.1:8080,", []string{"https://desk.example.com", "http://127.0.0.1:8080"}},
		{"a duplicate is read once", "https://a.example,https://a.example", []string{"https://a.example"}},
		{"localhost with a port is read", "http://localhost:5173", []string{"http://localhost:5173"}},
		{"an IPv6 origin is read", "http://[::1]:8080", []string{"http://[::1]:8080"}},
		{"an international name in its xn-- form is read", "https://xn--bcher-kva.example", []string{"https://xn--bcher-kva.example"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{}
			if tc.value != "-" {
				vars[originsVar] = tc.value
			}
			c, err := config.Load(env(vars))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := c.AllowedOrigins; !slices.Equal(got, tc.want) {
				t.Errorf("AllowedOrigins = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLoadRefusesOrigins: the Worker compares origins byte for byte with
// the Origin header, so anything a browser would never send is refused at
// load, with a reason that says how to write it, rather than never
// matching; and "*" and "null" are refused for good (docs/browser.md).
func TestLoadRefusesOrigins(t *testing.T) {
	const originsVar = "ALLOWED_ORIGINS"
	tests := []struct {
		name, value, wantReason string
	}{
		{"a wildcard is refused", "*", `"*" is not allowed`},
		{"a wildcard in a list is refused", "https://desk.example.com, *", `"*" is not allowed`},
		{"null is refused", "null", "sandboxed"},
		{"a host without a scheme is refused", "desk.example.com", "not an http:// or https:// origin"},
		{"another scheme is refused", "ftp://desk.example.com", "not an http:// or https:// origin"},
		{"a trailing slash is refused", "https://desk.example.com/", "such as https://desk.example.com"},
		{"a path is refused", "https://desk.example.com/ticket", "has a path"},
		{"a query is refused", "https://desk.example.com?x", "has a path"},
		{"a user name is refused", "https://me@desk.example.com", "user name"},
		{"the default https port is refused", "https://desk.example.com:443", "write https://desk.example.com"},
		{"the default http port is refused", "http://127.0.0.1:80", "write http://127.0.0.1"},
		{"a port of letters is refused", "http://localhost:http", "port"},
		{"port 0 is refused", "http://localhost:0", "port"},
		{"a port over 65535 is refused", "http://localhost:65536", "port"},
		{"an empty port is refused", "http://localhost:", "port"},
		{"no host is refused", "https://", "no host"},
		{"capitals are refused", "https://Desk.Example.com", "write https://desk.example.com"},
		{"an upper-case scheme is refused", "HTTPS://desk.example.com", "not an http:// or https:// origin"},
		{"a non-ASCII host is refused", "https://bücher.example", "xn--"},
		{"a space inside is refused", "https://desk example.com", "in its host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(map[string]string{originsVar: tc.value}))
			if err == nil {
				t.Fatalf("Load(%s=%q) = %q, want an error", originsVar, tc.value, c.AllowedOrigins)
			}
			cerr := wantConfigError(t, err, originsVar)
			if !strings.Contains(cerr.Reason, tc.wantReason) {
				t.Errorf("reason = %q, want it to say %q", cerr.Reason, tc.wantReason)
			}
		})
	}
}

// TestErrorsNeverQuoteASecret: a configuration error is every caller's 500
// detail, without authentication, so no error quotes a secret or a URL's
// credentials: it names the setting and what is wrong with it.
func TestErrorsNeverQuoteASecret(t *testing.T) {
	const secret = "s3cretPassw0rd-4f1c"
	tests := []struct {
		name string
		vars map[string]string
	}{
		{"a mistyped URL with a password", map[string]string{"OMS_URL": "htps://desk:" + secret + "@oms.example/orders"}},
		{"a valid URL with a password", map[string]string{"OMS_URL": "https://desk:" + secret + "@oms.example/orders"}},
		{"a URL with a space and a password", map[string]string{"OMS_URL": "https://desk:" + secret + "@oms.example/ orders"}},
		{"a token with a newline inside", map[string]string{"OMS_TOKEN": secret + "\nX-Injected: 1"}},
		{"a client token written the wrong way round", map[string]string{"API_TOKENS": secret + "0000:desk-a"}},
		{"a client token too short", map[string]string{"API_TOKENS": "desk-a:" + secret[:10]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load(env(tc.vars))
			if err == nil {
				t.Fatal("Load = nil error, want the setting refused")
			}
			if strings.Contains(err.Error(), secret[:10]) {
				t.Errorf("error %q quotes the secret", err)
			}
		})
	}
}

func TestLoadOpenAccess(t *testing.T) {
	const tokens = "desk-a:desk-a-0123456789abcdef"
	tests := []struct {
		name    string
		vars    map[string]string
		want    bool
		wantErr bool
	}{
		{"unset is not open", nil, false, false},
		{"true is open", map[string]string{"OPEN_ACCESS": "true"}, true, false},
		{"false is not open", map[string]string{"OPEN_ACCESS": "false"}, false, false},
		{"yes is refused", map[string]string{"OPEN_ACCESS": "yes"}, false, true},
		{"true with API_TOKENS is refused", map[string]string{"OPEN_ACCESS": "true", tokensVar: tokens}, false, true},
		{"false with API_TOKENS is fine", map[string]string{"OPEN_ACCESS": "false", tokensVar: tokens}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(tc.vars))
			var cerr *config.Error
			if tc.wantErr {
				if !errors.As(err, &cerr) || cerr.Var != "OPEN_ACCESS" {
					t.Fatalf("Load = %v, want an *Error for OPEN_ACCESS", err)
				}
				return
			}
			if err != nil || c.OpenAccess != tc.want {
				t.Errorf("Load = OpenAccess %v, %v; want %v, nil", c.OpenAccess, err, tc.want)
			}
		})
	}
}

// TestTheDeadLetterQueueIsNamedByItsVariable: DEAD_LETTER_QUEUE names the
// queue the Worker consumes as its dead letters, wrangler.toml's by
// default; a name no queue could have is refused, naming the variable.
func TestTheDeadLetterQueueIsNamedByItsVariable(t *testing.T) {
	c, err := config.Load(env(nil))
	if err != nil || c.DeadLetterQueue != "edge-orders-settle-dlq" {
		t.Errorf("default DeadLetterQueue = %q, %v; want edge-orders-settle-dlq", c.DeadLetterQueue, err)
	}
	if c, err := config.Load(env(map[string]string{"DEAD_LETTER_QUEUE": " desk-dlq "})); err != nil || c.DeadLetterQueue != "desk-dlq" {
		t.Errorf("DEAD_LETTER_QUEUE=desk-dlq: %q, %v", c.DeadLetterQueue, err)
	}
	for _, bad := range []string{"", "two words", strings.Repeat("q", 64)} {
		var e *config.Error
		if _, err := config.Load(env(map[string]string{"DEAD_LETTER_QUEUE": bad})); !errors.As(err, &e) || e.Var != "DEAD_LETTER_QUEUE" {
			t.Errorf("DEAD_LETTER_QUEUE=%q: %v, want an error naming it", bad, err)
		}
	}
}

// TestAnOMSTokenNoHeaderCanCarryIsRefusedAtStart: OMS_TOKEN goes out on
// every gateway call as "Authorization: Bearer <token>" through fetch
// (oms.go; the bridge decodes Go's bytes as UTF-8). A token with a C1
// control (U+0085), or any character beyond ASCII (a pasted "…"), is no
// header value: workerd warns on every call, quoting the value into the
// Worker's logs, and a spec-following fetch throws (every order an
// unknown outcome). It is refused at start, as a space is.
func TestAnOMSTokenNoHeaderCanCarryIsRefusedAtStart(t *testing.T) {
	for _, token := range []string{"s3cret\u2026token", "s3cret\u20actoken", "s3cret\u0085token"} {
		_, err := config.Load(func(name string) (string, bool) {
			if name == config.OMSTokenVar {
				return token, true
			}
			return "", false
		})
		if err == nil {
			t.Errorf("OMS_TOKEN %q accepted; want it refused at start, as a space or a control character is", token)
		}
	}
}
