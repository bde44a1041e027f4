// Package devtools holds, in its subpackages, what the tests and the bench
// use and the Worker never ships: wranglerdev (a `wrangler dev` to test
// against), httpserve (a Worker's handler over net/http, natively) and
// rapidflags (go test's fixed seeds for the simulator's histories),
// inspector (make profile's CPU profiles through the V8 inspector), and
// the commands mutants (make mutants's planted bugs) and decisions (the
// lifecycle's decision points, counted). The
// packages directly under internal/ (errs, jsjson, sha256, uuid) are
// compiled into the Worker's wasm.
package devtools
