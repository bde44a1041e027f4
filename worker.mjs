// The Worker's JavaScript entry. It starts the Go program once per isolate,
// hands it every event, and exports the ledger's Durable Object class,
// whose methods and alarm call into the same Go program. All decisions are
// made in Go. The entry keeps each event's objects in the bridge's table
// (workers/bridge.mjs) and hands Go their number and a frame of bytes:
// Go never holds a JavaScript object.
import { DurableObject } from "cloudflare:workers";
import "./build/wasm_exec.js";
import { hold, drop, writeFrame, encodeFrame, requestHead, readResult, answered } from "./workers/bridge.mjs";
import program from "./build/edge-orders.wasm";

// The Go program, and the functions it publishes when it starts
// (workers/*_js.go).
let go, goFetch, goObject, goAlarm, goQueue, goScheduled;

// ready starts the Go program unless one runs: the first event's, or the
// next one's after a trap ended it (workers/wasm_exec_entry.js).
function ready() {
  if (go?.exited === false) return;
  // Nothing keeps the program that ended, nor its memory, while the next
  // one is made: its published functions hold it.
  goFetch = goObject = goAlarm = goQueue = goScheduled = undefined;
  for (const name of ["__goFetch", "__goObject", "__goAlarm", "__goQueue", "__goScheduled"]) delete globalThis[name];
  if (go) go._inst = undefined;
  go = new Go();
  const startedAt = performance.now();
  const instance = new WebAssembly.Instance(program, go.importObject);
  // run() executes main until it blocks, so the functions exist when it
  // returns, unless the program trapped first (a TinyGo panic in an
  // initialiser, memory exhausted), which only rejects what run returns:
  // then it is ended as a trap ends it, this event fails, and the next
  // starts another.
  const running = go.run(instance);
  ({ __goFetch: goFetch, __goObject: goObject, __goAlarm: goAlarm, __goQueue: goQueue, __goScheduled: goScheduled } = globalThis);
  if (!goFetch) {
    const failed = new Error("edge-orders: the Go program trapped while it started");
    running.catch((cause) => console.error(JSON.stringify({ event: "go_start_failed", error: String(cause?.stack ?? cause) })));
    go._end(failed);
    throw failed;
  }
  console.log(JSON.stringify({ event: "go_started", ms: performance.now() - startedAt }));
}

// done returns a function that settles a promise as Go's task ends:
// resolved with nothing, or rejected with the failure Go names.
const done = (resolve, reject) => (failure) => (failure === "" ? resolve() : reject(new Error(failure)));

export default {
  fetch(request, env, ctx) {
    ready();
    const response = new Promise((resolve) => {
      goFetch(hold({ request, env, ctx, resolve }), writeFrame(requestHead(request)));
    }).then(answered);
    // In production a client that disconnects cancels its request's pending
    // work, but not what waitUntil holds: the whole lifecycle runs under it,
    // so an order the gateway accepted is stored even if nobody waits.
    ctx.waitUntil(response);
    return response;
  },

  // The settle queue and its dead-letter queue (KV mode): each message
  // names a key; Go settles it, or records the dead letter, then the
  // message is acknowledged or retried after the delay Go names. Go tells
  // the queues apart by name, and a letter by the message's id.
  async queue(batch, env, ctx) {
    await Promise.all(batch.messages.map((message) => new Promise((resolve) => {
      ready();
      const settled = (failure, retrySeconds) => {
        if (failure === "") message.ack();
        else message.retry(retrySeconds === "" ? {} : { delaySeconds: Number(retrySeconds) });
        resolve();
      };
      goQueue(hold({ env, ctx, done: settled }), writeFrame(encodeFrame([String(message.body), batch.queue, message.id, message.attempts])));
    })));
  },

  // The Cron Trigger (KV mode): settles the keys whose message was lost.
  async scheduled(controller, env, ctx) {
    ready();
    await new Promise((resolve, reject) => goScheduled(hold({ env, ctx, done: done(resolve, reject) })));
  },
};

const decoder = new TextDecoder();

// callGo runs a Durable Object method in Go, synchronously: no await, so
// the object runs it whole and its SQL writes commit together. Its one
// argument and its one result are JSON text.
function callGo(cls, method, ctx, arg) {
  ready();
  const id = hold(ctx);
  try {
    const n = goObject(id, writeFrame(encodeFrame([cls, method, arg ?? ""])));
    const [result] = readResult(n < 0 ? -1 - n : n);
    const text = decoder.decode(result);
    if (n < 0) throw new Error(text);
    return text;
  } finally {
    drop(id);
  }
}

// The ledger (ledger/object.go): claims and receipts in SQLite.
export class Ledger extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    callGo("Ledger", "open", ctx);
  }
  claim(arg) { return callGo("Ledger", "claim", this.ctx, arg); }
  commit(arg) { return callGo("Ledger", "commit", this.ctx, arg); }
  release(arg) { return callGo("Ledger", "release", this.ctx, arg); }
  lookup(arg) { return callGo("Ledger", "lookup", this.ctx, arg); }
  // The admin API's: the keys that need attention, and a final outcome's purge.
  list(arg) { return callGo("Ledger", "list", this.ctx, arg); }
  purge(arg) { return callGo("Ledger", "purge", this.ctx, arg); }
  // Deletes expired rows; the alarm runs it, and so can a caller (alarm
  // itself cannot be called over RPC).
  sweep() { return callGo("Ledger", "sweep", this.ctx); }
  stats() { return callGo("Ledger", "stats", this.ctx); }
  // Sweeps when due, and settles the keys due for the settler; it awaits
  // the gateway, so it is the one method that is not synchronous.
  alarm() {
    ready();
    return new Promise((resolve, reject) => {
      goAlarm(hold({ storage: this.ctx.storage, env: this.env, done: done(resolve, reject) }), writeFrame(encodeFrame(["Ledger"])));
    });
  }
}
