// The ops page: the keys whose outcome is not final, one key's detail,
// and the two actions an operator takes on a key, over the Worker's admin
// API (/admin/, docs/operating.md).
//
// - The admin token is kept in sessionStorage only: never localStorage,
//   never the URL. Sign out, or closing the tab, forgets it.
// - Every value that came from a client or an operator (keys, symbols,
//   reasons, notes, stored receipts) and every problem the API answers
//   is put on the page as text (textContent), never as markup. The CSP in
//   public/_headers (Trusted Types) makes markup from a string throw.
// - Resolve and Purge each ask for confirmation in a <dialog> that names
//   the key, and the API's refusal, a problem's title and detail, is shown
//   as it comes.

import { deadLetters } from "./deadletters.js";

const tokenKey = "edge-orders.ops.token";
// How often the attention list is fetched again.
const refreshMs = 5000;
// The attention list is fetched a page at a time until the API gives no
// cursor: a pass. A refresh reads at most maxPages pages, and the next
// goes on from its cursor at once, so a pass may span refreshes (a ledger
// listing visits at most 32 shard objects a page). Until a pass has read
// every page, the page never says that nothing needs attention.
const pageLimit = 100;
const maxPages = 10;
// The states that need attention, in the order the list shows them.
const attentionStates = ["unresolved", "unknown", "in_progress"];
const stateLabel = { unresolved: "unresolved", unknown: "unknown", in_progress: "in progress", accepted: "accepted", rejected: "rejected" };

const $ = (id) => document.getElementById(id);

// el makes an element holding text, never markup.
function el(tag, text, className) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (className) e.className = className;
  return e;
}

// when shows a time the Worker sent (ISO 8601, UTC) with a space for the
// T, so that it wraps there; anything else as it came.
const when = (t) => (typeof t === "string" && /^\d{4}-\d\d-\d\dT/.test(t) ? t.replace("T", " ") : t);

function stateBadge(state) {
  const s = el("span", stateLabel[state] ?? state ?? "?", "state");
  s.dataset.state = String(state);
  return s;
}

// Problem is an answer of the API that is not a success, or no answer:
// status 0.
class Problem extends Error {
  constructor(status, title, detail, code) {
    super(title);
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.code = code;
  }
}

const token = () => sessionStorage.getItem(tokenKey);

// api calls the admin API on this page's origin with the admin token, and
// returns the parsed JSON body (null when there is none), or throws a
// Problem.
async function api(method, path, body) {
  const t = token();
  if (!t) throw new Problem(401, "Signed out", "Sign in with an admin token.");
  const headers = { Authorization: `Bearer ${t}`, Accept: "application/json, application/problem+json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store", credentials: "omit", redirect: "error",
    });
  } catch (e) {
    throw new Problem(0, "No answer from the Worker", `The request did not complete (${e.message}). Nothing is known to have changed; try again.`);
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: shown below as text
  }
  if (!res.ok) {
    const p = data && typeof data === "object" ? data : {};
    const problem = new Problem(res.status, p.title ?? `${res.status} ${res.statusText}`, p.detail ?? text.slice(0, 500), p.error);
    problem.challenge = res.headers.get("WWW-Authenticate");
    throw problem;
  }
  return data;
}

// keyPath is the admin path of client's key, with suffix ("/resolve"),
// and for a resolve or a purge the order id the operator confirmed, which
// the key must still hold (else 409 order_mismatch). A client or key that
// is . or .. cannot be a path segment (the URL parser removes it, %2E%2E
// too): those are named in the query instead.
const dots = (s) => s === "." || s === "..";
const keyPath = (client, key, suffix = "", orderId) => {
  const precondition = orderId ? `orderId=${encodeURIComponent(orderId)}` : "";
  return dots(client) || dots(key)
    ? `/admin/order${suffix}?client=${encodeURIComponent(client)}&key=${encodeURIComponent(key)}${precondition ? `&${precondition}` : ""}`
    : `/admin/orders/${encodeURIComponent(client)}/${encodeURIComponent(key)}${suffix}${precondition ? `?${precondition}` : ""}`;
};

// --- Signing in and out -------------------------------------------------

function showConsole() {
  $("login").hidden = true;
  $("console").hidden = false;
}

function signOut(problem) {
  sessionStorage.removeItem(tokenKey);
  clearTimeout(timer);
  current = null;
  pass = complete = null;
  $("rows").replaceChildren();
  letters.clear();
  $("detail").hidden = true;
  $("console").hidden = true;
  $("login").hidden = false;
  hideNotice();
  answerAt("top-slot");
  if (problem) showProblem(problem, refused(problem) && !problem.off ? "Token refused" : "");
  else hideProblem();
  $("token").focus();
}

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  const t = $("token").value.trim();
  $("token").value = "";
  if (!t) return;
  sessionStorage.setItem(tokenKey, t);
  hideProblem();
  showConsole();
  refresh();
});

$("sign-out").addEventListener("click", () => signOut());

const refused = (e) => e.status === 401 || e.status === 403;

// --- Messages -------------------------------------------------------------

// answerAt moves the page's answers (#messages) into slot: the top of the
// page, or the key's detail for an action taken there.
function answerAt(slot) {
  if ($("messages").parentElement !== $(slot)) $(slot).append($("messages"));
}

function showProblem(e, context) {
  const p = $("problem");
  p.dataset.status = String(e.status ?? 0);
  p.dataset.code = e.code ?? "";
  $("problem-title").textContent = context ? `${context}: ${e.title}` : e.title;
  $("problem-detail").textContent = e.detail ?? "";
  p.hidden = false;
  p.scrollIntoView({ block: "nearest" });
}

function hideProblem() {
  $("problem").hidden = true;
}

function showNotice(kind, text) {
  const n = $("notice");
  n.dataset.kind = kind;
  n.textContent = text;
  n.hidden = false;
  n.scrollIntoView({ block: "nearest" });
}

function hideNotice() {
  $("notice").hidden = true;
}

// --- The attention list ---------------------------------------------------

let timer;
let refreshing = false;
let again = false;
// pass is the listing being read: its entries so far, its cursor and its
// pages; complete is the entries of the last pass that read every page,
// null before the first.
let pass = null;
let complete = null;

// readList reads up to maxPages pages of the current pass, and reports
// whether the pass read its last page.
async function readList() {
  if (!pass) pass = { entries: [], cursor: undefined, pages: 0 };
  let pages = 0;
  do {
    let path = `/admin/orders?state=${attentionStates.join(",")}&limit=${pageLimit}`;
    if (pass.cursor) path += `&cursor=${encodeURIComponent(pass.cursor)}`;
    const page = (await api("GET", path)) ?? {};
    pass.entries.push(...(Array.isArray(page.orders) ? page.orders : []));
    pass.cursor = page.cursor;
    pass.pages++;
    pages++;
  } while (pass.cursor && pages < maxPages);
  if (pass.cursor) return false;
  complete = pass.entries;
  pass = null;
  return true;
}

// refresh fetches the attention list and its counts, then again after
// refreshMs; one refresh at a time.
async function refresh() {
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = true;
  clearTimeout(timer);
  try {
    const done = await readList();
    if (!done) again = true; // the pass goes on at once
    // The open key too, so that the list and its detail are drawn
    // together and never disagree.
    const drawDetail = await refreshDetail();
    const drawLetters = await letters.read();
    if (!token()) return; // signed out meanwhile: show nothing
    if (done) {
      renderList(complete, false);
      const u = $("updated");
      u.textContent = `Updated ${new Date().toLocaleTimeString()}`;
      u.dataset.at = String(Date.now());
    } else if (!complete) {
      // The first pass, still reading: what it found so far, at least.
      renderList(pass.entries, true);
    }
    drawDetail();
    drawLetters();
    $("list-error").textContent = "";
  } catch (thrown) {
    const e = thrown instanceof Problem ? thrown : new Problem(0, "The page failed", String(thrown));
    // Without ADMIN_TOKENS, /admin/ answers as any path of the Worker:
    // a GET there is a lookup without a key, 400 (405 from an older one).
    // With API_TOKENS, an admin token there is refused as a client's,
    // 401 under the order path's challenge, not the admin API's.
    const challenge = thrown instanceof Problem ? thrown.challenge ?? "" : "";
    const notServed = e.status === 405 || (e.status === 400 && e.code === "missing_idempotency_key") ||
      (e.status === 401 && challenge !== "" && !challenge.includes("edge-orders-admin"));
    const off = notServed && Object.assign(new Problem(e.status, "The admin API is off",
      "This Worker has no ADMIN_TOKENS secret, so /admin/ is not served. Set it (docs/deploy.md), then sign in again."), { off: true });
    if (refused(e) || off) {
      refreshing = false;
      signOut(off || e);
      return;
    }
    $("list-error").textContent = `Could not refresh: ${e.title}${e.detail ? `: ${e.detail}` : ""}`;
  } finally {
    refreshing = false;
  }
  if (!token()) return;
  if (again) {
    again = false;
    refresh();
  } else {
    timer = setTimeout(refresh, refreshMs);
  }
}

// renderList shows entries and their counts; partial says a pass is
// still reading, so the counts are "at least" and nothing is said to
// need no attention.
function renderList(entries, partial) {
  for (const s of attentionStates) {
    const n = entries.filter((e) => e.state === s).length;
    $(`count-${s}`).textContent = `${n}${partial ? "+" : ""}`;
  }
  const rank = (s) => (attentionStates.includes(s) ? attentionStates.indexOf(s) : attentionStates.length);
  const sorted = [...entries].sort((a, b) => rank(a.state) - rank(b.state) || String(a.acceptedAt).localeCompare(String(b.acceptedAt)));
  const rows = sorted.map((entry) => {
    const o = entry.order ?? {};
    const tr = document.createElement("tr");
    tr.dataset.client = String(entry.client);
    tr.dataset.key = String(entry.key);
    tr.dataset.state = String(entry.state);
    if (current && current.client === tr.dataset.client && current.key === tr.dataset.key) tr.setAttribute("aria-current", "true");
    const order = el("td", null, "order");
    order.append(el("span", `${o.side ?? "?"} ${o.quantity ?? "?"} `), el("span", o.symbol ?? "?", "symbol"), el("br"), el("code", entry.orderId ?? "", "small"));
    const state = el("td");
    state.append(stateBadge(entry.state));
    const key = el("td");
    key.append(el("code", entry.key, "key"));
    const open = el("td");
    const button = el("button", "Open", "open secondary");
    button.type = "button";
    open.append(button);
    tr.append(state, el("td", entry.client, "client"), key, order, el("td", when(entry.acceptedAt) ?? "", "time"),
      el("td", entry.attempts ?? "", "num"), el("td", entry.state === "unresolved" ? "stopped" : (when(entry.nextAttemptAt) ?? "–"), "time"), open);
    return tr;
  });
  $("rows").replaceChildren(...rows);
  $("empty").hidden = rows.length > 0 || partial;
  $("reading").hidden = !partial;
}

$("rows").addEventListener("click", (event) => {
  const button = event.target.closest("button.open");
  if (!button) return;
  const tr = button.closest("tr");
  openKey(tr.dataset.client, tr.dataset.key);
});

$("find").addEventListener("submit", (event) => {
  event.preventDefault();
  openKey($("find-client").value.trim(), $("find-key").value);
});

// --- One key -------------------------------------------------------------

// current is the key the detail shows: {client, key, entry}.
let current = null;
// renders counts the detail's renderings (#detail's data-rendered).
let renders = 0;
// acting is whether a Resolve or Purge is in flight.
let acting = false;

// refreshDetail fetches the open key again, with the list, and returns
// what draws it, so that the detail never shows a state the list has
// left; nothing while an action or its confirmation is under way, which
// draw it themselves.
async function refreshDetail() {
  const nothing = () => {};
  const mine = current;
  if (!mine?.entry || acting || $("confirm").open) return nothing;
  const still = () => current === mine && !acting && !$("confirm").open;
  try {
    const entry = await api("GET", keyPath(mine.client, mine.key));
    return () => {
      if (!still()) return;
      mine.entry = entry;
      renderDetail(mine);
    };
  } catch (e) {
    if (refused(e)) throw e;
    if (e.status !== 404) return nothing; // the next refresh asks again
    return () => {
      if (!still()) return;
      current = null;
      $("detail").hidden = true;
      answerAt("top-slot");
      showProblem(e, `Key ${mine.key} of client ${mine.client} is no longer held`);
    };
  }
}

async function openKey(client, key) {
  hideProblem();
  hideNotice();
  answerAt("top-slot");
  const mine = { client, key, entry: null };
  current = mine;
  for (const tr of $("rows").children) tr.toggleAttribute("aria-current", tr.dataset.client === client && tr.dataset.key === key);
  try {
    const entry = await api("GET", keyPath(client, key));
    if (current !== mine) return;
    mine.entry = entry;
    renderDetail(mine);
    $("detail").scrollIntoView({ block: "start" });
  } catch (e) {
    if (current !== mine) return;
    if (refused(e)) return signOut(e);
    current = null;
    $("detail").hidden = true;
    showProblem(e, `Key ${key} of client ${client}`);
  }
}

// stored renders a stored value (an object, or JSON text) as indented
// JSON text.
function stored(value) {
  let v = value;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v, null, 2);
}

function renderDetail({ client, key, entry }) {
  const o = entry.order ?? {};
  const open = attentionStates.includes(entry.state);
  $("detail-key").textContent = entry.key ?? key;
  $("detail-state").replaceChildren(stateBadge(entry.state));
  $("detail").dataset.state = String(entry.state);
  const fields = [
    ["Client", entry.client ?? client],
    ["Order id", entry.orderId],
    ["Symbol", o.symbol],
    ["Side", o.side],
    ["Quantity", o.quantity],
    ["Accepted at", when(entry.acceptedAt)],
    ["OMS calls", open ? entry.attempts : undefined],
    ["Next call", entry.state === "unresolved" ? "none: the settler stopped" : when(entry.nextAttemptAt)],
    ["Expires at", when(entry.expiresAt)],
  ];
  const dl = $("detail-fields");
  dl.replaceChildren();
  for (const [name, value] of fields) {
    if (value === undefined || value === null || value === "") continue;
    const dd = el("dd", value);
    dd.dataset.field = name;
    dl.append(el("dt", name), dd);
  }
  // The stored outcome, byte for byte as the client's retry gets it: a
  // receipt, or, with rejected, the stored rejection.
  const held = [];
  if (entry.receipt !== undefined && entry.receipt !== null) {
    const name = entry.rejected === true ? "Stored rejection" : "Receipt";
    const pre = el("pre", stored(entry.receipt));
    pre.dataset.field = name;
    held.push(el("h3", name), pre);
  }
  const all = el("details");
  all.append(el("summary", "Everything the Worker holds for this key"), el("pre", stored(entry)));
  $("detail-stored").replaceChildren(...held, all);
  $("resolve-order").textContent = entry.orderId ?? "";
  $("resolve").hidden = !open;
  $("detail").hidden = false;
  $("detail").dataset.rendered = String(++renders);
}

// --- Confirmation ----------------------------------------------------------

// confirmAction shows the dialog and resolves to whether the operator
// confirmed; Escape or Cancel is no.
function confirmAction(title, text, fields) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  const dl = $("confirm-fields");
  dl.replaceChildren();
  for (const [name, value] of fields) dl.append(el("dt", name), el("dd", value === undefined || value === "" ? "–" : value));
  dialog.returnValue = "";
  dialog.showModal();
  $("confirm-no").focus();
  return new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true }));
}

function busy(on) {
  acting = on;
  for (const id of ["resolve-open", "purge-open", "find-open"]) $(id).disabled = on;
}

// A reason goes with a rejection only (the OMS's reason, which the
// client's retry gets); an acceptance has none.
function reasonField() {
  const rejected = $("resolve-status").value === "rejected";
  const reason = $("resolve-reason");
  reason.disabled = !rejected;
  reason.required = rejected;
  if (!rejected) reason.value = "";
}
$("resolve-status").addEventListener("change", reasonField);
reasonField();

$("resolve").addEventListener("submit", async (event) => {
  event.preventDefault();
  const mine = current;
  if (!mine?.entry) return;
  const status = $("resolve-status").value;
  const reason = $("resolve-reason").value.trim();
  const note = $("resolve-note").value.trim();
  const ok = await confirmAction(`Record order ${mine.entry.orderId ?? ""} as ${status}?`,
    status === "accepted"
      ? "The Worker stores the receipt its settler would have stored and stops asking the OMS; the client's retry gets that receipt. Confirm only if the OMS has this order."
      : "The Worker stores the rejection and stops asking the OMS; the client's retry gets it. Confirm only if the OMS refused this order or does not have it.",
    [["Client", mine.client], ["Key", mine.key], ["Order id", mine.entry.orderId], ["Outcome", status], ["Reason", reason], ["Note", note]]);
  if (!ok || current !== mine) return;
  const body = { status };
  if (reason) body.reason = reason;
  if (note) body.note = note;
  hideProblem();
  hideNotice();
  answerAt("detail-slot");
  busy(true);
  try {
    const after = await api("POST", keyPath(mine.client, mine.key, "/resolve", mine.entry.orderId), body);
    mine.entry = after && after.state ? after : await api("GET", keyPath(mine.client, mine.key));
    if (current === mine) {
      renderDetail(mine);
      $("resolve-reason").value = $("resolve-note").value = "";
      $("resolve-status").value = "accepted";
      reasonField();
    }
    showNotice("resolved", `Recorded order ${mine.entry.orderId ?? ""} (key ${mine.key} of client ${mine.client}) as ${status}.`);
  } catch (e) {
    if (refused(e)) return signOut(e);
    showProblem(e, "Resolve refused");
  } finally {
    busy(false);
  }
  refresh();
});

$("purge-open").addEventListener("click", async () => {
  const mine = current;
  if (!mine?.entry) return;
  const ok = await confirmAction(`Purge key ${mine.key}?`,
    "Deletes the key's stored outcome and everything else the Worker holds for it. A retry of this key afterwards is taken as a new request.",
    [["Client", mine.client], ["Key", mine.key], ["Order id", mine.entry.orderId], ["State", stateLabel[mine.entry.state] ?? mine.entry.state]]);
  if (!ok || current !== mine) return;
  hideProblem();
  hideNotice();
  answerAt("detail-slot");
  busy(true);
  try {
    await api("DELETE", keyPath(mine.client, mine.key, "", mine.entry.orderId));
    if (current === mine) {
      current = null;
      $("detail").hidden = true;
      answerAt("top-slot");
    }
    showNotice("purged", `Purged key ${mine.key} of client ${mine.client} (order ${mine.entry.orderId ?? "?"}).`);
  } catch (e) {
    if (refused(e)) return signOut(e);
    showProblem(e, "Purge refused");
  } finally {
    busy(false);
  }
  refresh();
});

// --- Dead letters (deadletters.js) ---------------------------------------------

const letters = deadLetters({ api, el, when, stateBadge, confirmAction, showProblem, hideProblem, showNotice, hideNotice, answerAt, refused, signOut, refresh });

// --- Start --------------------------------------------------------------------

$("origin").textContent = location.origin;
if (token()) {
  showConsole();
  refresh();
} else {
  signOut();
}
