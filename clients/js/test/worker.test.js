// End-to-end tests of the client against the real Worker under wrangler
// dev and the Go fake OMS. The Go suite starts them (test/jsclient_test.go,
// TestJSClient, in make test) and passes:
//   EDGE_ORDERS_URL          the Worker's address, with OMS_URL set to the fake OMS
//   EDGE_ORDERS_OMS_CONTROL  the fake OMS's control server (script a symbol, read its calls)
//   EDGE_ORDERS_MODE         kv or ledger, for the test names
// Without EDGE_ORDERS_URL they skip.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import {
  Client,
  InProgressError,
  InvalidOrderError,
  KeyReusedError,
  NotFoundError,
  OutcomeUnknownError,
  OutcomeUnresolvedError,
  RejectedError,
  newKey,
} from "../index.js";

const url = process.env.EDGE_ORDERS_URL;
const control = process.env.EDGE_ORDERS_OMS_CONTROL;
const mode = process.env.EDGE_ORDERS_MODE ?? "";
const skip = url ? false : "set EDGE_ORDERS_URL (make test runs these through TestJSClient)";

// The fake OMS's reason for a rejection (test/oms_test.go, rejectReason).
const rejectReason = "insufficient buying power";

const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// The fake OMS, through its control server.
const oms = {
  // script sets what the symbol's next calls do: accept, reject,
  // failBefore (503 without acting), drop (accept, then drop the
  // connection), ...; then accept.
  async script(symbol, ...steps) {
    const res = await fetch(`${control}/script`, { method: "POST", body: JSON.stringify({ symbol, steps }) });
    assert.equal(res.status, 204, await res.text());
  },
  // calls returns the order id of every call for symbol, and those the
  // fake placed.
  async calls(symbol) {
    const res = await fetch(`${control}/calls?symbol=${encodeURIComponent(symbol)}`);
    return res.json();
  },
};

let n = 0;
// symbol returns a symbol no other test uses, so the fake OMS's record of
// it is this test's alone.
function symbol(name) {
  return `JS-${mode}-${name}-${process.pid}-${Date.now()}-${n++}`;
}

// wantOneOrder checks that every OMS call for sym carried orderId, and the
// OMS placed it: one order at the OMS, whatever the number of calls.
async function wantOneOrder(sym, orderId, wantCalls) {
  const { orderIds, accepted } = await oms.calls(sym);
  assert.ok(orderIds.length > 0, `no OMS call for ${sym}`);
  assert.deepEqual([...new Set(orderIds)], [orderId], `OMS order ids ${orderIds}, want only ${orderId}`);
  assert.deepEqual(accepted, [orderId], "the OMS placed the receipt's order");
  if (wantCalls !== undefined) assert.equal(orderIds.length, wantCalls, "OMS calls");
  return orderIds.length;
}

const client = new Client(url ?? "http://127.0.0.1:1", { baseDelayMs: 50 });

describe(`the client against the Worker (${mode || "none"})`, { skip, concurrency: true, timeout: 60_000 }, () => {
  test("a new order is placed once; its retry and lookup replay the same receipt", async () => {
    const sym = symbol("placed");
    const order = { symbol: sym, side: "buy", quantity: 100 };
    const key = newKey();
    const first = await client.submit(order, { key });
    assert.deepEqual({ status: first.status, replay: first.replay, attempts: first.attempts, key: first.key }, { status: 201, replay: false, attempts: 1, key });
    assert.match(first.receipt.orderId, uuidV4);
    assert.deepEqual({ symbol: first.receipt.symbol, side: first.receipt.side, quantity: first.receipt.quantity }, order);
    const again = await client.submit(order, { key });
    assert.equal(again.replay, true);
    assert.equal(again.status, 200);
    assert.equal(again.raw, first.raw, "the replay is the receipt byte for byte");
    const looked = await client.lookup(key);
    assert.equal(looked.raw, first.raw);
    // The ledger says when the receipt expires: with an OMS, past every
    // settle attempt and a TTL from acceptance (a day each, wrangler.toml's);
    // KV does not say, and no submission is told.
    const expires = mode === "ledger" ? new Date(Date.parse(first.receipt.acceptedAt) + 2 * 86_400_000).toISOString() : undefined;
    assert.equal(looked.expiresAt?.toISOString(), expires);
    assert.deepEqual([first.expiresAt, again.expiresAt], [null, null]);
    await wantOneOrder(sym, first.receipt.orderId, 1);
  });

  test("five submits at once under one key place one order", async () => {
    const sym = symbol("concurrent");
    const key = newKey();
    const results = await Promise.all(Array.from({ length: 5 }, () => client.submit({ symbol: sym, side: "sell", quantity: 7 }, { key })));
    assert.equal(new Set(results.map((r) => r.raw)).size, 1, "one receipt");
    assert.equal(results.filter((r) => !r.replay).length, 1, "one of them placed it");
    await wantOneOrder(sym, results[0].receipt.orderId, 1);
  });

  test("a lost response is retried under the same key and replays the one order", async () => {
    const sym = symbol("lost-response");
    let calls = 0;
    // The Worker answers the first request, but its answer never arrives.
    const lossy = new Client(url, {
      baseDelayMs: 10,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        if (++calls > 1) return res;
        await res.text();
        throw new TypeError("network connection lost");
      },
    });
    const res = await lossy.submit({ symbol: sym, side: "buy", quantity: 1 });
    assert.deepEqual({ replay: res.replay, attempts: res.attempts, status: res.status }, { replay: true, attempts: 2, status: 200 });
    await wantOneOrder(sym, res.receipt.orderId, 1);
  });

  test("the OMS's answer lost: outcome_unknown is retried under the key, and the one order stands", async () => {
    const sym = symbol("oms-answer-lost");
    await oms.script(sym, "drop");
    const retries = [];
    const res = await client.submit({ symbol: sym, side: "buy", quantity: 3 }, { onRetry: (e) => retries.push(e.error) });
    assert.ok(retries[0] instanceof OutcomeUnknownError, `first retry after ${retries[0]?.name}`);
    assert.equal(retries[0].orderId, res.receipt.orderId, "the unknown outcome named the order the receipt names");
    assert.ok(retries[0].retryAfterMs >= 1000, "Retry-After is at least a second");
    // The drop, then the client's retry or the settler: one order id.
    const calls = await wantOneOrder(sym, res.receipt.orderId);
    assert.ok(calls >= 2, `${calls} OMS calls, want the dropped one and another`);
  });

  test("still unknown at the deadline: the error names the order the Worker is settling, and a retry under the key places it once", async () => {
    const sym = symbol("deadline");
    // Every call fails until the script changes: the client's, and the
    // settler's (1 s after the first, then 2 s, 4 s ...).
    await oms.script(sym, ...Array(50).fill("failBefore"));
    const key = newKey();
    await assert.rejects(client.lookup(key), NotFoundError); // the key's storage, warmed up
    // The deadline leaves the first attempt time to answer under load (in
    // KV mode its release waits out KV's one write a second to the key):
    // a first attempt cut off says nothing of the order.
    const err = await client.submit({ symbol: sym, side: "buy", quantity: 5 }, { key, deadline: Date.now() + 8000 }).catch((e) => e);
    assert.ok(err instanceof OutcomeUnknownError && !(err instanceof OutcomeUnresolvedError), `${err}`);
    assert.deepEqual({ key: err.key, retryable: err.retryable, status: err.status }, { key, retryable: true, status: 503 });
    assert.match(err.orderId, uuidV4);
    assert.ok(err.omsAttempts >= 1, `omsAttempts ${err.omsAttempts}`);
    assert.ok(err.nextAttemptAt instanceof Date, "nextAttemptAt is a Date");
    // A lookup sees it being settled, under the same order id: in progress
    // while the settler's own call holds the key, unknown between calls.
    let settling;
    for (let i = 0; i < 20; i++) {
      settling = await client.lookup(key, { maxAttempts: 1 }).catch((e) => e);
      if (!(settling instanceof InProgressError)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(settling instanceof OutcomeUnknownError, `${settling}`);
    assert.equal(settling.orderId, err.orderId);
    // The OMS answers again: the same order under the same key is placed
    // once, by this retry or by the settler.
    await oms.script(sym);
    const res = await client.submit({ symbol: sym, side: "buy", quantity: 5 }, { key, maxAttempts: 20 });
    assert.equal(res.receipt.orderId, err.orderId, "the key kept its order id");
    await wantOneOrder(sym, err.orderId);
  });

  test("a rejection is final: typed, with its order and reason, and replayed without calling the OMS again", async () => {
    const sym = symbol("rejected");
    await oms.script(sym, "reject");
    const order = { symbol: sym, side: "buy", quantity: 1_000_000 };
    const key = newKey();
    const err = await client.submit(order, { key }).catch((e) => e);
    assert.ok(err instanceof RejectedError, `${err}`);
    assert.deepEqual({ reason: err.reason, attempts: err.attempts, retryable: err.retryable }, { reason: rejectReason, attempts: 1, retryable: false });
    assert.match(err.orderId, uuidV4);
    const again = await client.submit(order, { key }).catch((e) => e);
    assert.ok(again instanceof RejectedError);
    assert.equal(again.body, err.body, "the replay is the same body");
    assert.equal(again.headers.get("Idempotent-Replay"), "true");
    const looked = await client.lookup(key).catch((e) => e);
    assert.ok(looked instanceof RejectedError);
    const { orderIds } = await oms.calls(sym);
    assert.deepEqual(orderIds, [err.orderId], "one OMS call");
  });

  test("an invalid order is not retried, and a corrected order may use its key", async () => {
    const sym = symbol("invalid");
    const key = newKey();
    const err = await client.submit({ symbol: sym, side: "hold", quantity: 1 }, { key }).catch((e) => e);
    assert.ok(err instanceof InvalidOrderError, `${err}`);
    assert.equal(err.attempts, 1);
    const res = await client.submit({ symbol: sym, side: "buy", quantity: 1 }, { key });
    // 201, or a 200 replay if a slow OMS made the first attempt's outcome
    // unknown and the settler stored it before the retry.
    assert.ok(res.status === 201 || (res.status === 200 && res.attempts > 1), `status ${res.status} after ${res.attempts} attempts`);
    await wantOneOrder(sym, res.receipt.orderId, 1);
  });

  test("a key reused for another order is refused, and the first order stands alone", async () => {
    const sym = symbol("reused");
    const key = newKey();
    const first = await client.submit({ symbol: sym, side: "buy", quantity: 1 }, { key });
    const err = await client.submit({ symbol: sym, side: "buy", quantity: 2 }, { key }).catch((e) => e);
    assert.ok(err instanceof KeyReusedError, `${err}`);
    assert.equal(err.attempts, 1);
    await wantOneOrder(sym, first.receipt.orderId, 1);
  });

  test("a lookup of a key never used is not found, and places nothing", async () => {
    const err = await client.lookup(newKey()).catch((e) => e);
    assert.ok(err instanceof NotFoundError, `${err}`);
    assert.equal(err.attempts, 1);
  });
});
