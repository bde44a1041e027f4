// The Go Worker (worker.mjs) for the benchmark's production-latency mode:
// its bindings wait before each call as WRAP_DELAYS says (bench/latency.go
// sets it), so that local KV and Durable Object calls take about as long as
// real ones. Nothing in the shipped Worker changes. See bench/README.md.
//
// GET /__bench/points answers the METRICS data points recorded since the
// last such call, and records them from then on: the bench reads a new
// order's round trips from its point (bench/trips.go).
import worker, { Ledger } from "../../worker.mjs";
import { wrap, settings, points } from "../../test/wrapped/wrap.mjs";

export { Ledger };
const wrapped = wrap(worker);
export default {
  ...wrapped,
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__bench/points") {
      settings.recordPoints = true;
      return Response.json(points.splice(0));
    }
    return wrapped.fetch(request, env, ctx);
  },
};
