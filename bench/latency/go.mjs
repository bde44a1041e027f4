// The Go Worker (worker.mjs) for the benchmark's production-latency mode:
// its bindings wait before each call as WRAP_DELAYS says (bench/latency.go
// sets it), so that local KV and Durable Object calls take about as long as
// real ones. Nothing in the shipped Worker changes. See bench/README.md.
import worker, { Ledger } from "../../worker.mjs";
import { wrap } from "../../test/wrapped/wrap.mjs";

export { Ledger };
export default wrap(worker);
