// Package httpserve serves a workers.Handler over net/http, natively, so
// that tests of the Worker's callers (the Go client) and of its HTTP
// contract run the real handler. The Worker itself never imports it:
// net/http would add about half a megabyte to its wasm.
package httpserve

import (
	"net/http"
	"strings"

	"github.com/edge-orders/edge-orders/workers"
)

// Handler returns h as a net/http handler: the request's method, path,
// headers and body go in, the response's status, headers and body come out. A
// header sent on several lines reads as the runtime's Headers object
// reads it: the lines' values joined by ", ".
func Handler(h workers.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := h.ServeWorker(r.Context(), &workers.Request{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Host: r.Host, Header: fetchHeader(r.Header), Body: workers.ReaderBody(r.Body)})
		for _, f := range resp.Header {
			w.Header().Add(f.Name, f.Value)
		}
		w.WriteHeader(resp.Status)
		w.Write(resp.Body)
	})
}

// fetchHeader is a request's headers as the Fetch API's Headers.get reads
// them.
type fetchHeader http.Header

func (h fetchHeader) Get(name string) string {
	return strings.Join(http.Header(h).Values(name), ", ")
}
