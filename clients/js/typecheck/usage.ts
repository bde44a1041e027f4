// A caller's use of the client as index.d.ts types it: what a TypeScript
// program may write must compile.
import {
  Client,
  EdgeOrdersError,
  OutcomeUnknownError,
  OutcomeUnresolvedError,
  RejectedError,
  keyHeader,
  newKey,
  type Order,
  type Result,
} from "./index.js";

export async function place(url: string, token: string): Promise<string> {
  const client = new Client(new URL(url), { token, maxAttempts: 3, callTimeoutMs: 10_000 });
  const order: Order = { symbol: "MSFT", side: "buy", quantity: 100 };
  const key = newKey();
  const header: string = keyHeader(key);
  try {
    const res: Result = await client.submit(order, {
      key,
      deadline: Date.now() + 20_000,
      onRetry: ({ attempt, error, waitMs }) => console.log(attempt, error.code, error.retryable, waitMs),
    });
    const expires: Date | null = res.expiresAt;
    return `${header} ${res.receipt.orderId} ${res.status} ${res.replay} ${res.attempts} ${expires}`;
  } catch (e) {
    if (e instanceof OutcomeUnresolvedError) return e.orderId;
    if (e instanceof OutcomeUnknownError) return `${e.omsAttempts} ${e.nextAttemptAt?.toISOString()}`;
    if (e instanceof RejectedError) return e.reason;
    if (e instanceof EdgeOrdersError) return `${e.key} ${e.status} ${e.problem?.error ?? ""} ${e.retryAfterMs}`;
    throw e;
  }
}

export async function look(client: Client, key: string): Promise<number> {
  const res = await client.lookup(key, { signal: AbortSignal.timeout(5000), maxAttempts: 2 });
  return res.receipt.quantity;
}
