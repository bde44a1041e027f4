// The JavaScript port (bench/reference) for the production-latency mode,
// its ORDERS binding delayed as WRAP_DELAYS says; see bench/latency/go.mjs.
import worker from "../reference/worker.js";
import { wrap } from "../../e2e/wrapped/wrap.mjs";

export default wrap(worker);
