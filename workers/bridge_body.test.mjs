// A request body over its limit is read and dropped up to requestDrain
// more before the rest is cancelled, so that a client still sending reads
// its 413 (readAtMost).
import { test } from "node:test";
import assert from "node:assert/strict";
import { drainWait, readAtMost, readRequestBody, requestDrain } from "./bridge.mjs";

// chunked is a stream of n chunks of size bytes, which counts the chunks
// its reader pulled and whether it was cancelled.
function chunked(n, size) {
  const seen = { pulled: 0, cancelled: false };
  const stream = new ReadableStream({
    pull(controller) {
      if (seen.pulled === n) return controller.close();
      seen.pulled++;
      controller.enqueue(new Uint8Array(size));
    },
    cancel() {
      seen.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { stream, seen };
}

test("a body within its limit is read whole", async () => {
  const { stream, seen } = chunked(4, 1000);
  const body = await readAtMost(stream, 4000, requestDrain);
  assert.equal(body.length, 4000);
  assert.equal(seen.cancelled, false);
});

test("a body somewhat over its limit is read to its end and dropped", async () => {
  const { stream, seen } = chunked(64, 4096);
  assert.equal(await readAtMost(stream, 64 << 10, requestDrain), null);
  assert.equal(seen.pulled, 64);
  assert.equal(seen.cancelled, false, "cancelled a body within the drain");
});

test("a body far over its limit is cancelled past the drain", async () => {
  const { stream, seen } = chunked(1000, 4096);
  assert.equal(await readAtMost(stream, 64 << 10, requestDrain), null);
  assert.equal(seen.cancelled, true);
  assert.ok(seen.pulled * 4096 <= (64 << 10) + requestDrain + 2 * 4096, `read ${seen.pulled} chunks`);
});

test("an answer over its limit is cancelled at once", async () => {
  const { stream, seen } = chunked(100, 4096);
  assert.equal(await readAtMost(stream, 8192), null);
  assert.equal(seen.cancelled, true);
  assert.ok(seen.pulled <= 4, `read ${seen.pulled} chunks`);
});

test("a body declared over its limit is not read, but dropped up to the drain", async () => {
  for (const [n, cancelled] of [[64, false], [1000, true]]) {
    const { stream, seen } = chunked(n, 4096);
    const request = new Request("http://127.0.0.1/", { method: "POST", body: stream, duplex: "half", headers: { "Content-Length": String(n * 4096) } });
    assert.equal(await readRequestBody(request, 64 << 10), null);
    assert.equal(seen.cancelled, cancelled, `${n} chunks: cancelled ${seen.cancelled}`);
    assert.ok(seen.pulled * 4096 <= requestDrain + 2 * 4096, `read ${seen.pulled} chunks of a body declared too large`);
  }
});

test("a body declared within its limit is read whole", async () => {
  const { stream } = chunked(4, 1000);
  const request = new Request("http://127.0.0.1/", { method: "POST", body: stream, duplex: "half", headers: { "Content-Length": "4000" } });
  assert.equal((await readRequestBody(request, 4000)).length, 4000);
});

test("a client that stalls or leaves mid-drain still gets its 413, within the drain's wait", async () => {
  drainWait.ms = 50;
  try {
    for (const fail of [false, true]) {
      let sent = 0;
      const stalls = new ReadableStream({
        pull(controller) {
          if (sent === 20) {
            if (fail) controller.error(new TypeError("Network connection lost."));
            return new Promise(() => {}); // nothing more, ever
          }
          sent++;
          controller.enqueue(new Uint8Array(4096));
        },
      }, { highWaterMark: 0 });
      const started = Date.now();
      assert.equal(await readAtMost(stalls, 8192, requestDrain), null, fail ? "a client that left" : "a client that stalled");
      assert.ok(Date.now() - started < 1000, `the drain took ${Date.now() - started} ms`);
    }
  } finally {
    drainWait.ms = 2000;
  }
});
