// An order ticket that cannot place an order twice, with
// @edge-orders/client.
//
// - The Idempotency-Key is minted when the ticket is opened: one per
//   intent, never per click.
// - Submit is disabled while the order is in flight, so a double-click
//   sends one request (and a second one would carry the same key anyway).
// - The ticket (key and order) stays in sessionStorage until the order has
//   a final answer, so a reload in flight re-sends the same intent under
//   the same key instead of a new one. Only the ticket's own final answer
//   clears it.
// - One request at a time: Submit and New ticket are disabled while the
//   ticket's order or its check is in flight, and every answer is checked
//   against the open ticket's key, so an answer that comes late never
//   lands on a newer ticket.
// - Each answer a person must tell apart has its own state (data-state on
//   #status): placed, replayed (placed earlier), rejected (with the OMS's
//   reason), unknown (the Worker is settling it), not placed, unresolved,
//   rate-limited, invalid, unauthorized, and unreadable (no answer this
//   page may read: the network, or a Worker that does not allow this
//   page's origin).
// - While the outcome is unknown, the page checks again by itself: an
//   order the OMS did not confirm, by sending it again under the same key,
//   which settles it in every mode, as the Worker's settler would; any
//   other answer that may be retried (a request still holding the key,
//   storage down), by a lookup, which never places the order late: if it
//   finds nothing, the page says so and Submit sends it again.
//
// Open it as index.html?worker=<the Worker's URL> on this machine; the
// Worker's ALLOWED_ORIGINS must list this page's origin.
import {
  Client,
  EdgeOrdersError,
  InProgressError,
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
  backoff,
  newKey,
} from "@edge-orders/client";

// The Worker this page sends orders to: pin yours here when you deploy the
// page. ?worker= overrides it only on a page served from this machine
// (make dev, the tests, which need Workers on ports of their own): on a
// desk's deployed page a link could otherwise send the desk's orders to a
// Worker of the link's choosing.
const pinnedWorker = "http://127.0.0.1:8787";
const servedLocally = ["localhost", "127.0.0.1", "[::1]"].includes(location.hostname);
const workerURL = (servedLocally && new URLSearchParams(location.search).get("worker")) || pinnedWorker;
const client = new Client(workerURL, { attemptTimeoutMs: 15_000 });

// How long one Submit keeps retrying before it says what it knows.
const submitBudgetMs = 20_000;
// How soon the page checks again after a retryable answer (a 409, a 5xx):
// at least the first, and up to a backoff that doubles with each one in a
// row, to the longest.
const firstRecheckMs = 2_000;
const maxRecheckMs = 60_000;
// Where the open ticket lives until its order has a final answer.
const stored = "edge-orders.ticket";

const $ = (id) => document.getElementById(id);
const form = $("ticket");
const fields = [$("symbol"), $("side"), $("quantity")];
const submitButton = $("submit");
const newButton = $("new");

// ticket is the open intent: its key, and the order once sent. The key is
// also the ticket's id: an answer is for the open ticket only if it was
// asked under the open ticket's key.
let ticket;
let inFlight = false; // a request, the page's only one, is in flight
let recheck; // the timer of the next check while the Worker settles the order

$("worker").textContent = workerURL;
$("origin").textContent = location.origin;

function save() {
  sessionStorage.setItem(stored, JSON.stringify(ticket));
}

// settled forgets the stored ticket mine: its order has a final answer,
// and a reload now opens a new ticket. Another ticket's stored intent is
// left alone. The ticket stays in memory, so Submit sends the same intent
// again and gets the same answer.
function settled(mine) {
  if (JSON.parse(sessionStorage.getItem(stored) ?? "null")?.key === mine.key) {
    sessionStorage.removeItem(stored);
  }
}

// open says whether mine is still the open ticket.
const open = (mine) => mine.key === ticket.key;

// busy marks the page's one request as in flight, or no longer.
function busy(on) {
  inFlight = on;
  submitButton.disabled = newButton.disabled = on;
}

function openTicket() {
  clearTimeout(recheck);
  ticket = { key: newKey(), order: null };
  save();
  fields.forEach((f) => (f.disabled = false));
  $("key").textContent = ticket.key;
  $("receipts").replaceChildren();
  show("new", "New ticket", "Fill in the order and submit it. Its key was minted when this ticket opened; every retry of it is sent under that key.");
}

function show(state, title, detail) {
  $("status").dataset.state = state;
  $("status-title").textContent = title;
  $("status-detail").textContent = detail;
}

function readForm() {
  return { symbol: $("symbol").value.trim(), side: $("side").value, quantity: Number($("quantity").value) };
}

function showReceipt(result) {
  const r = result.receipt;
  const card = document.createElement("article");
  card.className = "receipt";
  card.dataset.orderId = r.orderId;
  const h = document.createElement("h3");
  h.textContent = result.replay ? "Receipt (placed earlier)" : "Receipt";
  const dl = document.createElement("dl");
  for (const [name, value] of [["Order", r.orderId], ["Symbol", r.symbol], ["Side", r.side], ["Quantity", String(r.quantity)], ["Accepted", r.acceptedAt]]) {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = value;
    dl.append(dt, dd);
  }
  card.append(h, dl);
  // One receipt per ticket, however many times its answer comes.
  $("receipts").replaceChildren(card);
}

const seconds = (ms) => `${Math.max(1, Math.round(ms / 1000))} s`;

// onRetry shows why the client waits before sending the intent again.
function onRetry({ attempt, error, waitMs }) {
  if (error instanceof OutcomeUnknownError) {
    show("unknown", "Outcome not yet known",
      `The OMS did not confirm order ${error.orderId}, so it may or may not exist. The Worker is settling it with the OMS by itself ` +
        `(${error.omsAttempts} call${error.omsAttempts === 1 ? "" : "s"} so far). This page asks again in ${seconds(waitMs)}, under the same key: ` +
        "it can never place a second order. Do not open a new ticket for it.");
  } else if (error instanceof InProgressError) {
    show("sending", "Still being placed", `An earlier request of this ticket is still working on it; asking again in ${seconds(waitMs)}.`);
  } else if (error instanceof StorageUnavailableError) {
    show("retrying", "Worker busy", `The Worker's storage failed; sending the same order again in ${seconds(waitMs)}.`);
  } else {
    show("retrying", `No answer (attempt ${attempt})`, `Sending the same order again in ${seconds(waitMs)}, under the same key.`);
  }
}

// send sends the open ticket's order: how is "new" (Submit), "resuming"
// (after a reload) or "checking" (again, by itself, an order the OMS did
// not confirm). A check is the same order under the same key, not a
// lookup: a POST settles an open order in every mode, where a lookup only
// reads what a settler stored (none runs in KV mode without a settle
// queue), and a key that holds an order can never place a second one.
function send(how) {
  const once = how === "checking" ? { maxAttempts: 1 } : { deadline: Date.now() + submitBudgetMs };
  return one(how === "checking", (mine) => {
    if (how === "resuming") {
      show("resuming", "Resuming", "This ticket was sent before the page reloaded: sending the same order again under its key, to learn its outcome.");
    } else if (how === "new") {
      show("sending", "Sending", "Sending the order.");
    }
    return client.submit(mine.order, { key: mine.key, ...once, onRetry: (e) => open(mine) && onRetry(e) });
  }, (result) => {
    if (result.replay) {
      show("replayed", "Placed earlier", `Order ${result.receipt.orderId} was already placed under this ticket's key; this is its original receipt.`);
    } else {
      show("placed", "Placed", `Order ${result.receipt.orderId} is placed.`);
    }
  });
}

// lookup asks for the outcome of the open ticket's order after an answer
// that may be retried but names no order the OMS did not confirm: it
// never places the order, late, after the person stopped watching.
function lookup() {
  return one(true, (mine) => client.lookup(mine.key, { maxAttempts: 1 }), (result) =>
    show("replayed", "Placed earlier", `Order ${result.receipt.orderId} was already placed under this ticket's key; this is its original receipt.`));
}

// one is the page's one request for the open ticket, mine: call(mine)
// resolves to its receipt, which it shows, and done(result) says what it
// means; a failure is answered (answerError). An answer for a ticket no
// longer open is dropped. check marks the request on #status as a check
// ("checking…").
async function one(check, call, done) {
  if (inFlight) return;
  const mine = ticket;
  busy(true);
  clearTimeout(recheck);
  checking(check);
  try {
    const result = await call(mine);
    if (!open(mine)) return;
    settled(mine);
    showReceipt(result);
    done(result);
  } catch (e) {
    if (open(mine)) answerError(e, mine);
  } finally {
    checking(false);
    busy(false);
  }
}

const checking = (on) => $("status").toggleAttribute("data-checking", on);

// answerError shows the failure e of the open ticket mine.
function answerError(e, mine) {
  if (e instanceof RejectedError) {
    settled(mine);
    const replay = e.headers?.get("Idempotent-Replay") === "true";
    show("rejected", replay ? "Refused (earlier)" : "Refused", `The OMS refused order ${e.orderId}: ${e.reason}. This is final for this ticket; submitting it again shows this answer again.`);
  } else if (e instanceof OutcomeUnresolvedError) {
    show("unresolved", "Outcome unresolved",
      `The OMS never confirmed order ${e.orderId} and the Worker stopped asking. It may or may not exist: ask the desk to look up ${e.orderId} in the OMS. Keep this ticket; never re-enter the order.`);
  } else if (e instanceof OutcomeUnknownError) {
    // Still unknown after this Submit's budget: the Worker keeps settling
    // it; look it up when it next asks the OMS.
    const wait = Math.max(e.retryAfterMs, 1000);
    mine.rechecks = 0; // the Worker answers: its settler is on it
    show("unknown", "Outcome not yet known",
      `The OMS did not confirm order ${e.orderId}. The Worker is settling it by itself (${e.omsAttempts} call${e.omsAttempts === 1 ? "" : "s"} so far${e.nextAttemptAt ? `, next at ${e.nextAttemptAt.toLocaleTimeString()}` : ""}). ` +
        "This page checks again by itself. Do not open a new ticket for it.");
    recheck = setTimeout(() => open(mine) && send("checking"), wait);
  } else if (e instanceof NotFoundError) {
    // A lookup found nothing under the key: the order was not placed (or
    // its key is not yet seen here). Sending it again is the person's call.
    show("not-placed", "Not placed",
      "The Worker holds nothing under this ticket's key: the order was not placed, or is not yet visible to it. Submit sends the same order again under the same key, which can never place it twice; a new ticket could.");
  } else if (e instanceof RateLimitedError) {
    show("rate-limited", "Rate limited", `Too many new orders: the Worker takes new ones again in ${seconds(e.retryAfterMs)}. Nothing was placed; Submit then sends this ticket under the same key.`);
  } else if (e instanceof InvalidOrderError) {
    // The key stays free: a corrected order may use it.
    mine.order = null;
    save();
    fields.forEach((f) => (f.disabled = false));
    show("invalid", "Invalid order", "The Worker refused this order as invalid: a symbol, buy or sell, and a whole quantity above 0. Correct it and submit again.");
  } else if (e instanceof KeyReusedError) {
    settled(mine);
    show("key-reused", "Key already used", "This ticket's key names a different order. Open a new ticket.");
  } else if (e instanceof UnauthorizedError) {
    show("unauthorized", "Not authorized", "The Worker refused this page's token.");
  } else if (e instanceof NetworkError) {
    show("unreadable", "No answer this page can read",
      `No answer came that this page may read: the network may be down, or the Worker does not allow this page's origin (${location.origin}) in its ALLOWED_ORIGINS, so the browser hides its answers. ` +
        "The order may or may not have been sent. Submit again sends it under the same key, which can never place it twice.");
  } else if (e instanceof EdgeOrdersError && e.retryable) {
    // A request (or the settler, asking the OMS) still holds the key, or the
    // Worker's storage failed, or it crashed: the order may exist. Not a
    // failure: keep checking under the same key, less often the longer it
    // lasts (an outage is not asked every 2 s), and never sooner than the
    // Worker's Retry-After.
    const inARow = mine.rechecks ?? 0;
    mine.rechecks = inARow + 1;
    const wait = Math.max(e.retryAfterMs, firstRecheckMs, backoff(inARow + 1, firstRecheckMs, maxRecheckMs));
    show("unknown", "Outcome not yet known",
      `The Worker answered ${e.status} ${e.code || ""}: this order may or may not exist yet. This page checks again by itself in ${seconds(wait)}, under the same key. Do not open a new ticket for it.`);
    recheck = setTimeout(() => open(mine) && lookup(), wait);
  } else {
    show("error", "Failed", e instanceof EdgeOrdersError ? `${e.status} ${e.code || ""}: ${e.problem?.detail ?? e.message}` : String(e));
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  // Disabled at once, in the same task as the click: a second click of a
  // double-click finds the button disabled.
  if (inFlight) return;
  if (!ticket.order) {
    ticket.order = readForm();
    save();
  }
  fields.forEach((f) => (f.disabled = true));
  send("new");
});

newButton.addEventListener("click", openTicket);

// A ticket left by a reload: the same intent, under the same key.
const left = JSON.parse(sessionStorage.getItem(stored) ?? "null");
if (left?.key) {
  ticket = left;
  $("key").textContent = ticket.key;
  if (ticket.order) {
    $("symbol").value = ticket.order.symbol;
    $("side").value = ticket.order.side;
    $("quantity").value = String(ticket.order.quantity);
    fields.forEach((f) => (f.disabled = true));
    send("resuming");
  } else {
    show("new", "Ticket", "Fill in the order and submit it.");
  }
} else {
  openTicket();
}
