// The seed's TypeScript Worker (bench/seed) for the production-latency mode,
// its ORDERS binding delayed as WRAP_DELAYS says; see bench/latency/go.mjs.
// wrangler bundles the TypeScript itself.
import worker from "../seed/idempotent-orders.ts";
import { wrap } from "../../e2e/wrapped/wrap.mjs";

export default wrap(worker);
