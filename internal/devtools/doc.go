// Package devtools holds, in its subpackages, what the tests and the bench
// use and the Worker never ships: wranglerdev (a `wrangler dev` to test
// against) and httpserve (a Worker's handler over net/http, natively). The
// packages directly under internal/ (errs, jsjson, sha256, uuid) are
// compiled into the Worker's wasm.
package devtools
