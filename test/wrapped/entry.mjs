// A test-only entry: the shipped Worker (worker.mjs) with its bindings
// wrapped, so that chosen calls are delayed or fail, and with what
// production does and `wrangler dev` does not: a client that goes away.
// Served with `wrangler dev test/wrapped/entry.mjs` over the project's own
// wrangler.toml, so bindings and environments are the shipped ones, and
// with the compatibility flag nodejs_als. Set by vars:
//   WRAP_DELAYS      JSON, {"ORDERS.put": 30, "LEDGER.commit": 3000}: ms
//                    before each call of that binding's method ("*" for any)
//   WRAP_FAULT_RATE  share of calls, 0 to 1, that fail: half of them before
//                    the call is made, half after it took effect
// The wrapping lives in wrap.mjs, which also takes delay distributions.
//
// Paths of its own:
//   GET  /__wrapped/stats     the calls made, the faults injected, the
//                             simulated disconnects, the Go instance's
//                             linear memory in bytes, the bytes its
//                             heap holds live after a collection
//                             (heapBytes), the JavaScript values it holds
//                             in wasm_exec.js's table, after that
//                             collection (goValues), the objects
//                             the bridge keeps for it (heldObjects), the
//                             calls into Go and out of it so far (intoGo,
//                             outOfGo), the calls out of Go into the
//                             bridge by name (bridgeCalls), the data
//                             points written to METRICS (dataPoints) and
//                             the compiler that built it ("go" or
//                             "tinygo"), as JSON
//   POST /__wrapped/settings  {"faultRate": 0.2} changes the fault rate;
//                             {"dropSettleSends": true} loses every
//                             settle queue message sent from then on;
//                             {"recordPoints": true} records every data
//                             point written to METRICS from then on;
//                             {"failQueue": "edge-orders-settle"} fails
//                             every message of that queue before the
//                             Worker sees it (failedMessages counts
//                             them), until set to ""
//   GET  /__wrapped/points    the data points recorded, as JSON:
//                             [{indexes, blobs, doubles}], in order
//                             (wrangler dev drops them)
//
// A request with the header X-Test-Disconnect-After-Ms: N is served as in
// production when its client disconnects after N ms: the client gets
// nothing more, and the request's pending work, every binding call and
// fetch it makes or is waiting for, is cancelled (it never settles),
// unless the request handed its work to ctx.waitUntil by then.
import { AsyncLocalStorage } from "node:async_hooks";
import worker, { Ledger } from "../../worker.mjs";
import { heldObjects } from "../../workers/bridge.mjs";
import { wrap, stats, settings, cancelled, points } from "./wrap.mjs";

export { Ledger };

// The Go program's linear memory: exported as mem by Go, memory by TinyGo.
// Read from the instance as worker.mjs makes it, so the shipped entry keeps
// no test hook.
// A Proxy, so that instanceof WebAssembly.Instance, which wasm_exec.js
// checks, still holds.
let goInstance, goMemory;
WebAssembly.Instance = new Proxy(WebAssembly.Instance, {
  construct(target, args) {
    goInstance = Reflect.construct(target, args);
    goMemory = goInstance.exports.mem ?? goInstance.exports.memory;
    return goInstance;
  },
});

// The Go program's wasm_exec.js instance, whose table of the JavaScript
// values Go holds shows whether the bridge releases them: a table that
// grows with every request is a leak (TinyGo 0.40 never finalizes one).
// It also counts the crossings between Go and JavaScript: every call into
// Go goes through the program's _enter (see workers/wasm_exec_entry.js), or
// its _resume for a Go timer or a js.FuncOf, and every call out of Go is one of
// wasm_exec.js's syscall/js imports.
let goProgram;
const crossings = { intoGo: 0, outOfGo: 0 };
globalThis.Go = new Proxy(globalThis.Go, {
  construct(target, args) {
    goProgram = Reflect.construct(target, args);
    const resume = goProgram._resume.bind(goProgram);
    goProgram._resume = () => {
      crossings.intoGo++;
      return resume();
    };
    if (goProgram._enter) {
      const enter = goProgram._enter.bind(goProgram);
      goProgram._enter = (...a) => {
        crossings.intoGo++;
        return enter(...a);
      };
    }
    const imports = goProgram.importObject.gojs ?? goProgram.importObject.go ?? {};
    for (const [name, f] of Object.entries(imports)) {
      if (!name.startsWith("syscall/js.") || name === "syscall/js.finalizeRef") continue;
      imports[name] = (...a) => {
        crossings.outOfGo++;
        return f(...a);
      };
    }
    return goProgram;
  },
});

// The calls out of Go into the bridge, by name: a test tells a request's
// data point (writeDataPoint) from its other calls out.
const bridgeCalls = {};
const bridge = globalThis.__goBridge;
for (const [name, f] of Object.entries(bridge)) {
  if (typeof f !== "function") continue;
  bridge[name] = (...a) => {
    bridgeCalls[name] = (bridgeCalls[name] ?? 0) + 1;
    return f.apply(bridge, a);
  };
}

// Each disconnecting request's state, found from any call its work makes.
const requests = new AsyncLocalStorage();
cancelled.now = () => requests.getStore()?.cancelled === true;

const wrapped = wrap(worker);

export default {
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/__wrapped/stats") {
      // Under standard Go a value Go dropped stays in wasm_exec.js's table
      // until the collector finalizes it: collect first, so the count is
      // what Go holds. The collection answers the live heap's bytes.
      // The collection is the entry's own call: it is not counted.
      const counted = { ...crossings };
      const heapBytes = globalThis.__goCollect?.() ?? 0;
      Object.assign(crossings, counted);
      const goValues = goProgram ? goProgram._values.length - goProgram._idPool.length : 0;
      const compiler = goMemory ? (goInstance.exports.mem ? "go" : "tinygo") : "";
      return Response.json({ ...stats, ...crossings, bridgeCalls, memoryBytes: goMemory?.buffer.byteLength ?? 0, heapBytes, goValues, heldObjects: heldObjects(), compiler });
    }
    if (path === "/__wrapped/points") {
      return Response.json(points);
    }
    if (path === "/__wrapped/settings" && request.method === "POST") {
      Object.assign(settings, await request.json());
      return Response.json(settings);
    }
    const after = Number(request.headers.get("X-Test-Disconnect-After-Ms") || 0);
    if (after > 0) return disconnecting(request, env, ctx, after);
    return wrapped.fetch(request, env, ctx);
  },
  queue: (batch, env, ctx) => wrapped.queue(batch, env, ctx),
  scheduled: (controller, env, ctx) => wrapped.scheduled(controller, env, ctx),
};

// disconnecting serves request, whose client goes away after ms.
function disconnecting(request, env, ctx, ms) {
  const state = { cancelled: false, kept: 0 };
  const keep = {
    waitUntil(promise) {
      state.kept++;
      ctx.waitUntil(promise);
    },
    passThroughOnException() {
      ctx.passThroughOnException();
    },
  };
  return requests.run(state, () => {
    const served = wrapped.fetch(request, env, keep);
    const gone = scheduler.wait(ms).then(() => {
      stats.disconnects++;
      if (state.kept === 0) {
        state.cancelled = true;
        stats.cancelledRequests++;
      }
      // Nobody reads this: the client is gone.
      return new Response(null, { status: 499 });
    });
    return Promise.race([served, gone]);
  });
}
