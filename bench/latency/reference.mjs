// The JavaScript port (test/reference/port) for the production-latency mode,
// its ORDERS binding delayed as WRAP_DELAYS says; see bench/latency/go.mjs.
import worker from "../../test/reference/port/worker.js";
import { wrap } from "../../test/wrapped/wrap.mjs";

export default wrap(worker);
