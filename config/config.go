// Package config reads the Worker's settings from its environment and refuses
// values that KV or the service would reject later, naming the variable.
package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/edge-orders/edge-orders/auth"
	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
)

// Names of the variables, as set in wrangler.toml [vars] or as secrets.
const (
	ResultTTLVar  = "RESULT_TTL_SECONDS"
	PendingTTLVar = "PENDING_TTL_SECONDS"
	TokensVar     = "API_TOKENS"
)

// Config is the Worker's configuration.
type Config struct {
	ResultTTL  time.Duration
	PendingTTL time.Duration
	// Clients holds the API clients; nil means the Worker runs open, without
	// authentication, as the reference does.
	Clients *auth.Clients
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
// returns an *Error for the first variable that cannot work.
func Load(lookup func(name string) (string, bool)) (Config, error) {
	c := Config{ResultTTL: intake.DefaultResultTTL, PendingTTL: intake.DefaultPendingTTL}
	for _, ttl := range []struct {
		name string
		into *time.Duration
	}{{ResultTTLVar, &c.ResultTTL}, {PendingTTLVar, &c.PendingTTL}} {
		v, ok := lookup(ttl.name)
		if !ok {
			continue
		}
		d, err := parseTTL(v)
		if err != nil {
			return Config{}, &Error{Var: ttl.name, Reason: err.Error()}
		}
		*ttl.into = d
	}
	if v, ok := lookup(TokensVar); ok && strings.TrimSpace(v) != "" {
		clients, err := auth.Parse(v)
		if err != nil {
			return Config{}, &Error{Var: TokensVar, Reason: err.Error()}
		}
		c.Clients = clients
	}
	return c, nil
}

// parseTTL reads a whole number of seconds that KV accepts as expirationTtl.
func parseTTL(v string) (time.Duration, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a whole number of seconds", v)
	case n < int64(kv.MinTTL/time.Second):
		return 0, fmt.Errorf("%d is under KV's minimum expiration TTL of %d seconds", n, int64(kv.MinTTL/time.Second))
	case n > int64(10*365*24*time.Hour/time.Second):
		return 0, fmt.Errorf("%d seconds is over ten years", n)
	}
	return time.Duration(n) * time.Second, nil
}
