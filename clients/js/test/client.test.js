// Unit tests of the client against a scripted fetch: no Worker, no
// network. `node --test clients/js/test/` runs them; the end-to-end ones
// beside them run against the real Worker (worker.test.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";

import {
  Client,
  EdgeOrdersError,
  InProgressError,
  InvalidKeyError,
  InvalidOrderError,
  KeyReusedError,
  NetworkError,
  NotFoundError,
  OutcomeUnknownError,
  OutcomeUnresolvedError,
  RateLimitedError,
  RejectedError,
  StorageUnavailableError,
  UnauthorizedError,
  UnexpectedResponseError,
  backoff,
  keyHeader,
  newKey,
} from "../index.js";

const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const order = { symbol: "MSFT", side: "buy", quantity: 100 };
const receipt = '{"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e","status":"accepted","symbol":"MSFT","side":"buy","quantity":100,"acceptedAt":"2026-01-02T03:04:05.678Z"}';
const orderId = "0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e";

// problem is the Worker's problem body for code at status, with extra members.
function problem(code, status, extra = {}) {
  return JSON.stringify({ type: `tag:edge-orders,2026:${code}`, title: "A title", status, detail: "A detail.", error: code, ...extra });
}

// answer is one scripted response.
function answer(status, body, headers = {}) {
  const type = status < 300 ? "application/json" : "application/problem+json";
  return () => new Response(status === 204 ? null : body, { status, headers: { "Content-Type": type, ...headers } });
}

const created = answer(201, receipt);
const replayed = answer(200, receipt, { "Idempotent-Replay": "true" });
const unknown = (retryAfter = "1", extra = {}) =>
  answer(503, problem("outcome_unknown", 503, { orderId, attempts: 2, nextAttemptAt: "2026-01-02T03:04:09.678Z", ...extra }), { "Retry-After": retryAfter });
const lost = () => {
  throw new TypeError("fetch failed");
};

// scripted returns a fetch that answers with each of steps in turn (the
// last one again once they run out) and records every request.
function scripted(...steps) {
  const requests = [];
  const fetch = async (url, init) => {
    requests.push({ url, ...init, headers: new Headers(init.headers) });
    const step = steps[Math.min(requests.length - 1, steps.length - 1)];
    return step(init);
  };
  return { fetch, requests };
}

// fastClient retries at once: no jitter, 1 ms base delay.
function fastClient(fetch, options = {}) {
  return new Client("http://worker.test/orders", { fetch, baseDelayMs: 1, maxDelayMs: 2, random: () => 0, ...options });
}

test("submit mints a UUIDv4 key, sends the order under it and returns the receipt", async () => {
  const { fetch, requests } = scripted(created);
  const res = await fastClient(fetch, { token: "tok" }).submit({ ...order, note: "not sent" });
  assert.match(res.key, uuidV4);
  assert.deepEqual(
    { status: res.status, replay: res.replay, attempts: res.attempts, raw: res.raw, orderId: res.receipt.orderId },
    { status: 201, replay: false, attempts: 1, raw: receipt, orderId },
  );
  const [r] = requests;
  assert.equal(r.method, "POST");
  assert.equal(r.url, "http://worker.test/orders");
  assert.equal(r.headers.get("Idempotency-Key"), `"${res.key}"`);
  assert.equal(r.headers.get("Content-Type"), "application/json");
  assert.equal(r.headers.get("Authorization"), "Bearer tok");
  assert.equal(r.body, '{"symbol":"MSFT","side":"buy","quantity":100}');
});

test("each submit without a key mints its own; newKey is a UUIDv4", async () => {
  const { fetch, requests } = scripted(created);
  const c = fastClient(fetch);
  await c.submit(order);
  await c.submit(order);
  assert.notEqual(requests[0].headers.get("Idempotency-Key"), requests[1].headers.get("Idempotency-Key"));
  assert.match(newKey(), uuidV4);
  assert.notEqual(newKey(), newKey());
});

test("retries keep the key: network error, 409, 503 storage_unavailable, 503 outcome_unknown, then the replay", async () => {
  const { fetch, requests } = scripted(
    lost,
    answer(409, problem("in_progress", 409, { retryAfter: 60 }), { "Retry-After": "60" }),
    answer(503, problem("storage_unavailable", 503), { "Retry-After": "0" }),
    unknown("0"),
    replayed,
  );
  const retries = [];
  const res = await fastClient(fetch, { maxAttempts: 5 }).submit(order, { key: "intent-1", onRetry: (e) => retries.push(e.error.constructor) });
  assert.equal(res.attempts, 5);
  assert.equal(res.replay, true);
  assert.equal(res.status, 200);
  assert.deepEqual(new Set(requests.map((r) => r.headers.get("Idempotency-Key"))), new Set(['"intent-1"']));
  assert.deepEqual(retries, [NetworkError, InProgressError, StorageUnavailableError, OutcomeUnknownError]);
});

test("a crashed Worker and a proxy's 5xx are retried under the same key: one 502, then the order", async (t) => {
  const cases = [
    ["a proxy's 502 page", answer(502, "<h1>Bad gateway</h1>", { "Content-Type": "text/html" })],
    ["500 internal_error", answer(500, problem("internal_error", 500))],
    ["a platform's 500 page", answer(500, "<h1>Worker threw exception</h1>", { "Content-Type": "text/html" })],
    ["a proxy's 504", answer(504, "gateway timeout", { "Content-Type": "text/plain" })],
    ["400 unreadable_body (docs/http.md: retry)", answer(400, problem("unreadable_body", 400))],
  ];
  for (const [name, step] of cases) {
    await t.test(name, async () => {
      const { fetch, requests } = scripted(step, created);
      const res = await fastClient(fetch).submit(order, { key: "intent-5xx" });
      assert.deepEqual({ attempts: res.attempts, status: res.status }, { attempts: 2, status: 201 });
      assert.deepEqual(requests.map((r) => r.headers.get("Idempotency-Key")), ['"intent-5xx"', '"intent-5xx"']);
    });
  }
});

test("the key goes as the Structured Field string that names exactly it", async () => {
  const cases = [
    ["order-42", '"order-42"'],
    ['"x"', '"\\"x\\""'],
    ["a\\b", '"a\\\\b"'],
    ["a,b", '"a,b"'],
    [" k ", '" k "'],
  ];
  for (const [key, want] of cases) {
    assert.equal(keyHeader(key), want, `keyHeader(${JSON.stringify(key)})`);
    const { fetch, requests } = scripted(created);
    await fastClient(fetch).submit(order, { key });
    assert.equal(requests[0].headers.get("Idempotency-Key"), want);
  }
});

test("final answers are not retried and come back as their own classes", async (t) => {
  const cases = [
    ["invalid order", answer(422, problem("invalid_order", 422)), InvalidOrderError, 422],
    ["key reused", answer(422, problem("idempotency_key_reused", 422)), KeyReusedError, 422],
    ["rejected", answer(422, problem("order_rejected", 422, { orderId, detail: "insufficient buying power" }), { "Idempotent-Replay": "true" }), RejectedError, 422],
    ["rate limited", answer(429, problem("rate_limited", 429), { "Retry-After": "60" }), RateLimitedError, 429],
    ["unauthorized", answer(401, problem("unauthorized", 401), { "WWW-Authenticate": 'Bearer realm="edge-orders"' }), UnauthorizedError, 401],
    ["not found", answer(404, problem("not_found", 404)), NotFoundError, 404],
    ["invalid key by the Worker", answer(400, problem("invalid_idempotency_key", 400)), InvalidKeyError, 400],
    ["outcome unresolved", answer(503, problem("outcome_unresolved", 503, { orderId, attempts: 17 }), { "Retry-After": "1" }), OutcomeUnresolvedError, 503],
    ["misconfigured", answer(500, problem("misconfigured", 500)), EdgeOrdersError, 500],
    ["a proxy's 501 page", answer(501, "<h1>Not implemented</h1>", { "Content-Type": "text/html" }), EdgeOrdersError, 501],
    ["a redirect", answer(302, "", { Location: "/elsewhere" }), UnexpectedResponseError, 302],
    ["a 200 that is no receipt", answer(200, '{"ok":true}'), UnexpectedResponseError, 200],
  ];
  for (const [name, step, Class, status] of cases) {
    await t.test(name, async () => {
      const { fetch, requests } = scripted(step);
      const err = await fastClient(fetch).submit(order, { key: "k" }).then(
        () => assert.fail("submit resolved"),
        (e) => e,
      );
      assert.ok(err instanceof Class, `${err.name}, want ${Class.name}`);
      assert.equal(err.constructor, Class);
      assert.equal(requests.length, 1, "requests sent");
      assert.deepEqual({ attempts: err.attempts, status: err.status, key: err.key, method: err.method, retryable: err.retryable }, { attempts: 1, status, key: "k", method: "POST", retryable: false });
    });
  }
});

test("a rejection carries the order id and the OMS's reason", async () => {
  const { fetch } = scripted(answer(422, problem("order_rejected", 422, { orderId, detail: "insufficient buying power" })));
  const err = await fastClient(fetch).submit(order).catch((e) => e);
  assert.ok(err instanceof RejectedError);
  assert.equal(err.orderId, orderId);
  assert.equal(err.reason, "insufficient buying power");
  assert.equal(err.code, "order_rejected");
});

test("a rate limit carries its Retry-After", async () => {
  const { fetch } = scripted(answer(429, problem("rate_limited", 429), { "Retry-After": "60" }));
  const err = await fastClient(fetch).submit(order).catch((e) => e);
  assert.ok(err instanceof RateLimitedError);
  assert.equal(err.retryAfterMs, 60_000);
});

test("an unresolved outcome is an unknown one too, and never retried", async () => {
  const { fetch, requests } = scripted(answer(503, problem("outcome_unresolved", 503, { orderId, attempts: 17 }), { "Retry-After": "1" }));
  const err = await fastClient(fetch).submit(order).catch((e) => e);
  assert.ok(err instanceof OutcomeUnresolvedError && err instanceof OutcomeUnknownError);
  assert.deepEqual({ orderId: err.orderId, omsAttempts: err.omsAttempts, next: err.nextAttemptAt, retryable: err.retryable, sent: requests.length }, { orderId, omsAttempts: 17, next: null, retryable: false, sent: 1 });
});

test("outcome still unknown at the deadline: the wait Retry-After asks for would pass it", async () => {
  const { fetch, requests } = scripted(unknown("2"));
  const c = fastClient(fetch);
  const start = Date.now();
  const err = await c.submit(order, { key: "k", deadline: Date.now() + 500 }).catch((e) => e);
  assert.ok(err instanceof OutcomeUnknownError && !(err instanceof OutcomeUnresolvedError), err.name);
  assert.equal(requests.length, 1);
  assert.ok(Date.now() - start < 400, "it gave up at once instead of sleeping");
  assert.deepEqual(
    { orderId: err.orderId, omsAttempts: err.omsAttempts, next: err.nextAttemptAt?.toISOString(), attempts: err.attempts, retryable: err.retryable, retryAfterMs: err.retryAfterMs },
    { orderId, omsAttempts: 2, next: "2026-01-02T03:04:09.678Z", attempts: 1, retryable: true, retryAfterMs: 2000 },
  );
});

test("a 503's Retry-After is a floor, a 409's a ceiling", async () => {
  const waits = async (step, random) => {
    const { fetch } = scripted(step, created);
    const seen = [];
    await new Client("http://w.test", { fetch, baseDelayMs: 100, maxDelayMs: 5000, random }).submit(order, {
      onRetry: (e) => seen.push(e.waitMs),
      // Retries at once whatever the wait: only the announced wait matters.
      signal: undefined,
    }).catch(() => {});
    return seen;
  };
  // Retry-After 0 keeps the test fast; the floor shows with a date below.
  assert.deepEqual(await waits(answer(503, problem("storage_unavailable", 503), { "Retry-After": "0" }), () => 0.5), [50]);
  const conflict = answer(409, problem("in_progress", 409, { retryAfter: 60 }), { "Retry-After": "60" });
  assert.deepEqual(await waits(conflict, () => 0.999), [100], "a 409 waits the backoff, capped by Retry-After");
});

test("a wait is announced, honours Retry-After, and an abort during it throws the last error", async () => {
  const { fetch, requests } = scripted(unknown("3"));
  const controller = new AbortController();
  let announced;
  const err = await fastClient(fetch).submit(order, {
    signal: controller.signal,
    onRetry: (e) => {
      announced = e;
      controller.abort();
    },
  }).catch((e) => e);
  assert.equal(announced.waitMs, 3000);
  assert.equal(announced.attempt, 1);
  assert.ok(err instanceof OutcomeUnknownError, err.name);
  assert.equal(requests.length, 1);
});

test("Retry-After as an HTTP date, and the problem's retryAfter without the header", async () => {
  const now = Date.parse("2026-01-02T03:04:05Z");
  const date = answer(503, problem("storage_unavailable", 503), { "Retry-After": "Fri, 02 Jan 2026 03:04:09 GMT" });
  const { fetch } = scripted(date);
  const err = await fastClient(fetch, { now: () => now, maxAttempts: 1 }).submit(order).catch((e) => e);
  assert.equal(err.retryAfterMs, 4000);
  const body = answer(409, problem("in_progress", 409, { retryAfter: 7 }));
  const { fetch: f2 } = scripted(body);
  const err2 = await fastClient(f2, { maxAttempts: 1 }).submit(order).catch((e) => e);
  assert.equal(err2.retryAfterMs, 7000);
});

test("gives up after maxAttempts with the last error, retryable", async () => {
  const { fetch, requests } = scripted(answer(503, problem("storage_unavailable", 503), { "Retry-After": "0" }));
  const err = await fastClient(fetch, { maxAttempts: 3 }).submit(order).catch((e) => e);
  assert.ok(err instanceof StorageUnavailableError);
  assert.equal(err.attempts, 3);
  assert.equal(requests.length, 3);
  assert.equal(err.retryable, true);
});

test("a proxy's 503 page is retried on its status alone", async () => {
  const { fetch, requests } = scripted(answer(503, "<h1>Service unavailable</h1>", { "Content-Type": "text/html" }), created);
  const res = await fastClient(fetch).submit(order);
  assert.equal(res.attempts, 2);
  assert.equal(requests.length, 2);
});

test("no response at all: a NetworkError carrying the cause, retried until the attempts run out", async () => {
  const { fetch, requests } = scripted(lost);
  const err = await fastClient(fetch, { maxAttempts: 2 }).submit(order, { key: "k" }).catch((e) => e);
  assert.ok(err instanceof NetworkError);
  assert.equal(err.status, 0);
  assert.equal(err.retryable, true);
  assert.ok(err.cause instanceof TypeError);
  assert.equal(requests.length, 2);
});

test("an abort while the request is in flight ends the call", async () => {
  const controller = new AbortController();
  const fetch = (url, init) =>
    new Promise((_, reject) => {
      init.signal.addEventListener("abort", () => reject(init.signal.reason));
      controller.abort(new Error("the person closed the ticket"));
    });
  const err = await fastClient(fetch).submit(order, { signal: controller.signal }).catch((e) => e);
  assert.ok(err instanceof NetworkError);
  assert.equal(err.attempts, 1);
  assert.match(err.message, /closed the ticket/);
});

test("the deadline aborts a request in flight, and attemptTimeoutMs each attempt", async () => {
  let calls = 0;
  const hang = (url, init) => {
    calls++;
    return new Promise((_, reject) => init.signal.addEventListener("abort", () => reject(init.signal.reason)));
  };
  const start = Date.now();
  const err = await fastClient(hang).submit(order, { deadline: new Date(Date.now() + 100) }).catch((e) => e);
  assert.ok(err instanceof NetworkError && /deadline/.test(err.message), err.message);
  assert.ok(Date.now() - start < 1000);
  calls = 0;
  const err2 = await fastClient(hang, { attemptTimeoutMs: 20, maxAttempts: 3 }).submit(order).catch((e) => e);
  assert.ok(err2 instanceof NetworkError && /20 ms/.test(err2.message), err2.message);
  assert.equal(calls, 3, "each timed-out attempt is retried");
});

test("an invalid key is refused before sending anything", async () => {
  const { fetch, requests } = scripted(created);
  for (const key of ["", "k".repeat(256), "clé", "a\nb", 42]) {
    const err = await fastClient(fetch).submit(order, { key }).catch((e) => e);
    assert.ok(err instanceof InvalidKeyError, `key ${JSON.stringify(key)}: ${err}`);
    assert.equal(err.attempts, 0);
    const err2 = await fastClient(fetch).lookup(key).catch((e) => e);
    assert.ok(err2 instanceof InvalidKeyError);
  }
  assert.equal(requests.length, 0);
  await fastClient(fetch).submit(order, { key: "k".repeat(255) });
});

test("lookup sends a GET with the key and no body, and tells the states apart", async () => {
  const { fetch, requests } = scripted(replayed);
  const res = await fastClient(fetch).lookup("k");
  assert.equal(res.replay, true);
  assert.equal(requests[0].method, "GET");
  assert.equal(requests[0].body, undefined);
  assert.equal(requests[0].headers.get("Content-Type"), null);
  assert.equal(requests[0].headers.get("Idempotency-Key"), '"k"');

  const states = [
    [answer(404, problem("not_found", 404)), NotFoundError],
    [answer(422, problem("order_rejected", 422, { orderId })), RejectedError],
    [answer(409, problem("in_progress", 409, { retryAfter: 60 }), { "Retry-After": "60" }), InProgressError],
    [unknown("1"), OutcomeUnknownError],
    [answer(503, problem("outcome_unresolved", 503, { orderId, attempts: 3 }), { "Retry-After": "1" }), OutcomeUnresolvedError],
  ];
  for (const [step, Class] of states) {
    const { fetch } = scripted(step);
    const err = await fastClient(fetch, { maxAttempts: 1 }).lookup("k").catch((e) => e);
    assert.equal(err.constructor, Class);
    assert.equal(err.method, "GET");
  }
});

test("backoff is full jitter, doubling from the base up to the cap", () => {
  const top = () => 0.9999999;
  assert.equal(backoff(1, 100, 5000, top), 100);
  assert.equal(backoff(2, 100, 5000, top), 200);
  assert.equal(backoff(6, 100, 5000, top), 3200);
  assert.equal(backoff(7, 100, 5000, top), 5000);
  assert.equal(backoff(1000, 100, 5000, top), 5000);
  assert.equal(backoff(3, 100, 5000, () => 0), 0);
  let below = 0;
  for (let i = 0; i < 2000; i++) {
    const w = backoff(3, 100, 5000);
    assert.ok(w >= 0 && w <= 400);
    if (w < 200) below++;
  }
  assert.ok(below > 800 && below < 1200, `${below} of 2000 below the middle`);
});

test("a call whose deadline ends a retry in flight reports the Worker's last answer", async () => {
  let calls = 0;
  const fetch = (url, init) => {
    if (++calls === 1) return Promise.resolve(unknown("0")());
    return new Promise((_, reject) => init.signal.addEventListener("abort", () => reject(init.signal.reason)));
  };
  const err = await fastClient(fetch).submit(order, { deadline: Date.now() + 150 }).catch((e) => e);
  assert.ok(err instanceof OutcomeUnknownError, `${err}`);
  assert.equal(err.attempts, 2);
  assert.equal(err.orderId, orderId);
});

test("a retry that meets a certificate it does not trust reports the Worker's last answer, retryable", async () => {
  // The first attempt's outcome is unknown: order orderId may be placed. The
  // retry's handshake fails (a rotated certificate, another edge), so it
  // says nothing of the order: a final error would have the caller send it
  // again under a new key (found by a review).
  let calls = 0;
  const untrusted = Object.assign(new Error("unable to verify the first certificate"), { code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" });
  const fetch = () => {
    if (++calls === 1) return Promise.resolve(unknown("0")());
    return Promise.reject(new TypeError("fetch failed", { cause: untrusted }));
  };
  const err = await fastClient(fetch).submit(order).catch((e) => e);
  assert.ok(err instanceof OutcomeUnknownError, `${err}`);
  assert.equal(err.retryable, true);
  assert.equal(err.attempts, 2);
  assert.equal(err.orderId, orderId);
});

test("a client logged or serialised shows no token", () => {
  const c = new Client("https://worker.test", { token: "s3cret-token-1234" });
  for (const shown of [JSON.stringify(c), inspect(c), String(Object.entries(c))]) {
    assert.ok(!shown.includes("s3cret"), shown);
  }
});

test("a client logged or serialised shows its URL without credentials or query", () => {
  const c = new Client("https://user:pw@worker.test/orders?key=s3cret#frag");
  for (const shown of [JSON.stringify(c), inspect(c)]) {
    assert.ok(!shown.includes("s3cret") && !shown.includes("pw@") && !shown.includes("frag"), shown);
    assert.ok(shown.includes("https://worker.test/orders"), shown);
  }
});

test("a lookup says when its receipt or rejection expires, where the Worker tells it", async () => {
  const expires = "2026-01-04T03:04:05.678Z";
  const told = answer(200, receipt, { "Idempotent-Replay": "true", "Idempotency-Expires": expires });
  const res = await fastClient(scripted(told).fetch).lookup("k");
  assert.ok(res.expiresAt instanceof Date);
  assert.equal(res.expiresAt.toISOString(), expires);
  assert.equal(res.raw, receipt);

  for (const [name, step] of [
    ["not told", replayed],
    ["not a date", answer(200, receipt, { "Idempotent-Replay": "true", "Idempotency-Expires": "tomorrow" })],
    ["an HTTP date", answer(200, receipt, { "Idempotent-Replay": "true", "Idempotency-Expires": "Sun, 04 Jan 2026 03:04:05 GMT" })],
  ]) {
    const got = await fastClient(scripted(step).fetch).lookup("k");
    assert.equal(got.expiresAt, null, name);
  }
  assert.equal((await fastClient(scripted(created).fetch).submit(order, { key: "k" })).expiresAt, null);

  const rejected = answer(422, problem("order_rejected", 422, { orderId }), { "Idempotent-Replay": "true", "Idempotency-Expires": expires });
  const err = await fastClient(scripted(rejected).fetch).lookup("k").catch((e) => e);
  assert.ok(err instanceof RejectedError);
  assert.equal(err.expiresAt?.toISOString(), expires);
  const untold = await fastClient(scripted(answer(422, problem("order_rejected", 422, { orderId }))).fetch).lookup("k").catch((e) => e);
  assert.equal(untold.expiresAt, null);
});

// A problem body's "error" member is looked up in a plain object, so a
// code that names a property of Object.prototype ("constructor",
// "toString", ...) picks that property as the error class: a 503 with
// error "constructor" makes submit RESOLVE, as if the order were placed,
// with no receipt at all; the other names throw a bare TypeError rather
// than an EdgeOrdersError. The Go client (a map lookup) reports a
// retryable 503 for the same answer.
test("a problem whose code names an Object.prototype property is still an EdgeOrdersError, never a success", async (t) => {
  for (const code of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
    await t.test(code, async () => {
      let sent = 0;
      const fetch = async () => {
        sent++;
        return new Response(JSON.stringify({ type: "x", title: "t", status: 503, detail: "d", error: code }), {
          status: 503,
          headers: { "Content-Type": "application/problem+json" },
        });
      };
      const client = new Client("http://worker.test/", { fetch, maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1, random: () => 0 });
      const outcome = await client.submit(order, { key: "k" }).then(
        (result) => ({ resolved: result }),
        (error) => ({ error }),
      );
      assert.ok(!("resolved" in outcome), `submit resolved with ${JSON.stringify(outcome.resolved)?.slice(0, 80)} for a 503`);
      assert.ok(outcome.error instanceof EdgeOrdersError, `submit threw ${outcome.error?.constructor?.name}: ${outcome.error?.message}, want an EdgeOrdersError`);
      assert.equal(outcome.error.status, 503);
      assert.equal(outcome.error.retryable, true);
      assert.equal(sent, 2, "a 503 is retried");
    });
  }
});
