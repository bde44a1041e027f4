// Package httpserve serves a workers.Handler over net/http, natively, so
// that tests of the Worker's callers (the Go client) and of its HTTP
// contract run the real handler. The Worker itself never imports it:
// net/http would add about half a megabyte to its wasm.
package httpserve

import (
	"net/http"

	"github.com/edge-orders/edge-orders/workers"
)

// Handler returns h as a net/http handler: the request's method, headers
// and body go in, the response's status, headers and body come out.
func Handler(h workers.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := h.ServeWorker(r.Context(), &workers.Request{Method: r.Method, Header: r.Header, Body: workers.ReaderBody(r.Body)})
		for _, f := range resp.Header {
			w.Header().Add(f.Name, f.Value)
		}
		w.WriteHeader(resp.Status)
		w.Write(resp.Body)
	})
}
