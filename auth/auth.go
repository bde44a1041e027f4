// Package auth checks bearer tokens against a configured set of API clients.
package auth

import (
	"crypto/subtle"
	"errors"
	"strconv"
	"strings"

	"github.com/edge-orders/edge-orders/internal/sha256"
)

var (
	// ErrMissingToken is returned for a request without a bearer token.
	ErrMissingToken = errors.New("auth: missing bearer token")
	// ErrInvalidToken is returned for a bearer token no client holds.
	ErrInvalidToken = errors.New("auth: invalid bearer token")
)

// MaxClientIDBytes bounds a client id, which prefixes the client's KV keys.
const MaxClientIDBytes = 64

// Clients is the set of API clients and their tokens. Tokens are kept only as
// SHA-256 digests, compared in constant time.
type Clients struct {
	clients []client
}

type client struct {
	id     string
	digest [sha256.Size]byte
}

// Parse reads clients from s: "id:token" pairs separated by commas or white
// space. An id is 1 to 64 letters, digits, '.', '_' or '-' (it prefixes the
// client's keys, so it never holds ':'); a token is at least 16 printable
// ASCII characters without spaces or commas. Errors name entries by number,
// never by content: a pair written the wrong way round would put a token
// where an id belongs, and the error is shown in a public 500.
func Parse(s string) (*Clients, error) {
	c := &Clients{}
	ids := map[string]bool{}
	tokens := map[[sha256.Size]byte]bool{}
	for i, pair := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		entry := "entry " + strconv.Itoa(i+1)
		id, token, ok := strings.Cut(pair, ":")
		switch {
		case !ok:
			return nil, errors.New(entry + " is not of the form client-id:token")
		case !validID(id):
			return nil, errors.New(entry + ": a client id is 1 to " + strconv.Itoa(MaxClientIDBytes) + " letters, digits, '.', '_' or '-'")
		case len(token) < 16 || !printable(token):
			return nil, errors.New(entry + ": a token is at least 16 printable ASCII characters")
		case ids[id]:
			return nil, errors.New(entry + " repeats a client id")
		}
		digest := sha256.Sum256([]byte(token))
		if tokens[digest] {
			return nil, errors.New(entry + " repeats another client's token")
		}
		ids[id], tokens[digest] = true, true
		c.clients = append(c.clients, client{id: id, digest: digest})
	}
	if len(c.clients) == 0 {
		return nil, errors.New("no client-id:token pairs")
	}
	return c, nil
}

// Len is the number of clients.
func (c *Clients) Len() int { return len(c.clients) }

// Authenticate returns the id of the client whose token the Authorization
// header value carries ("Bearer <token>", scheme case-insensitive). It
// returns ErrMissingToken when there is no bearer token and ErrInvalidToken
// when no client holds it. Every configured token is compared, in constant
// time, so the time taken says nothing about which one came close.
func (c *Clients) Authenticate(authorization string) (string, error) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", ErrMissingToken
	}
	digest := sha256.Sum256([]byte(token))
	found := -1
	for i := range c.clients {
		if subtle.ConstantTimeCompare(digest[:], c.clients[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", ErrInvalidToken
	}
	return c.clients[found].id, nil
}

// ValidClientID reports whether id is one Parse takes as a client's: 1
// to MaxClientIDBytes letters, digits, '.', '_' or '-'.
func ValidClientID(id string) bool { return validID(id) }

func validID(id string) bool {
	if id == "" || len(id) > MaxClientIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// printable reports whether s is visible ASCII, without spaces or commas.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' || s[i] == ',' {
			return false
		}
	}
	return true
}
