package workers

import (
	"context"
	"io"
)

// Request is what a Handler reads of an incoming request. The types here are
// small on purpose: net/http would add about half a megabyte of gzipped wasm
// (its client, TLS and MIME code) for the three fields the Worker reads.
type Request struct {
	Method string
	URL    string
	// Header looks request headers up by name, case-insensitively;
	// net/http's http.Header satisfies it.
	Header Header
	// Body streams the request body; it is never nil.
	Body io.Reader
}

// Header looks up a request header; it returns "" for an absent one.
type Header interface {
	Get(name string) string
}

// Response is a complete response.
type Response struct {
	Status int
	// Header holds the response headers; names must be distinct.
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
