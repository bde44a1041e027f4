// What no retry mends: a certificate the client does not trust, a URL
// that is not http(s), a request fetch will not build. Each fails at
// once, final. And every request names the client in its User-Agent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:https";

import { CertificateError, Client, InvalidRequestError, NetworkError, USER_AGENT, VERSION } from "../index.js";

const order = { symbol: "MSFT", side: "buy", quantity: 100 };
const receipt = '{"orderId":"0b9c3e8e-6f4a-4d2b-9c1e-3a5f7d9b1c2e","status":"accepted","symbol":"MSFT","side":"buy","quantity":100,"acceptedAt":"2026-01-02T03:04:05.678Z"}';

async function failure(promise) {
  return promise.then(
    () => assert.fail("the call resolved"),
    (e) => e,
  );
}

// selfsigned.pem is a throwaway key and a self-signed certificate for
// 127.0.0.1, made for this test with openssl: no system trusts it.
const pem = readFileSync(new URL("./selfsigned.pem", import.meta.url), "utf8");

test("a certificate the client does not trust fails once, final, and sends nothing", async (t) => {
  let served = 0;
  const server = createServer({ key: pem, cert: pem }, (req, res) => {
    served++;
    res.writeHead(201, { "Content-Type": "application/json" }).end(receipt);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const retries = [];
  const c = new Client(`https://127.0.0.1:${server.address().port}/orders`, { baseDelayMs: 1, maxDelayMs: 1 });
  const err = await failure(c.submit(order, { key: "k-tls", onRetry: (e) => retries.push(e) }));
  assert.ok(err instanceof CertificateError, `${err.name}: ${err.message}, want CertificateError`);
  assert.deepEqual({ attempts: err.attempts, status: err.status, retryable: err.retryable, retries: retries.length, served }, { attempts: 1, status: 0, retryable: false, retries: 0, served: 0 });
  assert.equal(err.cause?.cause?.code, "DEPTH_ZERO_SELF_SIGNED_CERT");
});

test("another host's certificate is final too; a network error without a certificate code is still retried", async () => {
  const altname = Object.assign(new Error("Hostname/IP does not match certificate's altnames"), { code: "ERR_TLS_CERT_ALTNAME_INVALID" });
  const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
  for (const [cause, Class, attempts] of [
    [altname, CertificateError, 1],
    [reset, NetworkError, 3],
  ]) {
    let calls = 0;
    const fetch = async () => {
      calls++;
      throw new TypeError("fetch failed", { cause });
    };
    const err = await failure(new Client("https://worker.test", { fetch, maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 }).submit(order));
    assert.ok(err instanceof Class, `${cause.code}: ${err.name}, want ${Class.name}`);
    assert.deepEqual({ attempts: err.attempts, calls }, { attempts, calls: attempts }, cause.code);
  }
});

test("a URL that is not http or https is refused by the constructor, without showing it", () => {
  for (const url of ["ftp://127.0.0.1/orders?token=s3cr3t", "localhost:8787", "/orders", "not a url?token=s3cr3t", "file:///etc/passwd"]) {
    assert.throws(
      () => new Client(url),
      (e) => e instanceof TypeError && !e.message.includes("s3cr3t"),
      url,
    );
  }
  for (const url of ["http://127.0.0.1:8787", "https://orders.example.com/orders", new URL("https://orders.example.com")]) {
    assert.doesNotThrow(() => new Client(url), String(url));
  }
});

test("a request fetch will not build fails before sending, not retried", async () => {
  let calls = 0;
  const fetch = async () => {
    calls++;
    return new Response(receipt, { status: 201 });
  };
  // fetch refuses a URL with credentials in it, every time.
  const c = new Client("http://user:pass@worker.test/orders", { fetch });
  for (const call of [() => c.submit(order, { key: "k-build" }), () => c.lookup("k-build")]) {
    const err = await failure(call());
    assert.ok(err instanceof InvalidRequestError, `${err.name}: ${err.message}, want InvalidRequestError`);
    assert.deepEqual({ attempts: err.attempts, retryable: err.retryable, key: err.key }, { attempts: 0, retryable: false, key: "k-build" });
  }
  assert.equal(calls, 0, "requests sent");
});

test("every request names the client and its version in User-Agent", async () => {
  assert.equal(USER_AGENT, `edge-orders-js-client/${VERSION}`);
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  assert.equal(VERSION, pkg.version, "VERSION is package.json's");
  const agents = [];
  const answers = [
    () => new Response('{"error":"storage_unavailable"}', { status: 503, headers: { "Content-Type": "application/problem+json" } }),
    () => new Response(receipt, { status: 201 }),
    () => new Response(receipt, { status: 200, headers: { "Idempotent-Replay": "true" } }),
  ];
  const fetch = async (url, init) => {
    agents.push(new Headers(init.headers).get("User-Agent"));
    return answers[agents.length - 1]();
  };
  const c = new Client("http://worker.test", { fetch, baseDelayMs: 1, maxDelayMs: 1 });
  await c.submit(order, { key: "k-ua" });
  await c.lookup("k-ua");
  assert.deepEqual(agents, [USER_AGENT, USER_AGENT, USER_AGENT]);
});

test("a request fetch will not build: its error never shows the URL's credentials or query", async () => {
  const c = new Client("http://desk:s3cr3t-pass@worker.test/orders?token=s3cr3t-q", { fetch: async () => new Response(receipt, { status: 201 }) });
  const err = await failure(c.submit(order, { key: "k-build" }));
  assert.ok(err instanceof InvalidRequestError, `${err.name}: ${err.message}`);
  const shown = `${err.message} ${err.cause?.message ?? ""} ${String(err.stack)}`;
  assert.ok(!shown.includes("s3cr3t"), `the error shows a secret: ${shown.split("\n")[0]}`);
});
