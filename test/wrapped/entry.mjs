// A test-only entry: the shipped Worker (worker.mjs) with its bindings
// wrapped, so that chosen calls are delayed or fail. Served with
// `wrangler dev test/wrapped/entry.mjs` over the project's own wrangler.toml,
// so bindings and environments are the shipped ones. Set by vars:
//   WRAP_DELAYS      JSON, {"ORDERS.put": 30, "LEDGER.commit": 3000}: ms
//                    before each call of that binding's method ("*" for any)
//   WRAP_FAULT_RATE  share of calls, 0 to 1, that fail: half of them before
//                    the call is made, half after it took effect
import worker, { Ledger } from "../../worker.mjs";
export { Ledger };

let wrapped; // the wrapped env, made once: the Go program keeps the first env's bindings

export default {
  fetch(request, env, ctx) {
    wrapped ??= wrapEnv(env);
    return worker.fetch(request, wrapped, ctx);
  },
};

// Counters the tests read back through console output.
const stats = { calls: 0, faultsBefore: 0, faultsAfter: 0 };

function wrapEnv(env) {
  const delays = JSON.parse(env.WRAP_DELAYS || "{}");
  const faultRate = Number(env.WRAP_FAULT_RATE || 0);
  const around = (binding, method, call) => async (...args) => {
    const ms = delays[`${binding}.${method}`] ?? delays[`${binding}.*`] ?? delays["*"] ?? 0;
    if (ms > 0) await scheduler.wait(ms);
    stats.calls++;
    const roll = Math.random();
    if (roll < faultRate / 2) {
      stats.faultsBefore++;
      throw new Error(`injected fault before ${binding}.${method}`);
    }
    const result = await call(...args);
    if (roll < faultRate) {
      stats.faultsAfter++;
      throw new Error(`injected fault after ${binding}.${method}`);
    }
    return result;
  };
  const out = { ...env };
  if (env.ORDERS) {
    const kv = env.ORDERS;
    out.ORDERS = {};
    for (const m of ["get", "getWithMetadata", "put", "delete", "list"]) {
      out.ORDERS[m] = around("ORDERS", m, (...a) => kv[m](...a));
    }
  }
  if (env.LEDGER) {
    const ns = env.LEDGER;
    out.LEDGER = {
      getByName(name) {
        const stub = ns.getByName(name);
        return new Proxy({}, {
          get: (_, method) => around("LEDGER", method, (...a) => stub[method](...a)),
        });
      },
    };
  }
  return out;
}
