// Wraps any Worker so that its bindings' calls are delayed or fail, for
// tests (test/wrapped/entry.mjs) and for the benchmark's production-latency
// mode (bench/latency/*.mjs). Only the bindings are wrapped; the Worker's own
// code runs unchanged.
//
//   export default wrap(worker)
//
// wraps worker's default export (anything with fetch(request, env, ctx));
// the env it is given is wrapped once, on the first request, as set by vars:
//   WRAP_DELAYS      JSON, {"ORDERS.put": 30, "LEDGER.commit": 3000}: the
//                    delay before each call of that binding's method ("*"
//                    for any method, or any binding). A delay is
//                      - a number of ms, the same for every call;
//                      - {"p50": 7, "p95": 50, "p99": 250}: drawn afresh for
//                        each call from the distribution sampleDelay describes;
//                      - an array of delays, drawn each and added up (a
//                        Durable Object write: a round trip plus a
//                        durability wait).
//   WRAP_FAULT_RATE  share of calls, 0 to 1, that fail: half of them before
//                    the call is made, half after it took effect
// Bindings wrapped: ORDERS (KV: get, getWithMetadata, put, delete, list),
// LEDGER (a Durable Object namespace: every method of getByName's stubs),
// SETTLE_QUEUE, whose sends settings.dropSettleSends loses, and METRICS
// (Analytics Engine), whose points go on to the binding and, with
// settings.recordPoints, into points: wrangler dev drops them. Queue and
// Cron events get the same wrapped env.

// Counters of the calls made, the faults injected and the simulated
// disconnects (test/wrapped/entry.mjs), for tests that read them back.
// entered counts calls as they start, before their delay, so a test can
// wait for a request to reach storage.
export const stats = { entered: 0, calls: 0, faultsBefore: 0, faultsAfter: 0, disconnects: 0, cancelledRequests: 0, settleSends: 0, dataPoints: 0, failedMessages: 0 };

// points are the data points written to METRICS while
// settings.recordPoints is set, each as writeDataPoint got it.
export const points = [];

// Settings a test may change while the Worker runs; faultRate, once set,
// replaces WRAP_FAULT_RATE.
export const settings = {};

// cancelled.now() tells whether the request making a call has been
// cancelled; the entry that simulates disconnects sets it. A cancelled
// request's calls never settle, as the runtime drops them.
export const cancelled = { now: () => false };
const never = new Promise(() => {});

// wrap returns a Worker that serves worker with its env's bindings wrapped.
// The env is wrapped once and kept: the Go program keeps the bindings of the
// first env it is given, so every request must see the same wrapped ones.
export function wrap(worker) {
  let wrapped;
  const envOf = (env) => (wrapped ??= wrapEnv(env, {
    delays: JSON.parse(env.WRAP_DELAYS || "{}"),
    faultRate: Number(env.WRAP_FAULT_RATE || 0),
  }));
  return {
    fetch: (request, env, ctx) => worker.fetch(request, envOf(env), ctx),
    queue: (batch, env, ctx) => {
      // settings.failQueue, a queue's name, fails each of its messages
      // before the Worker sees it, as a consumer that keeps failing would:
      // the queue retries it, then gives it to its dead-letter queue.
      if (settings.failQueue === batch.queue) {
        for (const message of batch.messages) {
          stats.failedMessages++;
          message.retry({ delaySeconds: 0 });
        }
        return;
      }
      return worker.queue?.(batch, envOf(env), ctx);
    },
    scheduled: (controller, env, ctx) => worker.scheduled?.(controller, envOf(env), ctx),
  };
}

// rolls counts the calls this isolate drew a fault roll for.
let rolls = 0;

// wrapEnv returns a copy of env whose ORDERS and LEDGER bindings wait
// delays[...] before each call and fail a faultRate share of calls.
export function wrapEnv(env, { delays = {}, faultRate: initialFaultRate = 0 } = {}) {
  const around = (binding, method, call) => async (...args) => {
    stats.entered++;
    const spec = delays[`${binding}.${method}`] ?? delays[`${binding}.*`] ?? delays["*"] ?? 0;
    const ms = sampleDelay(spec);
    if (ms > 0) await scheduler.wait(ms);
    if (cancelled.now()) return never;
    stats.calls++;
    const faultRate = settings.faultRate ?? initialFaultRate;
    // crypto, not Math.random: retries of one key kept failing with it,
    // as if its draws repeated. And moved along a golden-ratio sequence by
    // a count of this isolate's calls: with crypto too, a CI run saw one
    // key's retries fail their first read 25 times running over a minute
    // (at 0.2 a call, about one chance in 10^11), so no draw the runtime
    // repeats across requests repeats a roll.
    rolls++;
    const roll = (crypto.getRandomValues(new Uint32Array(1))[0] / 2 ** 32 + rolls * 0.6180339887498949) % 1;
    if (roll < faultRate / 2) {
      stats.faultsBefore++;
      throw new Error(`injected fault before ${binding}.${method}`);
    }
    const result = await call(...args);
    if (cancelled.now()) return never;
    if (roll < faultRate) {
      stats.faultsAfter++;
      throw new Error(`injected fault after ${binding}.${method}`);
    }
    return result;
  };
  const out = { ...env };
  if (env.SETTLE_QUEUE) {
    // settings.dropSettleSends loses every settle message, as a send that
    // failed, or an isolate that died before it, would.
    const queue = env.SETTLE_QUEUE;
    out.SETTLE_QUEUE = {
      send(...a) {
        stats.settleSends++;
        if (settings.dropSettleSends) return Promise.resolve();
        return queue.send(...a);
      },
    };
  }
  if (env.METRICS) {
    const dataset = env.METRICS;
    out.METRICS = {
      writeDataPoint(point) {
        stats.dataPoints++;
        if (settings.recordPoints) points.push(point);
        return dataset.writeDataPoint(point);
      },
    };
  }
  if (env.OMS) {
    const oms = env.OMS;
    out.OMS = { fetch: (...a) => cancellable(oms.fetch(...a)) };
  }
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

// sampleDelay draws one delay, in ms, from spec (see WRAP_DELAYS above).
//
// For {p50, p95, p99} it inverts a quantile function that is piecewise
// linear in log(ms) through (0, p50/2), (0.5, p50), (0.95, p95), (0.99, p99)
// and (1, 2·p99): the draws have exactly the given p50, p95 and p99, a
// right-skewed body like measured latencies, and a tail that stops at twice
// the p99. Equal percentiles are a fixed delay. random() returns a number
// in [0, 1).
export function sampleDelay(spec, random = Math.random) {
  if (typeof spec === "number") return spec;
  if (Array.isArray(spec)) return spec.reduce((sum, s) => sum + sampleDelay(s, random), 0);
  if (spec === null || typeof spec !== "object") return 0;
  const { p50, p95 = p50, p99 = p95 } = spec;
  if (!(p50 > 0)) return 0;
  if (p50 === p95 && p95 === p99) return p50; // a fixed delay
  const points = [[0, p50 / 2], [0.5, p50], [0.95, p95], [0.99, p99], [1, 2 * p99]];
  const u = random();
  for (let i = 1; i < points.length; i++) {
    const [u0, d0] = points[i - 1], [u1, d1] = points[i];
    if (u < u1 || i === points.length - 1) {
      const t = Math.min(1, (u - u0) / (u1 - u0));
      return Math.exp(Math.log(d0) + t * (Math.log(d1) - Math.log(d0)));
    }
  }
  return p50;
}

// Global fetch, which reaches the OMS by its URL, is cancelled with its
// request too.
const fetchOnline = globalThis.fetch;
globalThis.fetch = (...args) => cancellable(fetchOnline(...args));

// cancellable settles as promise does, unless the request that made it has
// been cancelled by then: then never.
async function cancellable(promise) {
  if (cancelled.now()) return never;
  const result = await promise;
  if (cancelled.now()) return never;
  return result;
}
