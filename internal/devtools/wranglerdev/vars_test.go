//go:build !js

package wranglerdev

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// TestLocalVarsRunOpenOnlyWhenNothingDecides: a Worker served without
// tokens is told OPEN_ACCESS "true", explicitly; tokens or an OPEN_ACCESS
// of the test's own are left as given, and every line of the env file is
// passed on, the names wrangler's [secrets] filter drops included.
func TestLocalVarsRunOpenOnlyWhenNothingDecides(t *testing.T) {
	env := filepath.Join(t.TempDir(), "secrets.env")
	if err := os.WriteFile(env, []byte("# a comment\nAPI_TOKENS=desk:0123456789abcdef\nADMIN_TOKENS=ops:fedcba9876543210\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want map[string]string
	}{
		{"nothing given runs open", Options{}, map[string]string{"OPEN_ACCESS": "true"}},
		{"vars are kept", Options{Vars: map[string]string{"LOG_LEVEL": "all"}}, map[string]string{"LOG_LEVEL": "all", "OPEN_ACCESS": "true"}},
		{"an OPEN_ACCESS of the test's own is kept", Options{Vars: map[string]string{"OPEN_ACCESS": "false"}}, map[string]string{"OPEN_ACCESS": "false"}},
		{"tokens in the env file are not open", Options{EnvFile: env},
			map[string]string{"API_TOKENS": "desk:0123456789abcdef", "ADMIN_TOKENS": "ops:fedcba9876543210"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := localVars(tc.opts)
			if err != nil || !maps.Equal(got, tc.want) {
				t.Errorf("localVars = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
