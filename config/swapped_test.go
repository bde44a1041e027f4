package config_test

import (
	"strings"
	"testing"

	"github.com/edge-orders/edge-orders/config"
)

// An operator who writes token:id instead of id:token (a token made of
// letters, digits and '-' is a valid id) gets the token quoted in the error,
// which main.go serves as the public detail of every 500 misconfigured.
func TestSwappedPairDoesNotLeakToken(t *testing.T) {
	const token = "s3cret-tok-0123456789abcdef"
	_, err := config.Load(func(name string) (string, bool) {
		if name == "API_TOKENS" {
			return token + ":alice", true
		}
		return "", false
	})
	if err == nil {
		t.Fatal("Load accepted a swapped pair")
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("error %q quotes the token", err)
	}
}
