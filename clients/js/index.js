// @edge-orders/client submits orders to the edge-orders Worker, retrying
// each order under one Idempotency-Key so that it is placed at most once.
//
// The twin of the Go client (client/client.go): the same keys, the same
// retries, the same errors. It uses only fetch, crypto.randomUUID,
// AbortController, setTimeout and a body's stream reader, so it runs
// unchanged in browsers, Node.js 22 and later, and Workers. No
// dependencies.

/** The client's version, the Go client's too (client.Version): the twins change together. */
export const VERSION = "0.1.0";

/**
 * The User-Agent the client sends outside browsers, so that the Worker's
 * logs and an operator's proxy can tell it and its version apart. A
 * browser sends its own: the page's User-Agent names the browser, and one
 * set by the page would make the CORS preflight ask the Worker for a
 * header it does not allow.
 */
export const USER_AGENT = `edge-orders-js-client/${VERSION}`;

/** The longest Idempotency-Key the Worker accepts. */
export const MAX_KEY_LENGTH = 255;

/** Defaults for ClientOptions. */
export const DEFAULT_MAX_ATTEMPTS = 5;
export const DEFAULT_BASE_DELAY_MS = 100;
export const DEFAULT_MAX_DELAY_MS = 5000;
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;

/**
 * The longest the client waits before a retry, whatever a Retry-After or
 * maxDelayMs asks: a proxy's 503 page must not stall a call for days.
 */
export const MAX_RETRY_WAIT_MS = 60_000;

/** The most of a response's body the client reads; a receipt or a problem is well under 1 KiB. */
export const MAX_RESPONSE_BYTES = 1 << 20;

// deadlinePassed marks a NetworkError whose attempt the call's deadline
// ended (a timer may fire a millisecond before Date.now() reaches it).
const deadlinePassed = Symbol("deadlinePassed");

// The longest timer setTimeout keeps: a longer one fires at once.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * newKey returns a fresh Idempotency-Key: a random (version 4) UUID. Mint
 * one per order intent, when the person or program decides to place the
 * order, keep it with the order, and send every retry under it.
 */
export function newKey() {
  return crypto.randomUUID();
}

/**
 * EdgeOrdersError is a request that failed: the Worker's problem, a
 * response the client could not use, or, with status 0, no response at
 * all. Its subclasses name the cases callers act on.
 */
export class EdgeOrdersError extends Error {
  constructor(message, fields = {}) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = new.target.name;
    /** POST (submit) or GET (lookup). */
    this.method = fields.method ?? "";
    /** The Idempotency-Key sent: retry the same order under it later. */
    this.key = fields.key ?? "";
    /** How many requests were sent, the first included. */
    this.attempts = fields.attempts ?? 0;
    /** The last response's status; 0 when the last attempt got none. */
    this.status = fields.status ?? 0;
    /** The decoded RFC 9457 problem, or null when the body was none. */
    this.problem = fields.problem ?? null;
    /** The problem's stable code (its "error" member), or "". */
    this.code = this.problem?.error ?? "";
    /** How long the Worker asked the client to wait, in ms, at most MAX_RETRY_WAIT_MS; 0 if it did not say. */
    this.retryAfterMs = fields.retryAfterMs ?? 0;
    /** The last response's headers, or null. */
    this.headers = fields.headers ?? null;
    /** The last response's body text, or "". */
    this.body = fields.body ?? "";
  }

  /**
   * retryable says whether sending the same order under the same key again
   * soon may still succeed: no response (the outcome is unknown), 409 (a
   * request holds the key), or a 500, 502, 503 or 504 (a Worker that
   * crashed, a proxy's error page, storage that failed, an OMS answer the
   * Worker is settling). Every request carries its key, so a retry never
   * places a second order. Every other answer is final, and so are 500
   * misconfigured (a setting only an operator can fix) and 503
   * outcome_unresolved (no answer is seconds away).
   */
  get retryable() {
    switch (this.status) {
      case 0:
        return this instanceof NetworkError;
      case 409:
      case 502:
      case 504:
        return true;
      case 400:
        return this.code === "unreadable_body"; // the body ended early; nothing was claimed
      case 500:
        return this.code !== "misconfigured";
      case 503:
        return !(this instanceof OutcomeUnresolvedError);
    }
    return false;
  }
}

/** The Worker's TLS certificate did not verify (an unknown authority, another host's name, an expired certificate): the request was never sent, so nothing was placed, and no retry makes the certificate trusted. Final. Told apart where the runtime says why (Node.js); a browser reports it as a NetworkError. */
export class CertificateError extends EdgeOrdersError {}
/** The client could not build the request (fetch refused it before sending: a URL carrying credentials, say); nothing was sent (attempts 0) and no retry would mend it. */
export class InvalidRequestError extends EdgeOrdersError {}
/** No response: the network failed, the attempt timed out or was aborted, or (in a browser) the Worker did not let this page read its answer (CORS). The order may or may not have reached the Worker; retry under the same key. */
export class NetworkError extends EdgeOrdersError {}
/** The OMS refused the order for good (order_rejected): final for the key. `orderId` is the refused order, `reason` the OMS's reason, `expiresAt` (a Date, or null) when a lookup's Worker stops serving the rejection. */
export class RejectedError extends EdgeOrdersError {
  constructor(message, fields) {
    super(message, fields);
    this.orderId = this.problem?.orderId ?? "";
    this.reason = this.problem?.detail ?? "";
    this.expiresAt = expiresAt(this.headers);
  }
}
/** The key already names a different order (idempotency_key_reused): final; a new order needs a new key. */
export class KeyReusedError extends EdgeOrdersError {}
/** The Worker refused the order as invalid (invalid_order): final, but the key stays free, so a corrected order may use it. */
export class InvalidOrderError extends EdgeOrdersError {}
/** Too many new orders (rate_limited): not retried; `retryAfterMs` says when the Worker takes new orders again. The key is still free. */
export class RateLimitedError extends EdgeOrdersError {}
/** The token is missing or belongs to no client (unauthorized). */
export class UnauthorizedError extends EdgeOrdersError {}
/** Another request held the key at the last attempt (in_progress): retryable. */
export class InProgressError extends EdgeOrdersError {}
/** The Worker's storage failed (storage_unavailable): retryable. */
export class StorageUnavailableError extends EdgeOrdersError {}
/** A lookup found nothing under the key (not_found). */
export class NotFoundError extends EdgeOrdersError {}
/** The key is not 1 to 255 printable ASCII characters, found before sending (attempts 0) or by the Worker. */
export class InvalidKeyError extends EdgeOrdersError {}
/** A 2xx that is not a receipt, a redirect (never followed), a status the contract does not have, or a body over MAX_RESPONSE_BYTES. */
export class UnexpectedResponseError extends EdgeOrdersError {}

/**
 * The OMS did not confirm the order (outcome_unknown), and it still had not
 * when the client stopped: its attempts, its deadline or its signal ended.
 * The order may or may not exist, and the Worker is settling it with the
 * OMS by itself. `orderId` is the order the key keeps, `omsAttempts` the
 * Worker's calls to the OMS that ended without an answer so far, and
 * `nextAttemptAt` (a Date, or null) when it calls next. Keep the key: a
 * lookup later finds the settled outcome, and a retry under it never
 * places a second order. An unresolved outcome is one too.
 */
export class OutcomeUnknownError extends EdgeOrdersError {
  constructor(message, fields) {
    super(message, fields);
    this.orderId = this.problem?.orderId ?? "";
    this.omsAttempts = Number.isInteger(this.problem?.attempts) ? this.problem.attempts : 0;
    const next = typeof this.problem?.nextAttemptAt === "string" ? new Date(this.problem.nextAttemptAt) : null;
    this.nextAttemptAt = next && !Number.isNaN(next.getTime()) ? next : null;
  }
}

/**
 * The OMS never confirmed the order and the Worker stopped asking it
 * (outcome_unresolved). Returned at once, never retried: no answer is
 * seconds away. The order may or may not exist; keep the key, never send
 * the order under a new one, and reconcile `orderId` with the OMS. It is
 * an OutcomeUnknownError too: test for it first.
 */
export class OutcomeUnresolvedError extends OutcomeUnknownError {}

// errorClasses maps the Worker's problem codes to the classes callers act
// on. The other codes (method_not_allowed, origin_not_allowed,
// unreadable_body, body_too_large, misconfigured, internal_error) are an
// EdgeOrdersError with that code.
const errorClasses = {
  invalid_order: InvalidOrderError,
  idempotency_key_reused: KeyReusedError,
  in_progress: InProgressError,
  not_found: NotFoundError,
  unauthorized: UnauthorizedError,
  rate_limited: RateLimitedError,
  storage_unavailable: StorageUnavailableError,
  outcome_unknown: OutcomeUnknownError,
  outcome_unresolved: OutcomeUnresolvedError,
  order_rejected: RejectedError,
  missing_idempotency_key: InvalidKeyError,
  invalid_idempotency_key: InvalidKeyError,
};

/**
 * Client submits orders to one Worker. It holds no state between calls,
 * so one Client may serve any number of orders at once.
 */
export class Client {
  // The bearer token, private: a caller that logs the client
  // (console.log, JSON.stringify) logs no secret.
  #token;

  /**
   * @param {string} url the Worker's address; it answers on every path
   *   but /idempotency, its policy.
   * @param {object} [options] see index.d.ts, ClientOptions.
   * @throws {TypeError} for a url that is not an http or https URL (a
   *   relative one counts from the page's address, where there is one),
   *   and for a token that is not printable ASCII without spaces (a
   *   newline, NUL, any control character); neither message shows the
   *   token or the URL.
   */
  constructor(url, options = {}) {
    this.url = checkURL(String(url));
    this.#token = checkToken(options.token ?? "");
    this.maxAttempts = positive(options.maxAttempts, DEFAULT_MAX_ATTEMPTS);
    this.maxDelayMs = Math.min(positive(options.maxDelayMs, DEFAULT_MAX_DELAY_MS), MAX_RETRY_WAIT_MS);
    this.baseDelayMs = Math.min(positive(options.baseDelayMs, DEFAULT_BASE_DELAY_MS), this.maxDelayMs);
    this.attemptTimeoutMs = positive(options.attemptTimeoutMs, 0);
    this.callTimeoutMs = positive(options.callTimeoutMs, DEFAULT_CALL_TIMEOUT_MS);
    // Called through globalThis: a browser's fetch throws "Illegal
    // invocation" when called as a method of another object.
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
  }

  /**
   * submit places order under options.key, or under a key it mints when
   * there is none, and keeps that key across every retry, sent as the
   * Structured Field string that names exactly it (keyHeader). It retries
   * network errors, 409, 500 but misconfigured, 502, 503 but
   * outcome_unresolved, and 504, up to maxAttempts
   * requests, with capped, jittered backoff that honours Retry-After up to
   * MAX_RETRY_WAIT_MS, and stops early when the next wait would pass the
   * call's deadline (options.deadline or callTimeoutMs from now, whichever
   * is first) or options.signal aborts. It resolves to the receipt and rejects with an
   * EdgeOrdersError subclass for the last failure, whose `key` is the key
   * to send the same order under again.
   *
   * Mint the key with newKey() when the order intent begins and pass it
   * here, so that a caller that gives up (a reload, a crash) can send the
   * same order under it again without placing a second one.
   */
  async submit(order, options = {}) {
    const key = options.key ?? newKey();
    checkKey(key, "POST");
    const body = JSON.stringify({ symbol: order?.symbol, side: order?.side, quantity: order?.quantity });
    return this.#send("POST", key, body, options);
  }

  /**
   * lookup returns the receipt stored under key, placing nothing, with
   * expiresAt where the Worker says when it stops serving it. It
   * retries as submit does, so a lookup that meets a request still holding
   * the key, or an order the Worker is settling, waits for its outcome
   * within its attempts and deadline. It rejects with InProgressError,
   * OutcomeUnknownError (being settled: orderId, omsAttempts,
   * nextAttemptAt), OutcomeUnresolvedError, RejectedError, NotFoundError,
   * or the other errors submit has.
   */
  async lookup(key, options = {}) {
    checkKey(key, "GET");
    return this.#send("GET", key, undefined, options);
  }

  async #send(method, key, body, options) {
    const headers = this.#headers(key, body);
    const refused = unbuildable(this.url, method, headers, body);
    if (refused) {
      // Not refused.message, nor it as the cause: fetch's names the URL,
      // with its credentials and query.
      throw new InvalidRequestError(`edge-orders: ${method} with Idempotency-Key ${JSON.stringify(key)}: the request cannot be built: fetch refused it (${refused.name}; a URL with credentials, say)`, { method, key });
    }
    const maxAttempts = positive(options.maxAttempts, this.maxAttempts);
    // The call's deadline is the earlier of its own and the client's
    // timeout from now; an invalid Date is none of its own.
    const own = options.deadline === undefined ? Infinity : +options.deadline;
    const timeout = this.now() + this.callTimeoutMs;
    const deadline = Math.min(Number.isNaN(own) ? Infinity : own, timeout);
    const passed = deadline === timeout ? `the call's ${this.callTimeoutMs} ms timeout passed` : "the deadline passed";
    const signal = options.signal;
    // What earlier attempts said of the order: the Worker's last answer,
    // and the last retryable failure. Each was retryable, or the call
    // would have thrown it.
    let answered, failed;
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#once(method, key, headers, body, signal, deadline, passed);
      if (!(outcome instanceof EdgeOrdersError)) {
        return { ...outcome, key, attempts: attempt };
      }
      let e = outcome;
      const ended = signal?.aborted || e[deadlinePassed] === true || this.now() >= deadline;
      // An attempt that says nothing of the order, ended by the call's
      // signal or deadline in flight, or never sent (a certificate not
      // trusted: a rotated one, another edge), reports what an earlier
      // attempt said: an order the Worker is settling, say, which a final
      // error would hide from a caller who might send it again under a
      // new key.
      const known = answered ?? failed;
      if (known && ((ended && e instanceof NetworkError) || e instanceof CertificateError)) {
        throw Object.assign(known, { method, key, attempts: attempt });
      }
      failed = e;
      if (e.status !== 0) answered = e;
      Object.assign(e, { method, key, attempts: attempt });
      if (!e.retryable || attempt >= maxAttempts || ended) {
        throw e;
      }
      const wait = this.#wait(attempt, e);
      if (this.now() + wait > deadline) {
        throw e;
      }
      options.onRetry?.({ attempt, error: e, waitMs: wait });
      if (!(await sleep(wait, signal))) {
        throw e;
      }
    }
  }

  // A client logged or serialised shows its URL without the credentials,
  // query or fragment it may carry, as the Go client's String does, and
  // never its token.
  toJSON() {
    return { url: redactURL(this.url) };
  }

  [Symbol.for("nodejs.util.inspect.custom")]() {
    return `Client(${redactURL(this.url)})`;
  }

  // #headers are every attempt's request headers.
  #headers(key, body) {
    const headers = { "Idempotency-Key": keyHeader(key), Accept: "application/json, application/problem+json" };
    if (!inBrowser()) headers["User-Agent"] = USER_AGENT;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (this.#token) headers.Authorization = `Bearer ${this.#token}`;
    return headers;
  }

  // #once sends one request and returns the result, or the EdgeOrdersError
  // that describes its failure. passed says why the deadline ends it.
  async #once(method, key, headers, body, signal, deadline, passed) {
    // One controller ends the attempt for the caller's signal, the
    // deadline or the attempt's timeout, whichever comes first.
    const controller = new AbortController();
    const stop = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", stop, { once: true });
    if (signal?.aborted) stop();
    const untilDeadline = deadline - this.now();
    const limit = Math.min(untilDeadline, this.attemptTimeoutMs || Infinity);
    const reason = limit === untilDeadline ? passed : `the attempt took over ${this.attemptTimeoutMs} ms`;
    let ended = false; // whether the deadline ended the attempt
    const timer = Number.isFinite(limit)
      ? setTimeout(() => {
          ended = limit === untilDeadline;
          controller.abort(new Error(reason));
        }, Math.max(0, Math.min(limit, MAX_TIMER_MS)))
      : undefined;
    const what = `edge-orders: ${method} with Idempotency-Key ${JSON.stringify(key)}`;
    let response, text;
    try {
      // A redirect is never followed: it would take the order elsewhere.
      response = await this.fetch(this.url, { method, headers, body, signal: controller.signal, redirect: "manual" });
      if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
        response.body?.cancel().catch(() => {});
        return new UnexpectedResponseError(`${what}: status ${response.status}: a redirect, which the client never follows`, { status: response.status, headers: response.headers });
      }
      text = await readText(response);
    } catch (cause) {
      if (untrusted(cause)) {
        return new CertificateError(`${what}: the Worker's TLS certificate did not verify: ${cause.cause.message ?? cause.cause.code}`, { cause, status: 0 });
      }
      // No response, or one cut off: as unknown an outcome as none at all.
      const e = new NetworkError(`${what}: no response: ${cause?.message ?? cause}`, { cause, status: 0 });
      if (ended) e[deadlinePassed] = true;
      return e;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", stop);
    }
    return this.#read(what, response, text);
  }

  // #read turns a complete response into a result or an EdgeOrdersError;
  // text is null for a body over MAX_RESPONSE_BYTES.
  #read(what, response, text) {
    const { status, headers } = response;
    const fields = { status, headers, body: text };
    if (text === null) {
      return new UnexpectedResponseError(`${what}: status ${status}: body over ${MAX_RESPONSE_BYTES} bytes`, { ...fields, body: "" });
    }
    if (status === 200 || status === 201) {
      const receipt = parseJSON(text);
      if (typeof receipt?.orderId !== "string" || receipt.orderId === "" || typeof receipt.acceptedAt !== "string") {
        return new UnexpectedResponseError(`${what}: status ${status}: not a receipt`, fields);
      }
      return { receipt, raw: text, replay: headers.get("Idempotent-Replay") === "true", status, expiresAt: expiresAt(headers) };
    }
    if (status < 400) {
      return new UnexpectedResponseError(`${what}: unexpected status ${status}`, fields);
    }
    // A body that is not a problem (a proxy's error page, say) leaves the
    // problem null, and the status alone decides.
    let problem = parseJSON(text);
    if (problem === null || typeof problem !== "object" || Array.isArray(problem)) problem = null;
    const code = typeof problem?.error === "string" ? problem.error : "";
    // Own properties only: a code such as "constructor" names one of
    // Object.prototype's, which is no error class.
    const Class = Object.hasOwn(errorClasses, code) ? errorClasses[code] : EdgeOrdersError;
    const title = typeof problem?.title === "string" ? problem.title : "";
    const message = code ? `${what}: status ${status} ${code}: ${title}` : `${what}: status ${status}`;
    return new Class(message, { ...fields, problem, retryAfterMs: this.#retryAfter(headers.get("Retry-After"), problem?.retryAfter) });
  }

  // #retryAfter reads a Retry-After header, in seconds or as an HTTP date,
  // and falls back on the problem's retryAfter seconds; 0 when neither
  // said. A browser reads the header only because the Worker exposes it.
  // Either is capped at MAX_RETRY_WAIT_MS.
  #retryAfter(header, bodySeconds) {
    header = (header ?? "").trim();
    if (/^\d+$/.test(header)) return Math.min(Number(header) * 1000, MAX_RETRY_WAIT_MS);
    const date = header ? Date.parse(header) : NaN;
    if (!Number.isNaN(date)) return Math.min(Math.max(date - this.now(), 0), MAX_RETRY_WAIT_MS);
    if (Number.isInteger(bodySeconds) && bodySeconds > 0) return Math.min(bodySeconds * 1000, MAX_RETRY_WAIT_MS);
    return 0;
  }

  // #wait is how long to wait before the retry that follows attempt. A
  // 409's Retry-After is an upper bound (the claim it reports expires by
  // then, but a live request usually finishes well under a second), so
  // the backoff applies, capped by it; any other Retry-After (a 503's) is
  // the least the Worker asked for, as RFC 9110 has it.
  #wait(attempt, e) {
    const d = backoff(attempt, this.baseDelayMs, this.maxDelayMs, this.random);
    if (e.retryAfterMs <= 0) return d;
    return e.status === 409 ? Math.min(d, e.retryAfterMs) : Math.max(d, e.retryAfterMs);
  }
}

/**
 * backoff is the full-jitter wait, in ms, after attempt (1 for the first):
 * uniform in [0, min(maxDelayMs, baseDelayMs·2^(attempt-1))], so that
 * clients that failed together do not retry together. random returns a
 * uniform value in [0, 1).
 */
export function backoff(attempt, baseDelayMs, maxDelayMs, random = Math.random) {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(attempt - 1, 52));
  return Math.floor(random() * (ceiling + 1));
}

/**
 * keyHeader is key as the Idempotency-Key header carries it: the
 * Structured Field string (RFC 9651) the IETF draft makes the header, in
 * double quotes with each " and \\ escaped by a backslash. Sent bare, a
 * key "x" in quotes would name x, a comma would make a list, and spaces at
 * either end would be trimmed: another key than the caller's.
 */
export function keyHeader(key) {
  return `"${key.replace(/[\\"]/g, "\\$&")}"`;
}

// checkKey rejects what the Worker would refuse with
// invalid_idempotency_key, so that a bad key fails before any request.
function checkKey(key, method) {
  if (typeof key !== "string" || key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new InvalidKeyError(`edge-orders: an Idempotency-Key is 1 to ${MAX_KEY_LENGTH} printable ASCII characters, not ${typeof key === "string" ? key.length : typeof key}`, { method, key: String(key) });
  }
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) {
      throw new InvalidKeyError(`edge-orders: Idempotency-Key character ${i} is U+${c.toString(16).padStart(4, "0")}, not printable ASCII`, { method, key });
    }
  }
}

// checkURL returns url, or throws a TypeError for one no retry could
// reach: not a URL, or a scheme other than http and https (a
// "localhost:8787" without one reads as scheme "localhost:"). A relative
// URL counts from the page's address, as fetch resolves it there. The
// message names the scheme, never the URL, whose query may carry a secret.
function checkURL(url) {
  let parsed;
  try {
    parsed = new URL(url, globalThis.location?.href);
  } catch {
    throw new TypeError("edge-orders: the Worker's URL does not parse as an absolute URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new TypeError(`edge-orders: the Worker's URL has scheme ${JSON.stringify(parsed.protocol)}, want http: or https:`);
  }
  return url;
}

// redactURL is url without its credentials, query and fragment.
function redactURL(url) {
  try {
    const u = new URL(url, globalThis.location?.href);
    u.username = u.password = u.search = u.hash = "";
    return u.href;
  } catch {
    return "(the Worker's URL)";
  }
}

// unbuildable returns why fetch would refuse this request before sending
// it (the Request constructor's TypeError), or null when it would not:
// a request that cannot be built fails the same way on every attempt.
function unbuildable(url, method, headers, body) {
  try {
    new Request(new URL(url, globalThis.location?.href), { method, headers, body });
    return null;
  } catch (e) {
    return e;
  }
}

// certificateCodes are the codes Node.js gives a TLS trust failure (its
// own for a name mismatch, OpenSSL's verify results for the rest).
const certificateCodes = new Set([
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "HOSTNAME_MISMATCH",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_SIGNATURE_FAILURE",
  "INVALID_CA",
]);

// untrusted reports whether a fetch failure is a TLS trust failure: fetch's
// TypeError whose cause carries one of certificateCodes. A browser hides
// the cause, so there it stays a NetworkError.
function untrusted(error) {
  return certificateCodes.has(error?.cause?.code);
}

// inBrowser reports whether a browser runs the client: every browser's
// navigator.userAgent starts "Mozilla/" (Node.js says "Node.js/22", a
// Worker "Cloudflare-Workers").
function inBrowser() {
  return typeof globalThis.navigator?.userAgent === "string" && globalThis.navigator.userAgent.startsWith("Mozilla/");
}

// checkToken returns token, or throws a TypeError for one that no Worker
// holds (printable ASCII, no spaces) and that a header cannot carry whole.
// The message says where and what the character is, never the token.
function checkToken(token) {
  if (typeof token !== "string") {
    throw new TypeError(`edge-orders: a token is a string, not ${typeof token}`);
  }
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c <= 0x20 || c > 0x7e) {
      throw new TypeError(`edge-orders: token character ${i} is U+${c.toString(16).padStart(4, "0")}; a token is printable ASCII without spaces`);
    }
  }
  return token;
}

// readText reads response's body as UTF-8, counting its bytes as they
// come, and returns null as soon as they pass MAX_RESPONSE_BYTES, the rest
// cancelled unread.
async function readText(response) {
  if (Number(response.headers?.get("Content-Length")) > MAX_RESPONSE_BYTES) {
    response.body?.cancel().catch(() => {});
    return null;
  }
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

// expiresAt reads the Idempotency-Expires header, which a lookup's answer
// carries where the Worker's store knows when the outcome expires: a Date,
// or null when absent or not a date as the receipt's acceptedAt is written.
// A browser reads it only because the Worker exposes it.
function expiresAt(headers) {
  const value = headers?.get?.("Idempotency-Expires") ?? "";
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

function positive(value, fallback) {
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

function parseJSON(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

// sleep waits ms, and resolves to false at once if signal aborts first.
function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const done = (ok) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(ok);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
