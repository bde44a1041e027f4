// A JavaScript Worker with the same HTTP contract as edge-orders and the
// TypeScript reference's sequential lifecycle: get result, get pending, put
// pending, put result, delete pending, one after another. It is the yardstick
// `make bench` measures the Go Worker against; it is not part of the product.
// Like the Go Worker it logs one JSON line per request: under wrangler dev a
// console line costs about as much as a KV read, so a yardstick that skipped
// it would measure logging, not the Workers.
// validate() is the reference's own, shared with the Go parity test (one copy).
import { validate } from "../../../order/testdata/validate.mjs";

const RESULT_TTL = 86400;
const PENDING_TTL = 60; // KV's minimum

function reply(body, status, headers = {}) {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

async function handle(request, env) {
  if (request.method !== "POST") {
    return reply({ error: "method_not_allowed" }, 405, { allow: "POST" });
  }
  const key = request.headers.get("Idempotency-Key");
  if (!key) return reply({ error: "missing_idempotency_key" }, 400);

  const stored = await env.ORDERS.get("result:" + key);
  if (stored !== null) {
    return new Response(stored, {
      headers: { "content-type": "application/json", "idempotent-replay": "true" },
    });
  }
  if ((await env.ORDERS.get("pending:" + key)) !== null) {
    return reply({ error: "in_progress", retryAfter: PENDING_TTL }, 409, { "retry-after": String(PENDING_TTL) });
  }
  await env.ORDERS.put("pending:" + key, "1", { expirationTtl: PENDING_TTL });

  const order = validate(await request.json().catch(() => null));
  if (!order) {
    await env.ORDERS.delete("pending:" + key);
    return reply({ error: "invalid_order" }, 422);
  }
  const receipt = JSON.stringify({
    orderId: crypto.randomUUID(),
    status: "accepted",
    symbol: order.symbol,
    side: order.side,
    quantity: order.quantity,
    acceptedAt: new Date().toISOString(),
  });
  await env.ORDERS.put("result:" + key, receipt, { expirationTtl: RESULT_TTL });
  await env.ORDERS.delete("pending:" + key);
  return new Response(receipt, { status: 201, headers: { "content-type": "application/json" } });
}

export default {
  async fetch(request, env) {
    const started = Date.now();
    const response = await handle(request, env);
    const outcome = { 200: "replayed", 201: "created" }[response.status] ?? "error";
    console.log(JSON.stringify({
      outcome,
      key: request.headers.get("Idempotency-Key") ?? undefined,
      status: response.status,
      ms: Date.now() - started,
    }));
    return response;
  },
};
