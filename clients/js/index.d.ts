// Type declarations for @edge-orders/client (index.js).

/** Which way an order trades; the Worker compares it case-sensitively. */
export type Side = "buy" | "sell";

/** What the client asks the Worker to place. The Worker validates it. */
export interface Order {
  symbol: string;
  side: Side;
  /** A positive integer, at most Number.MAX_SAFE_INTEGER. */
  quantity: number;
}

/** The Worker's record of a placed order. */
export interface Receipt {
  /** The order's id: a UUID (laid out as version 4) the Worker derives from the key, the client and the order, never a random one; every replay, lookup and retry of the key carries the same one. */
  orderId: string;
  status: "accepted";
  symbol: string;
  side: Side;
  quantity: number;
  /** When the Worker took the order, as toISOString() writes it. */
  acceptedAt: string;
}

/** A receipt and how it was obtained. */
export interface Result {
  receipt: Receipt;
  /** The receipt exactly as the Worker sent it, as every replay of the key sends it. */
  raw: string;
  /** True when the Worker answered with a receipt stored by an earlier request (Idempotent-Replay: true); always for lookup. */
  replay: boolean;
  /** 201 for a newly placed order, 200 for a replay. */
  status: 200 | 201;
  /** The Idempotency-Key the order was sent under. */
  key: string;
  /** How many requests the call sent, the first included. */
  attempts: number;
  /** From a lookup: when the Worker stops serving the receipt and the key is free again (Idempotency-Expires), where its store knows it (the ledger); null otherwise, and always for submit. */
  expiresAt: Date | null;
}

/** An RFC 9457 problem as the Worker writes it. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** The stable code, such as "in_progress". */
  error: string;
  /** Seconds, with in_progress. */
  retryAfter?: number;
  /** With order_rejected, outcome_unknown and outcome_unresolved. */
  orderId?: string;
  /** With outcome_unknown and outcome_unresolved: the Worker's calls to the OMS that ended without an answer stored. */
  attempts?: number;
  /** With outcome_unknown, when known: when the Worker calls the OMS next. */
  nextAttemptAt?: string;
}

export interface ClientOptions {
  /** Sent as Authorization: Bearer <token>; a Worker with API tokens requires one. Printable ASCII without spaces: the constructor throws a TypeError, which never shows the token, for any other character (a newline, NUL, any control character). */
  token?: string;
  /** Requests one call sends at most, the first included; 1 turns retries off. Default 5. */
  maxAttempts?: number;
  /** Backoff before retry n: uniform in [0, min(maxDelayMs, baseDelayMs·2ⁿ⁻¹)]. Defaults 100 and 5000; either at most MAX_RETRY_WAIT_MS. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Bounds each request, answer included; a request that takes longer is a NetworkError, retried. Default: no bound but the call's deadline. */
  attemptTimeoutMs?: number;
  /** Bounds each call, every attempt and wait included, from its start; a call's own deadline may end it earlier. Default DEFAULT_CALL_TIMEOUT_MS (30 s). */
  callTimeoutMs?: number;
  /** Sends the requests, with redirect: "manual": a redirect is an UnexpectedResponseError, never followed. Default globalThis.fetch. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** A uniform value in [0, 1), for the jitter; default Math.random. */
  random?: () => number;
  /** The time in ms since the epoch; default Date.now. */
  now?: () => number;
}

/** What the client tells onRetry before each wait. */
export interface RetryEvent {
  /** The attempt that failed, 1 for the first. */
  attempt: number;
  /** Why: a retryable error (NetworkError, InProgressError, StorageUnavailableError, OutcomeUnknownError, or a 409, 500, 502, 503 or 504 without a known code). */
  error: EdgeOrdersError;
  /** How long the client waits before the next attempt. */
  waitMs: number;
}

export interface CallOptions {
  /** Ends the call: an attempt in flight fails as a NetworkError, a wait throws the last error. */
  signal?: AbortSignal;
  /** When the call must end, as a Date or ms since the epoch, if before ClientOptions.callTimeoutMs from its start. An attempt in flight is aborted then; a wait that would pass it is not begun, and the last error is thrown instead. */
  deadline?: Date | number;
  /** Overrides ClientOptions.maxAttempts for this call. */
  maxAttempts?: number;
  /** Told before each wait between attempts, for a progress display. */
  onRetry?: (event: RetryEvent) => void;
}

export interface SubmitOptions extends CallOptions {
  /** The order intent's Idempotency-Key, 1 to 255 printable ASCII characters; minted with newKey() when absent. Pass the key you minted when the intent began, so that you can send the order again under it. */
  key?: string;
}

export declare const MAX_KEY_LENGTH: 255;
export declare const DEFAULT_MAX_ATTEMPTS: number;
export declare const DEFAULT_BASE_DELAY_MS: number;
export declare const DEFAULT_MAX_DELAY_MS: number;
export declare const DEFAULT_CALL_TIMEOUT_MS: number;
/** The longest wait before a retry, whatever a Retry-After or maxDelayMs asks (60 s). */
export declare const MAX_RETRY_WAIT_MS: number;
/** The most of a response's body the client reads (1 MiB); past it the rest is cancelled unread. */
export declare const MAX_RESPONSE_BYTES: number;

/** The client's version, the Go client's too. */
export declare const VERSION: string;
/** The User-Agent sent outside browsers: edge-orders-js-client/VERSION. A browser sends its own. */
export declare const USER_AGENT: string;

/** A fresh Idempotency-Key, crypto.randomUUID(): one per order intent. */
export declare function newKey(): string;

/** key as the Idempotency-Key header carries it: the Structured Field string, in double quotes with " and \\ escaped. */
export declare function keyHeader(key: string): string;

/** The full-jitter wait in ms after attempt (1 for the first). */
export declare function backoff(attempt: number, baseDelayMs: number, maxDelayMs: number, random?: () => number): number;

export declare class Client {
  /** @throws {TypeError} for a url that is not http or https (relative to the page, where there is one), and for a token that is not printable ASCII without spaces. */
  constructor(url: string | URL, options?: ClientOptions);
  readonly url: string;
  /** The client as JSON.stringify shows it: its url without credentials, query or fragment; never its token. */
  toJSON(): { url: string };
  /**
   * Places order under options.key (or a key it mints), kept across every
   * retry, sent as its Structured Field string (keyHeader). Retries network
   * errors, 409, 500 but misconfigured, 502, 503 but outcome_unresolved and 504, with
   * capped, jittered backoff that honours Retry-After, within maxAttempts,
   * the deadline and the signal. Rejects with an EdgeOrdersError subclass.
   */
  submit(order: Order, options?: SubmitOptions): Promise<Result>;
  /** The receipt stored under key, with expiresAt where the Worker tells it; places nothing. Retries as submit does. */
  lookup(key: string, options?: CallOptions): Promise<Result>;
}

/** A failed call: the Worker's problem, an unusable response, or (status 0) no response. */
export declare class EdgeOrdersError extends Error {
  readonly method: "POST" | "GET" | "";
  /** The Idempotency-Key sent: send the same order under it again later. */
  readonly key: string;
  /** Requests sent, the first included; 0 when the client refused before sending. */
  readonly attempts: number;
  /** The last response's status; 0 when there was none. */
  readonly status: number;
  readonly problem: Problem | null;
  /** The problem's code, such as "method_not_allowed"; "" without a problem. */
  readonly code: string;
  /** How long the Worker asked the client to wait, in ms, at most MAX_RETRY_WAIT_MS; 0 if it did not say. */
  readonly retryAfterMs: number;
  readonly headers: Headers | null;
  readonly body: string;
  /** Whether the same order under the same key may still succeed soon: no response, 409, 500 but misconfigured, 502, 503 but outcome_unresolved, or 504. */
  readonly retryable: boolean;
}
/** The Worker's TLS certificate did not verify (where the runtime says so: Node.js); nothing was sent. Final. */
export declare class CertificateError extends EdgeOrdersError {}
/** fetch refused to build the request (a URL carrying credentials, say); nothing was sent (attempts 0). Final. */
export declare class InvalidRequestError extends EdgeOrdersError {}
/** No response (network, timeout, abort, or in a browser a Worker that does not let this page's origin read its answer). Retry under the same key. */
export declare class NetworkError extends EdgeOrdersError {}
/** order_rejected: the OMS refused the order for good. Final for the key. */
export declare class RejectedError extends EdgeOrdersError {
  readonly orderId: string;
  /** The OMS's reason, the problem's detail. */
  readonly reason: string;
  /** From a lookup: when the Worker stops serving the rejection (Idempotency-Expires), where its store knows it; null otherwise. */
  readonly expiresAt: Date | null;
}
/** idempotency_key_reused: the key names a different order. */
export declare class KeyReusedError extends EdgeOrdersError {}
/** invalid_order: the key stays free for a corrected order. */
export declare class InvalidOrderError extends EdgeOrdersError {}
/** rate_limited: not retried; see retryAfterMs. */
export declare class RateLimitedError extends EdgeOrdersError {}
/** unauthorized: a missing or unknown token. */
export declare class UnauthorizedError extends EdgeOrdersError {}
/** in_progress at the last attempt. */
export declare class InProgressError extends EdgeOrdersError {}
/** storage_unavailable at the last attempt. */
export declare class StorageUnavailableError extends EdgeOrdersError {}
/** not_found: a lookup found nothing under the key. */
export declare class NotFoundError extends EdgeOrdersError {}
/** The key is not 1 to 255 printable ASCII characters. */
export declare class InvalidKeyError extends EdgeOrdersError {}
/** A 2xx that is not a receipt, a redirect (never followed; status 0 for a browser's opaque one), a status the contract lacks, or a body over MAX_RESPONSE_BYTES. */
export declare class UnexpectedResponseError extends EdgeOrdersError {}
/** outcome_unknown when the call ended: the Worker is settling the order with the OMS. Keep the key. */
export declare class OutcomeUnknownError extends EdgeOrdersError {
  readonly orderId: string;
  /** The Worker's calls to the OMS for the order that ended without an answer stored. */
  readonly omsAttempts: number;
  /** When the Worker calls the OMS next, or null. */
  readonly nextAttemptAt: Date | null;
}
/** outcome_unresolved: the Worker stopped asking the OMS. Never retried. Test for it before OutcomeUnknownError. */
export declare class OutcomeUnresolvedError extends OutcomeUnknownError {}
