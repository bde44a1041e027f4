package auth_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/edge-orders/edge-orders/auth"
)

const (
	aliceToken = "alice-tok-0123456789abcdef"
	bobToken   = "bob-tok-ZYXWVUTSRQ987654"
)

// pairs is the configuration most tests use.
const pairs = "alice:" + aliceToken + ",bob:" + bobToken

func mustParse(t testing.TB, s string) *auth.Clients {
	t.Helper()
	c, err := auth.Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return c
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  map[string]string // token → client id
	}{
		{"comma-separated pairs are read", pairs,
			map[string]string{aliceToken: "alice", bobToken: "bob"}},
		{"space-separated pairs are read", "alice:" + aliceToken + " bob:" + bobToken,
			map[string]string{aliceToken: "alice", bobToken: "bob"}},
		{"newline-separated pairs are read", "alice:" + aliceToken + "\nbob:" + bobToken + "\n",
			map[string]string{aliceToken: "alice", bobToken: "bob"}},
		{"mixed separators and blank entries are read", " ,\r\n\talice:" + aliceToken + " , ,\r\nbob:" + bobToken + ",\t",
			map[string]string{aliceToken: "alice", bobToken: "bob"}},
		{"one pair is read", "alice:" + aliceToken,
			map[string]string{aliceToken: "alice"}},
		{"a 16-character token is read", "alice:0123456789abcdef",
			map[string]string{"0123456789abcdef": "alice"}},
		{"a 64-character id is read", strings.Repeat("a", 64) + ":" + aliceToken,
			map[string]string{aliceToken: strings.Repeat("a", 64)}},
		{"an id of every allowed character is read", "aZ09._-:" + aliceToken,
			map[string]string{aliceToken: "aZ09._-"}},
		{"every printable character but comma is allowed in a token", "alice:!\"#$%&'()*+-./09:;<=>?@AZ[\\]^_`az{|}~",
			map[string]string{"!\"#$%&'()*+-./09:;<=>?@AZ[\\]^_`az{|}~": "alice"}},
		// The id ends at the first colon, so it never holds one: what follows
		// belongs to the token.
		{"a colon after the first belongs to the token", "al:ice:" + aliceToken,
			map[string]string{"ice:" + aliceToken: "al"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.input)
			if got, want := c.Len(), len(tc.want); got != want {
				t.Errorf("Len() = %d, want %d", got, want)
			}
			for token, wantID := range tc.want {
				got, err := c.Authenticate("Bearer " + token)
				if err != nil || got != wantID {
					t.Errorf("Authenticate(Bearer %s) = %q, %v; want %q", token, got, err, wantID)
				}
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name  string
		input string
		// secrets are the tokens, or what looks like one, in input; the error
		// must quote none of them.
		secrets []string
	}{
		{"empty is refused", "", nil},
		{"only separators are refused", " ,\n\t, ", nil},
		{"a token without an id is refused", aliceToken, []string{aliceToken}},
		{"an empty id is refused", ":" + aliceToken, []string{aliceToken}},
		{"a 65-character id is refused", strings.Repeat("a", 65) + ":" + aliceToken, []string{aliceToken}},
		{"an id with a space is refused", "al ice:" + aliceToken, []string{aliceToken}},
		{"a non-ASCII id is refused", "alicé:" + aliceToken, []string{aliceToken}},
		{"an id with a slash is refused", "a/b:" + aliceToken, []string{aliceToken}},
		{"an id with a quote is refused", `a"b:` + aliceToken, []string{aliceToken}},
		{"a 15-character token is refused", "alice:0123456789abcde", []string{"0123456789abcde"}},
		{"an empty token is refused", "alice:", nil},
		{"a token with a comma is refused", "alice:0123456789,abcdefghijklmnop", []string{"0123456789", "abcdefghijklmnop"}},
		{"a token with a space is refused", "alice:0123456789 abcdefghijklmnop", []string{"0123456789", "abcdefghijklmnop"}},
		{"a token with a control character is refused", "alice:0123456789abcdef\x01ghij", []string{"0123456789abcdef"}},
		{"a token with DEL is refused", "alice:0123456789abcdef\x7fghij", []string{"0123456789abcdef"}},
		{"a non-ASCII token is refused", "alice:0123456789abcdefé", []string{"0123456789abcdef"}},
		{"a duplicate id is refused", "alice:" + aliceToken + ",alice:" + bobToken, []string{aliceToken, bobToken}},
		{"a duplicate token is refused", "alice:" + aliceToken + ",bob:" + aliceToken, []string{aliceToken}},
		{"one bad pair among good ones is refused", pairs + ",carol:short-token", []string{aliceToken, bobToken, "short-token"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := auth.Parse(tc.input)
			if err == nil {
				t.Fatalf("Parse(%q) = %d clients, want an error", tc.input, c.Len())
			}
			if c != nil {
				t.Errorf("Parse(%q) returned clients with its error", tc.input)
			}
			for _, s := range tc.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q quotes the token text %q", err, s)
				}
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	c := mustParse(t, pairs)
	tests := []struct {
		name          string
		authorization string
		wantID        string
		wantErr       error
	}{
		{"alice's token is alice", "Bearer " + aliceToken, "alice", nil},
		{"bob's token is bob", "Bearer " + bobToken, "bob", nil},
		{"a lower-case scheme is accepted", "bearer " + aliceToken, "alice", nil},
		{"an upper-case scheme is accepted", "BEARER " + bobToken, "bob", nil},
		{"surrounding spaces are tolerated", "  Bearer " + aliceToken + "  ", "alice", nil},
		{"spaces after the scheme are tolerated", "Bearer    " + bobToken, "bob", nil},
		{"an unknown token is invalid", "Bearer mallory-tok-55555555555555", "", auth.ErrInvalidToken},
		{"a prefix of a token is invalid", "Bearer " + aliceToken[:len(aliceToken)-1], "", auth.ErrInvalidToken},
		{"a 16-character prefix of a token is invalid", "Bearer " + aliceToken[:16], "", auth.ErrInvalidToken},
		{"an extension of a token is invalid", "Bearer " + aliceToken + "0", "", auth.ErrInvalidToken},
		{"two tokens are invalid", "Bearer " + aliceToken + " " + bobToken, "", auth.ErrInvalidToken},
		{"the id:token pair is invalid", "Bearer alice:" + aliceToken, "", auth.ErrInvalidToken},
		{"a token in another case is invalid", "Bearer " + strings.ToUpper(aliceToken), "", auth.ErrInvalidToken},
		{"the client id is invalid", "Bearer alice", "", auth.ErrInvalidToken},
		{"no header is missing", "", "", auth.ErrMissingToken},
		{"only spaces are missing", "   ", "", auth.ErrMissingToken},
		{"Basic is missing", "Basic x", "", auth.ErrMissingToken},
		{"a token under Basic is missing", "Basic " + aliceToken, "", auth.ErrMissingToken},
		{"a token without a scheme is missing", aliceToken, "", auth.ErrMissingToken},
		{"Bearer alone is missing", "Bearer", "", auth.ErrMissingToken},
		{"Bearer and a space is missing", "Bearer ", "", auth.ErrMissingToken},
		{"Bearer and spaces is missing", "Bearer    ", "", auth.ErrMissingToken},
		{"a scheme that starts with Bearer is missing", "Bearerx " + aliceToken, "", auth.ErrMissingToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Authenticate(tc.authorization)
			if got != tc.wantID {
				t.Errorf("Authenticate(%q) id = %q, want %q", tc.authorization, got, tc.wantID)
			}
			if tc.wantErr == nil && err != nil {
				t.Errorf("Authenticate(%q) error = %v, want none", tc.authorization, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("Authenticate(%q) error = %v, want %v", tc.authorization, err, tc.wantErr)
			}
			if err != nil && (strings.Contains(err.Error(), aliceToken) || strings.Contains(err.Error(), bobToken)) {
				t.Errorf("error %q quotes a token", err)
			}
		})
	}
}

// FuzzAuthenticate checks Authenticate never panics and lets only a
// configured token in: a header it accepts is "Bearer", in any case, then
// white space and exactly that client's token, give or take white space
// around.
func FuzzAuthenticate(f *testing.F) {
	c := mustParse(f, pairs)
	tokens := map[string]string{"alice": aliceToken, "bob": bobToken}
	for _, seed := range []string{
		"", "Bearer", "Bearer ", "Bearer " + aliceToken, "bearer " + bobToken, " Bearer  " + aliceToken + " ",
		"Basic " + aliceToken, aliceToken, "Bearer " + aliceToken + "x", "Bearer " + aliceToken[:20],
		"Bearer\t" + aliceToken, "Bearer " + aliceToken + "\x00", "Bearer alice", "Bearer \xff\xfe",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, authorization string) {
		id, err := c.Authenticate(authorization)
		if err != nil {
			if id != "" {
				t.Errorf("Authenticate(%q) = %q with error %v, want no id", authorization, id, err)
			}
			if !errors.Is(err, auth.ErrMissingToken) && !errors.Is(err, auth.ErrInvalidToken) {
				t.Errorf("Authenticate(%q) error = %v, want ErrMissingToken or ErrInvalidToken", authorization, err)
			}
			return
		}
		token, ok := tokens[id]
		if !ok {
			t.Fatalf("Authenticate(%q) = %q, which is no configured client", authorization, id)
		}
		// Take the token out: what is left must be the scheme before it and
		// white space around.
		i := strings.Index(authorization, token)
		if i < 0 {
			t.Fatalf("Authenticate(%q) = %q, but the header lacks %s's token", authorization, id, id)
		}
		before, after := authorization[:i], authorization[i+len(token):]
		if !strings.EqualFold(strings.TrimSpace(before), "Bearer") || strings.TrimRightFunc(before, unicode.IsSpace) == before {
			t.Errorf("Authenticate(%q) = %q, but %q before the token is not a Bearer scheme", authorization, id, before)
		}
		if strings.TrimSpace(after) != "" {
			t.Errorf("Authenticate(%q) = %q, but %q follows the token", authorization, id, after)
		}
	})
}

// FuzzParse checks Parse never panics and that what it accepts is usable.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"", pairs, "alice:" + aliceToken + "\nbob:" + bobToken, "a:b", ":", "al:ice:" + aliceToken, "é:" + aliceToken} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := auth.Parse(s)
		if err != nil {
			if c != nil {
				t.Errorf("Parse(%q) returned clients with error %v", s, err)
			}
			return
		}
		if c.Len() < 1 {
			t.Errorf("Parse(%q) = %d clients and no error, want at least one", s, c.Len())
		}
		if _, err := c.Authenticate(""); !errors.Is(err, auth.ErrMissingToken) {
			t.Errorf("Parse(%q): Authenticate(\"\") error = %v, want ErrMissingToken", s, err)
		}
	})
}
