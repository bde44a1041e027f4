// A test-only entry: the shipped Worker (worker.mjs) with its bindings
// wrapped, so that chosen calls are delayed or fail. Served with
// `wrangler dev e2e/wrapped/entry.mjs` over the project's own wrangler.toml,
// so bindings and environments are the shipped ones. Set by vars:
//   WRAP_DELAYS      JSON, {"ORDERS.put": 30, "LEDGER.commit": 3000}: ms
//                    before each call of that binding's method ("*" for any)
//   WRAP_FAULT_RATE  share of calls, 0 to 1, that fail: half of them before
//                    the call is made, half after it took effect
// The wrapping lives in wrap.mjs, which also takes delay distributions.
// GET /__wrapped/stats answers the calls made, the faults injected and the
// Go instance's linear memory in bytes, as JSON.
import worker, { Ledger } from "../../worker.mjs";
import { wrap, stats } from "./wrap.mjs";

export { Ledger };

const wrapped = wrap(worker);

export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__wrapped/stats") {
      const memoryBytes = globalThis.__goMemory?.buffer.byteLength ?? 0;
      return Response.json({ ...stats, memoryBytes });
    }
    return wrapped.fetch(request, env, ctx);
  },
};
