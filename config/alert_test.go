package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/config"
)

func TestAlertSettings(t *testing.T) {
	const url, key = "https://hooks.example/enqueue/s3cr3t-path", "R0UT1NGKEY0123456789abcdef012345"
	t.Run("unset pages no one", func(t *testing.T) {
		c, err := config.Load(env(map[string]string{}))
		if err != nil || c.AlertURL != "" || c.AlertRoutingKey != "" {
			t.Fatalf("Load() = %q %q, %v; want neither set", c.AlertURL, c.AlertRoutingKey, err)
		}
	})
	t.Run("both set page", func(t *testing.T) {
		c, err := config.Load(env(map[string]string{config.AlertURLVar: " " + url + " ", config.AlertRoutingKeyVar: key}))
		if err != nil || c.AlertURL != url || c.AlertRoutingKey != key {
			t.Fatalf("Load() = %q %q, %v; want both", c.AlertURL, c.AlertRoutingKey, err)
		}
	})
	t.Run("credentials in the URL are taken: it is a secret", func(t *testing.T) {
		withUser := "https://user:pass@alerts.example/enqueue"
		if c, err := config.Load(env(map[string]string{config.AlertURLVar: withUser, config.AlertRoutingKeyVar: key})); err != nil || c.AlertURL != withUser {
			t.Fatalf("Load() = %q, %v; want the URL", c.AlertURL, err)
		}
	})
	for _, tc := range []struct {
		name string
		vars map[string]string
		want string
	}{
		{"a URL without its routing key", map[string]string{config.AlertURLVar: url}, config.AlertURLVar},
		{"a routing key without its URL", map[string]string{config.AlertRoutingKeyVar: key}, config.AlertURLVar},
		{"a URL that is not http(s)", map[string]string{config.AlertURLVar: "hooks.example/s3cr3t-path", config.AlertRoutingKeyVar: key}, config.AlertURLVar},
		{"a routing key with a newline", map[string]string{config.AlertURLVar: url, config.AlertRoutingKeyVar: key + "\nX"}, config.AlertRoutingKeyVar},
	} {
		t.Run(tc.name+" is refused without quoting either", func(t *testing.T) {
			_, err := config.Load(env(tc.vars))
			var cerr *config.Error
			if !errors.As(err, &cerr) || cerr.Var != tc.want || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), key) {
				t.Fatalf("Load() error = %v, want one naming %s and no secret", err, tc.want)
			}
		})
	}
}
