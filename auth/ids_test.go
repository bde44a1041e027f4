package auth_test

import (
	"slices"
	"testing"

	"github.com/edge-orders/edge-orders/auth"
)

func TestIDsAndHas(t *testing.T) {
	c, err := auth.Parse("zed:0123456789abcdef0, amy:0123456789abcdef1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.IDs(), []string{"amy", "zed"}; !slices.Equal(got, want) {
		t.Errorf("IDs() = %v, want %v", got, want)
	}
	for id, want := range map[string]bool{"amy": true, "zed": true, "bob": false, "": false} {
		if got := c.Has(id); got != want {
			t.Errorf("Has(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestSharesToken(t *testing.T) {
	clients, _ := auth.Parse("desk:0123456789abcdef0")
	tests := []struct {
		name   string
		admins string
		want   bool
	}{
		{"admins with their own tokens share none", "ops:0123456789abcdefA", false},
		{"an admin holding a client's token shares it", "ops:0123456789abcdefA,root:0123456789abcdef0", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			admins, err := auth.Parse(tc.admins)
			if err != nil {
				t.Fatal(err)
			}
			if got := admins.SharesToken(clients); got != tc.want {
				t.Errorf("SharesToken = %v, want %v", got, tc.want)
			}
		})
	}
}
