// Package worker connects a Go http.Handler to the Cloudflare Workers runtime.
//
// Everything that touches syscall/js lives in this package's _js.go files and
// in kv's Workers binding; the rest of the program is portable Go that builds
// and tests natively.
package workers
