package workers

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
)

// Request is what a Handler reads of an incoming request. The types here are
// small on purpose: net/http would add about half a megabyte of gzipped wasm
// (its client, TLS and MIME code) for the three fields the Worker reads.
type Request struct {
	Method string
	// Path is the URL's path, percent-encoded as the Fetch API's
	// URL.pathname has it, such as /orders; empty means /.
	Path string
	// Query is the URL's query, without its '?', percent-encoded as the
	// Fetch API's URL.search has it; empty when there is none.
	Query string
	// Host is the URL's host, as the Fetch API's URL.host has it: the
	// hostname the request was routed by, and :port when not the
	// scheme's default; empty when the URL has no authority.
	Host string
	// Header looks request headers up by name, case-insensitively;
	// net/http's http.Header satisfies it.
	Header Header
	// Body reads the request body; it is never nil.
	Body Body
}

// URLPath is the path of an absolute URL as the Fetch API serializes
// one (scheme://authority/path?query#fragment), or of a path with its
// query: from the first slash after the authority to the query or
// fragment, and "/" when there is none.
func URLPath(url string) string {
	rest := url
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			rest = rest[j:]
		}
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	if !strings.HasPrefix(rest, "/") {
		return "/"
	}
	return rest
}

// URLHost is the host of an absolute URL as the Fetch API serializes one
// (scheme://host/path...): what lies between the authority's start and the
// path, query or fragment, without userinfo; "" for a URL without "://".
func URLHost(url string) string {
	i := strings.Index(url, "://")
	if i < 0 {
		return ""
	}
	rest := url[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if j := strings.LastIndexByte(rest, '@'); j >= 0 {
		rest = rest[j+1:]
	}
	return rest
}

// Header looks up a request header; it returns "" for an absent one.
type Header interface {
	Get(name string) string
}

// Body is a request body that is read whole, up to a limit.
type Body interface {
	// ReadAll returns the whole body if it is at most max bytes long. For a
	// longer one it returns ErrTooLarge without reading the rest, so a
	// hostile body costs no more than max bytes of memory.
	ReadAll(max int64) ([]byte, error)
}

// ErrTooLarge is returned by Body.ReadAll for a body over its limit.
var ErrTooLarge = errors.New("workers: body over the limit")

// ReaderBody is a Body over an io.Reader, for tests and native servers.
func ReaderBody(r io.Reader) Body { return readerBody{r} }

type readerBody struct{ r io.Reader }

func (b readerBody) ReadAll(max int64) ([]byte, error) {
	if b.r == nil {
		return nil, nil
	}
	raw, err := io.ReadAll(io.LimitReader(b.r, max+1))
	switch {
	case err != nil:
		return nil, err
	case int64(len(raw)) > max:
		return nil, ErrTooLarge
	}
	return raw, nil
}

// Response is a complete response.
type Response struct {
	Status int
	// Header holds the response headers; names must be distinct, and no
	// name or value may hold a newline (HTTP allows none).
	Header []Field
	Body   []byte
}

// Field is one response header.
type Field struct {
	Name, Value string
}

// Handler serves a request. ctx is the request's context; WaitUntil(ctx, ...)
// schedules work after the response.
type Handler interface {
	ServeWorker(ctx context.Context, r *Request) *Response
}

// PanicHandler is a Handler that answers, and reports, a panic that
// escaped it or the bridge around it; Serve answers a plain 500 for a
// Handler that is not one.
type PanicHandler interface {
	Handler
	ServePanic(p any) *Response
}

// OutgoingRequest is a request the Worker sends (see Fetcher).
type OutgoingRequest struct {
	Method string
	URL    string
	Header []Field
	Body   []byte
	// Timeout bounds the whole exchange, the answer's body included; zero
	// means none but the runtime's.
	Timeout time.Duration
	// MaxAnswerBytes bounds the answer's body as read, after any
	// Content-Encoding is undone: a longer one is ErrTooLarge, and is not
	// read past the bound. Zero allows only an empty body.
	MaxAnswerBytes int64
}

// OutgoingResponse is the whole answer to an OutgoingRequest. A redirect
// is never followed: it is the answer.
type OutgoingResponse struct {
	Status int
	// Location is the answer's Location header: where a redirect points.
	Location string
	Body     []byte
}

// URLQuery is the query of a URL, as URLPath takes its path: what follows
// the first '?', up to a fragment, without the '?'; "" when there is none.
func URLQuery(url string) string {
	_, rest, ok := strings.Cut(url, "?")
	if !ok {
		return ""
	}
	rest, _, _ = strings.Cut(rest, "#")
	return rest
}

// QueueMessage is one message of a queue batch, as a QueueHandler gets it.
type QueueMessage struct {
	// Queue is the name of the queue it came from.
	Queue string
	// ID is the message's id, the same at every delivery of it.
	ID string
	// Attempts counts its deliveries, this one included.
	Attempts int
	Body     []byte
}
