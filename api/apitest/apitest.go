// Package apitest checks HTTP requests and responses against the Worker's OpenAPI 3.1 document (package api), for tests.
//
// Only tests import this package: the OpenAPI validator behind it would
// swell the Worker's wasm, so no package the Worker imports may import it.
//
// The validator is github.com/getkin/kin-openapi (openapi3 to load the
// document, openapi3filter to check exchanges). Since v0.137 it reads
// OpenAPI 3.1 and validates 3.1 documents' schemas as JSON Schema 2020-12
// (const, type arrays, sibling keywords of $ref), through
// santhosh-tekuri/jsonschema, a small, dependency-free validator. The
// alternative, pb33f/libopenapi-validator, is 3.1-native too but needs Go
// 1.26 and brings several times the dependencies (its own YAML, JSONPath,
// regexp2 and XML packages) for features these tests do not use.
// kin-openapi's routers are not used: the Worker answers every path alike
// but for the few the document names (the policy, GET /idempotency), so a
// request is matched to a path the document names, for a method it
// describes there, and otherwise to the root, which stands for every path.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/edge-orders/edge-orders/api"
)

// The policy page is Markdown, which openapi3filter reads as text only
// once told to.
func init() { openapi3filter.RegisterBodyDecoder("text/markdown", openapi3filter.PlainBodyDecoder) }

// root is the document's path that stands for every path it does not name.
const root = "/"

// ErrNoOperation is returned for a method the document does not describe.
var ErrNoOperation = errors.New("apitest: no operation for this method")

// Validator checks HTTP exchanges against the document. It is safe for
// concurrent use.
type Validator struct {
	doc *openapi3.T
}

// Load parses the embedded document and checks that it is a valid OpenAPI
// document.
func Load() (*Validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.Document())
	if err != nil {
		return nil, fmt.Errorf("apitest: loading openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("apitest: openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	if doc.Paths.Value(root) == nil {
		return nil, fmt.Errorf("apitest: openapi.yaml has no path %s", root)
	}
	return &Validator{doc: doc}, nil
}

// route is the operation the Worker runs for r: the one the document
// names for r's path and method, if any, and otherwise the root's for the
// method.
func (v *Validator) route(r *http.Request) (*routers.Route, error) {
	if path, item := v.match(r.URL.EscapedPath()); item != nil {
		if op := item.GetOperation(r.Method); op != nil {
			return &routers.Route{Spec: v.doc, Path: path, PathItem: item, Method: r.Method, Operation: op}, nil
		}
	}
	item := v.doc.Paths.Value(root)
	op := item.GetOperation(r.Method)
	if op == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoOperation, r.Method)
	}
	return &routers.Route{Spec: v.doc, Path: root, PathItem: item, Method: r.Method, Operation: op}, nil
}

// match is the document's path that names path, other than the root: the
// same path, or a template whose {parameters} each stand for one segment
// (the admin API's /admin/orders/{client}/{key}).
func (v *Validator) match(path string) (string, *openapi3.PathItem) {
	if path == root {
		return "", nil
	}
	if item := v.doc.Paths.Value(path); item != nil {
		return path, item
	}
	segments := strings.Split(path, "/")
	for template, item := range v.doc.Paths.Map() {
		parts := strings.Split(template, "/")
		if !strings.Contains(template, "{") || len(parts) != len(segments) {
			continue
		}
		matched := true
		for i, p := range parts {
			if !(strings.HasPrefix(p, "{") && segments[i] != "") && p != segments[i] {
				matched = false
				break
			}
		}
		if matched {
			return template, item
		}
	}
	return "", nil
}

// ValidateRequest checks r's method, headers and body against the document.
// It reads r.Body and puts back an unread copy. Requests that the Worker
// must refuse (a missing key, a bad order) fail it: check only the requests
// a well-behaved client sends.
func (v *Validator) ValidateRequest(r *http.Request) error {
	route, err := v.route(r)
	if err != nil {
		return err
	}
	input := &openapi3filter.RequestValidationInput{
		Request: r,
		Route:   route,
		Options: &openapi3filter.Options{
			// Which tokens are good is the Worker's configuration, not the
			// document's; with the open alternative, any request passes.
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			MultiError:         true,
		},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
		return fmt.Errorf("apitest: %s request: %w", r.Method, err)
	}
	return nil
}

// ValidateResponse checks a response to r against the document: that its
// status is one the operation for r's method and path lists, and that its
// headers, content type and body match that status's response. Only r's
// method and path are read, so r may be any request, even one the Worker
// refused, and its body may be spent.
func (v *Validator) ValidateResponse(r *http.Request, status int, header http.Header, body []byte) error {
	route, err := v.route(r)
	if err != nil {
		return err
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, Route: route},
		Status:                 status,
		Header:                 header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		return fmt.Errorf("apitest: %s response %d: %w", r.Method, status, err)
	}
	return nil
}

// ValidateProblem checks body against the document's Problem schema, whose
// table ties each problem code to its type and status.
func (v *Validator) ValidateProblem(body []byte) error {
	ref := v.doc.Components.Schemas["Problem"]
	if ref == nil || ref.Value == nil {
		return errors.New("apitest: openapi.yaml has no Problem schema")
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("apitest: problem body: %w", err)
	}
	if err := ref.Value.VisitJSON(doc, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("apitest: problem %s: %w", body, err)
	}
	return nil
}

// load is Load, run once for the test helpers.
var load = sync.OnceValues(Load)

// CheckResponse fails t unless a response with status, header and body is
// one the document allows for r's method (see Validator.ValidateResponse).
func CheckResponse(t testing.TB, r *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	v, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ValidateResponse(r, status, header, body); err != nil {
		t.Errorf("response breaks the OpenAPI document: %v\nbody: %s", err, body)
	}
}

// CheckHTTPResponse is CheckResponse for a response from an http.Client,
// whose Request field names the request. It reads resp.Body, puts back an
// unread copy, and returns the body.
func CheckHTTPResponse(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	if resp.Request == nil {
		t.Fatal("CheckHTTPResponse: the response has no Request")
	}
	CheckResponse(t, resp.Request, resp.StatusCode, resp.Header, body)
	return body
}

// CheckRequest fails t unless r is a request the document describes (see
// Validator.ValidateRequest).
func CheckRequest(t testing.TB, r *http.Request) {
	t.Helper()
	v, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ValidateRequest(r); err != nil {
		t.Errorf("request breaks the OpenAPI document: %v", err)
	}
}
