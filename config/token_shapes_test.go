package config_test

import (
	"testing"

	"github.com/edge-orders/edge-orders/config"
)

// TestExistingTokenShapesStillLoad: the token and routing-key shapes a
// deployment holds today load after 956d87d, trimmed: a PagerDuty
// integration key, base64 with '+', '/' and '=', a JWT, and a value set
// through `echo ... | wrangler secret put` (a trailing newline).
func TestExistingTokenShapesStillLoad(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"a PagerDuty Events v2 integration key", "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"},
		{"base64 with + / =", "aGVsbG8+d29ybGQ/Zm9v/+A==", "aGVsbG8+d29ybGQ/Zm9v/+A=="},
		{"a JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig-_~", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig-_~"},
		{"piped with a newline", "tok=en/+\n", "tok=en/+"},
		{"pasted with a no-break space around it", "\u00a0tok\u00a0", "tok"},
		{"every visible ASCII byte", "!\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~", "!\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{config.OMSTokenVar: tc.in, config.AlertURLVar: "https://events.pagerduty.com/v2/enqueue", config.AlertRoutingKeyVar: tc.in}
			c, err := config.Load(func(n string) (string, bool) { v, ok := vars[n]; return v, ok })
			if err != nil {
				t.Fatalf("Load = %v", err)
			}
			if c.OMSToken != tc.want || c.AlertRoutingKey != tc.want {
				t.Errorf("got %q, %q; want %q", c.OMSToken, c.AlertRoutingKey, tc.want)
			}
		})
	}
}
