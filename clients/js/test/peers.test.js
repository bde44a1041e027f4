// Unit tests of the client against broken or hostile peers: redirects,
// huge or endless Retry-After, answers that stall, bodies without end, and
// tokens a header cannot carry. Servers listen on 127.0.0.1 only; every
// test is bounded in time.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { once } from "node:events";

import {
  Client,
  DEFAULT_CALL_TIMEOUT_MS,
  MAX_RESPONSE_BYTES,
  MAX_RETRY_WAIT_MS,
  NetworkError,
  StorageUnavailableError,
  UnexpectedResponseError,
} from "../index.js";

const order = { symbol: "MSFT", side: "buy", quantity: 100 };
const receipt = '{"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e","status":"accepted","symbol":"MSFT","side":"buy","quantity":100,"acceptedAt":"2026-01-02T03:04:05.678Z"}';
const token = "s3cret-0123456789abcdef";
const bounded = { timeout: 20_000 };

// serve starts handler on a free loopback port until t ends, and returns
// its base URL.
async function serve(t, handler) {
  const server = http.createServer(handler);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${server.address().port}`;
}

// recorder is a server that answers every request with a receipt and
// records each one's method and Authorization: where a redirect points.
async function recorder(t) {
  const seen = [];
  const url = await serve(t, (req, res) => {
    seen.push({ method: req.method, authorization: req.headers.authorization ?? "" });
    res.writeHead(201, { "Content-Type": "application/json" }).end(receipt);
  });
  return { url, seen };
}

// failure awaits promise and returns what it rejects with.
async function failure(promise) {
  return promise.then(
    (res) => assert.fail(`resolved with ${JSON.stringify(res)}, want a rejection`),
    (e) => e,
  );
}

// problem503 is storage_unavailable with extra members.
function problem503(extra = {}) {
  return JSON.stringify({ type: "tag:edge-orders,2026:storage_unavailable", title: "t", status: 503, detail: "d", error: "storage_unavailable", ...extra });
}

test("redirects are refused: an unexpected response, and nothing sent where they point", bounded, async (t) => {
  const cases = [
    ["307 to another origin that answers a receipt", 307, false],
    ["308 to another origin that answers a receipt", 308, false],
    ["302 to another origin", 302, false],
    ["301 to a path of the Worker", 301, true],
  ];
  for (const [name, status, sameHost] of cases) {
    await t.test(name, async (t) => {
      const elsewhere = await recorder(t);
      let moved = 0; // requests that followed the redirect to /moved
      const worker = await serve(t, (req, res) => {
        if (req.url === "/moved") {
          moved++;
          res.writeHead(201, { "Content-Type": "application/json" }).end(receipt);
          return;
        }
        res.writeHead(status, { Location: sameHost ? "/moved" : `${elsewhere.url}/orders` }).end();
      });
      const c = new Client(worker, { token, baseDelayMs: 1, maxDelayMs: 1 });
      for (const [call, run] of [["submit", () => c.submit(order, { key: "k" })], ["lookup", () => c.lookup("k")]]) {
        const err = await failure(run());
        assert.ok(err instanceof UnexpectedResponseError, `${call}: ${err}`);
        assert.deepEqual(
          { status: err.status, attempts: err.attempts, retryable: err.retryable, location: Boolean(err.headers?.get("Location")) },
          { status, attempts: 1, retryable: false, location: true },
          call,
        );
        assert.ok(!err.message.includes(token), `${call}: the message ${err.message} carries the token`);
      }
      assert.deepEqual(elsewhere.seen, [], "requests where the redirect points");
      assert.equal(moved, 0, "requests to the Worker's /moved");
    });
  }
});

test("a browser's opaque redirect is an unexpected response, and every request asks for one", bounded, async () => {
  const inits = [];
  const fetch = async (url, init) => {
    inits.push(init);
    // What a browser's fetch answers a cross-origin redirect with under redirect: "manual".
    return { type: "opaqueredirect", status: 0, ok: false, headers: new Headers(), body: null };
  };
  const err = await failure(new Client("http://worker.test", { fetch, baseDelayMs: 1, maxDelayMs: 1 }).submit(order, { key: "k" }));
  assert.ok(err instanceof UnexpectedResponseError, `${err}`);
  assert.deepEqual({ attempts: err.attempts, retryable: err.retryable }, { attempts: 1, retryable: false });
  assert.deepEqual(inits.map((i) => i.redirect), ["manual"]);
});

test("Retry-After is capped at MAX_RETRY_WAIT_MS", bounded, async (t) => {
  const thousandDays = String(1000 * 24 * 3600);
  const cases = [
    ["Retry-After of 1000 days in seconds", { "Retry-After": thousandDays }, {}],
    ["Retry-After as a date in the year 9999", { "Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT" }, {}],
    ["the problem's retryAfter of 1000 days without the header", {}, { retryAfter: Number(thousandDays) }],
  ];
  for (const [name, headers, extra] of cases) {
    await t.test(name, async () => {
      const fetch = async () => new Response(problem503(extra), { status: 503, headers: { "Content-Type": "application/problem+json", ...headers } });
      const err = await failure(new Client("http://worker.test", { fetch, maxAttempts: 1 }).submit(order));
      assert.equal(err.retryAfterMs, MAX_RETRY_WAIT_MS);

      // With a call timeout far past the cap, the wait announced is the cap.
      const controller = new AbortController();
      const waits = [];
      const c = new Client("http://worker.test", { fetch, baseDelayMs: 1, maxDelayMs: 1, callTimeoutMs: 24 * 3600_000 });
      await failure(c.submit(order, { signal: controller.signal, onRetry: (e) => (waits.push(e.waitMs), controller.abort()) }));
      assert.deepEqual(waits, [MAX_RETRY_WAIT_MS]);
    });
  }
  await t.test("a maxDelayMs of an hour", async () => {
    const fetch = async () => new Response(problem503(), { status: 503 });
    const controller = new AbortController();
    const waits = [];
    const c = new Client("http://worker.test", { fetch, baseDelayMs: 3600_000, maxDelayMs: 3600_000, callTimeoutMs: 24 * 3600_000, random: () => 0.9999999 });
    await failure(c.submit(order, { signal: controller.signal, onRetry: (e) => (waits.push(e.waitMs), controller.abort()) }));
    assert.deepEqual(waits, [MAX_RETRY_WAIT_MS]);
  });
  await t.test("with default options a Retry-After past the call's timeout ends the call at once", async () => {
    const fetch = async () => new Response(problem503(), { status: 503, headers: { "Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT" } });
    const controller = new AbortController();
    const waits = [];
    const err = await failure(new Client("http://worker.test", { fetch }).submit(order, { signal: controller.signal, onRetry: (e) => (waits.push(e.waitMs), controller.abort()) }));
    assert.ok(err instanceof StorageUnavailableError, `${err}`);
    assert.deepEqual({ attempts: err.attempts, waits }, { attempts: 1, waits: [] }, `a wait of ${MAX_RETRY_WAIT_MS} ms passes the ${DEFAULT_CALL_TIMEOUT_MS} ms timeout`);
  });
});

test("a stalled answer ends at the call's timeout", bounded, async (t) => {
  // The clock reads t0 when the call starts and want - left ms later at
  // every reading after: the attempt's timer then has left ms to run, if
  // the call's deadline is want ms from its start.
  const left = 100;
  const cases = [
    ["with default options, at DEFAULT_CALL_TIMEOUT_MS", {}, () => ({}), DEFAULT_CALL_TIMEOUT_MS, `${DEFAULT_CALL_TIMEOUT_MS} ms timeout`],
    ["at a caller's longer callTimeoutMs", { callTimeoutMs: 120_000 }, () => ({}), 120_000, "120000 ms timeout"],
    ["at a call's deadline before the timeout", {}, (t0) => ({ deadline: t0 + 5_000 }), 5_000, "deadline passed"],
  ];
  for (const [name, options, callOptions, want, wantMessage] of cases) {
    await t.test(name, { timeout: 5_000 }, async () => {
      const t0 = Date.parse("2026-01-02T03:04:05Z");
      let readings = 0;
      const now = () => (readings++ === 0 ? t0 : t0 + want - left);
      const hang = (url, init) => new Promise((_, reject) => init.signal.addEventListener("abort", () => reject(init.signal.reason)));
      const start = performance.now();
      const err = await failure(new Client("http://worker.test", { fetch: hang, now, ...options }).submit(order, { key: "k", ...callOptions(t0) }));
      const took = performance.now() - start;
      assert.ok(err instanceof NetworkError, `${err}`);
      assert.deepEqual({ attempts: err.attempts, retryable: err.retryable }, { attempts: 1, retryable: true });
      assert.ok(err.message.includes(wantMessage), `${err.message}, want it to say ${wantMessage}`);
      assert.ok(took >= left - 5, `the call ended ${want - left + took} ms after it began, want ${want}`);
    });
  }

  const stalls = [
    ["over loopback: no answer at all", () => {}],
    ["over loopback: a body that stops after its headers", (res) => {
      res.writeHead(201, { "Content-Type": "application/json", "Content-Length": "500" });
      res.write('{"orderId":');
    }],
  ];
  for (const [name, stall] of stalls) {
    await t.test(name, bounded, async (t) => {
      const worker = await serve(t, (req, res) => stall(res)); // and never more
      const timeout = 200;
      const start = Date.now();
      const err = await failure(new Client(worker, { callTimeoutMs: timeout }).submit(order));
      assert.ok(err instanceof NetworkError, `${err}`);
      assert.ok(err.message.includes(`${timeout} ms timeout`), err.message);
      assert.ok(Date.now() - start >= timeout - 5, "ended before the timeout");
    });
  }
});

test("a token a header cannot carry is refused when the client is made, and never shown", bounded, async (t) => {
  const cases = [
    ["a newline left by the file it came from", token + "\n", false],
    ["CR LF and another header", token + "\r\nX-Injected: 1", false],
    ["NUL", token.slice(0, 4) + "\0" + token.slice(4), false],
    ["a tab", "\t" + token, false],
    ["DEL", token + "\x7f", false],
    ["a space", token.slice(0, 4) + " " + token.slice(4), false],
    ["a non-ASCII letter", "é" + token, false],
    ["not a string", 42, false],
    ["no token", "", true],
    ["printable ASCII", token + "-._~+/=!#$%&'*^`|", true],
  ];
  for (const [name, candidate, ok] of cases) {
    await t.test(name, async () => {
      const requests = [];
      const fetch = async (url, init) => {
        requests.push(new Headers(init.headers).get("Authorization"));
        return new Response(receipt, { status: 201 });
      };
      if (ok) {
        await new Client("http://worker.test", { token: candidate, fetch }).submit(order);
        assert.deepEqual(requests, [candidate ? `Bearer ${candidate}` : null]);
        return;
      }
      assert.throws(
        () => new Client("http://worker.test", { token: candidate, fetch }),
        (e) => e instanceof TypeError && !e.message.includes(token.slice(0, 6)),
      );
    });
  }
});

test("a body is read only up to MAX_RESPONSE_BYTES; the rest is cancelled unread", bounded, async (t) => {
  const chunk = 64 * 1024;
  const total = 64 * 1024 * 1024;
  const cases = [
    ["a body without a length", {}, MAX_RESPONSE_BYTES + 2 * chunk],
    ["a declared Content-Length over the cap", { "Content-Length": String(total) }, chunk],
  ];
  for (const [name, headers, mostPulled] of cases) {
    await t.test(name, async () => {
      let pulled = 0;
      let cancelled = false;
      const body = new ReadableStream(
        {
          pull(controller) {
            if (pulled >= total) return controller.close();
            pulled += chunk;
            controller.enqueue(new Uint8Array(chunk).fill(0x20));
          },
          cancel() {
            cancelled = true;
          },
        },
        { highWaterMark: 0 },
      );
      const fetch = async () => new Response(body, { status: 201, headers: { "Content-Type": "application/json", ...headers } });
      const err = await failure(new Client("http://worker.test", { fetch }).submit(order));
      assert.ok(err instanceof UnexpectedResponseError, `${err}`);
      assert.ok(err.message.includes(`${MAX_RESPONSE_BYTES} bytes`), err.message);
      assert.ok(pulled <= mostPulled, `${pulled} bytes pulled, want at most ${mostPulled}`);
      assert.equal(cancelled, true, "the rest of the body cancelled");
      assert.equal(err.retryable, false);
    });
  }

  await t.test("a body of exactly MAX_RESPONSE_BYTES is read whole", async () => {
    const text = problem503();
    const fetch = async () => new Response(text + " ".repeat(MAX_RESPONSE_BYTES - text.length), { status: 503 });
    const err = await failure(new Client("http://worker.test", { fetch, maxAttempts: 1 }).submit(order));
    assert.ok(err instanceof StorageUnavailableError, `${err}`);
  });

  await t.test("over loopback, the server cannot send the whole body", bounded, async (t) => {
    let written = 0;
    let closed;
    const done = new Promise((resolve) => (closed = resolve));
    const worker = await serve(t, async (req, res) => {
      res.on("close", closed);
      res.writeHead(201, { "Content-Type": "application/json" });
      const bytes = Buffer.alloc(chunk, 0x20);
      while (written < total && !res.destroyed) {
        written += chunk;
        if (!res.write(bytes)) await new Promise((resolve) => (res.once("drain", resolve), res.once("close", resolve)));
      }
      res.end();
    });
    const err = await failure(new Client(worker).submit(order));
    assert.ok(err instanceof UnexpectedResponseError, `${err}`);
    await done;
    assert.ok(written < total / 4, `the server wrote ${written} of ${total} bytes before the client hung up`);
  });
});
