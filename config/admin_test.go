package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/config"
)

func TestAdminTokens(t *testing.T) {
	const clientToken, adminToken = "client-token-0123456789", "admin-token-0123456789"
	t.Run("unset leaves the admin API off", func(t *testing.T) {
		c, err := config.Load(env(map[string]string{}))
		if err != nil || c.Admins != nil {
			t.Fatalf("Load() = Admins %v, %v; want nil, no error", c.Admins, err)
		}
	})
	t.Run("named tokens turn it on", func(t *testing.T) {
		c, err := config.Load(env(map[string]string{config.AdminTokensVar: "ops:" + adminToken}))
		if err != nil || c.Admins == nil || !c.Admins.Has("ops") {
			t.Fatalf("Load() = Admins %v, %v; want ops", c.Admins, err)
		}
	})
	t.Run("a malformed entry is refused without quoting it", func(t *testing.T) {
		_, err := config.Load(env(map[string]string{config.AdminTokensVar: "ops=" + adminToken}))
		var cerr *config.Error
		if !errors.As(err, &cerr) || cerr.Var != config.AdminTokensVar || strings.Contains(err.Error(), adminToken) {
			t.Fatalf("Load() error = %v, want one naming %s and not the token", err, config.AdminTokensVar)
		}
	})
	t.Run("a token that is also a client's is refused", func(t *testing.T) {
		_, err := config.Load(env(map[string]string{config.TokensVar: "desk:" + clientToken, config.AdminTokensVar: "ops:" + clientToken}))
		var cerr *config.Error
		if !errors.As(err, &cerr) || cerr.Var != config.AdminTokensVar || strings.Contains(err.Error(), clientToken) {
			t.Fatalf("Load() error = %v, want one naming %s and not the token", err, config.AdminTokensVar)
		}
	})
}
