// The Worker's JavaScript entry. It starts the Go program once per isolate,
// hands it every request, and exports the ledger's Durable Object class,
// whose methods call into the same Go program. All decisions are made in Go.
import { DurableObject } from "cloudflare:workers";
import "./build/wasm_exec.js";
import "./workers/bridge.mjs";
import program from "./build/edge-orders.wasm";

// The functions the Go program publishes when it starts (workers/*_js.go).
let fetchInGo, objectInGo, alarmInGo, queueInGo, scheduledInGo;

function startGo() {
  const go = new Go();
  const startedAt = performance.now();
  const instance = new WebAssembly.Instance(program, go.importObject);
  // run() executes main until it blocks, so the functions exist when it
  // returns. If the program ever exits, the next call starts a fresh one.
  go.run(instance).finally(() => { fetchInGo = objectInGo = alarmInGo = queueInGo = scheduledInGo = undefined; });
  fetchInGo = globalThis.__goFetch;
  objectInGo = globalThis.__goObject;
  alarmInGo = globalThis.__goAlarm;
  queueInGo = globalThis.__goQueue;
  scheduledInGo = globalThis.__goScheduled;
  console.log(JSON.stringify({ event: "go_started", ms: performance.now() - startedAt }));
}

export default {
  fetch(request, env, ctx) {
    if (!fetchInGo) startGo();
    const response = new Promise((resolve) => fetchInGo(request, env, ctx, resolve));
    // In production a client that disconnects cancels its request's pending
    // work, but not what waitUntil holds: the whole lifecycle runs under it,
    // so an order the gateway accepted is stored even if nobody waits.
    ctx.waitUntil(response);
    return response;
  },

  // The settle queue (KV mode): each message names a key whose outcome is
  // unknown; Go settles it, then the message is acknowledged or retried.
  async queue(batch, env, ctx) {
    if (!queueInGo) startGo();
    await Promise.all(batch.messages.map((message) => new Promise((resolve) => {
      queueInGo(String(message.body), env, ctx, (failure, retrySeconds) => {
        if (failure === undefined) message.ack();
        else message.retry({ delaySeconds: retrySeconds });
        resolve();
      });
    })));
  },

  // The Cron Trigger (KV mode): settles the keys whose message was lost.
  async scheduled(controller, env, ctx) {
    if (!scheduledInGo) startGo();
    await settled((done) => scheduledInGo(env, ctx, done));
  },
};

// settled runs start(done) and resolves once Go calls done with nothing,
// or rejects with the failure it names.
function settled(start) {
  return new Promise((resolve, reject) => {
    start((failure) => (failure === undefined ? resolve() : reject(new Error(failure))));
  });
}

// callGo runs a Durable Object method in Go, synchronously: no await, so
// the object runs it whole and its SQL writes commit together.
function callGo(cls, method, ctx, args) {
  if (!objectInGo) startGo();
  const result = objectInGo(cls, method, ctx, args);
  if (result instanceof Error) throw result;
  return result;
}

// The ledger (ledger/object.go): claims and receipts in SQLite.
export class Ledger extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    callGo("Ledger", "open", ctx, []);
  }
  claim(...args) { return callGo("Ledger", "claim", this.ctx, args); }
  commit(...args) { return callGo("Ledger", "commit", this.ctx, args); }
  release(...args) { return callGo("Ledger", "release", this.ctx, args); }
  lookup(...args) { return callGo("Ledger", "lookup", this.ctx, args); }
  // Deletes expired rows; the alarm runs it, and so can a caller (alarm
  // itself cannot be called over RPC).
  sweep() { return callGo("Ledger", "sweep", this.ctx, []); }
  // Sweeps when due, and settles the keys due for the settler; it awaits
  // the gateway, so it is the one method that is not synchronous.
  alarm() {
    if (!alarmInGo) startGo();
    return settled((done) => alarmInGo("Ledger", this.ctx, this.env, done));
  }
  stats() { return callGo("Ledger", "stats", this.ctx, []); }
}
