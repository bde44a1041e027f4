// The seed's TypeScript Worker (test/reference/seed) for the production-latency mode,
// its ORDERS binding delayed as WRAP_DELAYS says; see bench/latency/go.mjs.
// wrangler bundles the TypeScript itself.
import worker from "../../test/reference/seed/idempotent-orders.ts";
import { wrap } from "../../test/wrapped/wrap.mjs";

export default wrap(worker);
