// The ops page's dead letters: what the dead-letter queue delivered (KV
// mode), each kept until an operator acknowledges it
// (/admin/deadletters, docs/operating.md). Acknowledge always names the
// letter by its letterId, so it never acknowledges a letter the page has
// not shown (409 dead_letter_changed), and asks first in the page's
// <dialog>. Every value is put on the page as text, as in ops.js, whose
// helpers it is given.

// The letters are read a page at a time, at most maxPages a refresh.
const pageLimit = 100;
const maxPages = 10;

const $ = (id) => document.getElementById(id);
const dots = (s) => s === "." || s === "..";

// letterPath is the admin path of a letter of client's key, with its
// letterId: in the query for a client or key that is . or .., which
// cannot be a path segment.
export const letterPath = (client, key, letterId) => {
  const id = letterId ? `letterId=${encodeURIComponent(letterId)}` : "";
  return dots(client) || dots(key)
    ? `/admin/deadletter?client=${encodeURIComponent(client)}&key=${encodeURIComponent(key)}${id ? `&${id}` : ""}`
    : `/admin/deadletters/${encodeURIComponent(client)}/${encodeURIComponent(key)}${id ? `?${id}` : ""}`;
};

// deadLetters wires the card #letters to page's helpers (ops.js): api,
// el, when, stateBadge, confirmAction, showProblem, hideProblem,
// showNotice, hideNotice, answerAt, refused, signOut and refresh.
export function deadLetters(page) {
  let acking = false;

  // read fetches the letters and returns what draws them; it throws a
  // refused token's problem, and draws any other failure as the card's
  // error.
  async function read() {
    let letters = [];
    let cursor;
    let pages = 0;
    try {
      do {
        let path = `/admin/deadletters?limit=${pageLimit}`;
        if (cursor) path += `&cursor=${encodeURIComponent(cursor)}`;
        const got = (await page.api("GET", path)) ?? {};
        letters.push(...(Array.isArray(got.deadLetters) ? got.deadLetters : []));
        cursor = got.cursor;
      } while (cursor && ++pages < maxPages);
    } catch (e) {
      if (page.refused(e)) throw e;
      return () => { $("letters-error").textContent = `Could not read the dead letters: ${e.title}${e.detail ? `: ${e.detail}` : ""}`; };
    }
    return () => {
      $("letters-error").textContent = "";
      render(letters, Boolean(cursor));
    };
  }

  function render(letters, more) {
    const rows = letters.map((d) => {
      const tr = document.createElement("tr");
      tr.dataset.client = String(d.client);
      tr.dataset.key = String(d.key);
      tr.dataset.letter = String(d.letterId ?? "");
      const state = page.el("td");
      state.append(page.stateBadge(d.state));
      const key = page.el("td");
      key.append(page.el("code", d.key, "key"));
      const ack = page.el("td");
      const button = page.el("button", "Acknowledge…", "ack secondary");
      button.type = "button";
      button.disabled = acking;
      ack.append(button);
      tr.append(state, page.el("td", d.client, "client"), key, page.el("td", d.orderId ?? "", "order"),
        page.el("td", d.attempts ?? "", "num"), page.el("td", page.when(d.receivedAt) ?? "", "time"), ack);
      tr.letter = d;
      return tr;
    });
    $("letter-rows").replaceChildren(...rows);
    $("letters-empty").hidden = rows.length > 0 || more;
    $("letters-count").textContent = `${rows.length}${more ? "+" : ""}`;
  }

  function clear() {
    $("letter-rows").replaceChildren();
    $("letters-count").textContent = "–";
  }

  async function acknowledge(d) {
    const ok = await page.confirmAction(`Acknowledge the dead letter of key ${d.key}?`,
      "It leaves the list of dead letters; the key itself is left as it is. Acknowledge it once someone has taken the key over (resolved it, or found it settled).",
      [["Client", d.client], ["Key", d.key], ["Letter", d.letterId], ["State when it came", d.state], ["Order id", d.orderId], ["Received", page.when(d.receivedAt)]]);
    if (!ok) return;
    page.hideProblem();
    page.hideNotice();
    page.answerAt("top-slot");
    acking = true;
    for (const b of document.querySelectorAll("#letter-rows button")) b.disabled = true;
    try {
      const done = (await page.api("DELETE", letterPath(d.client, d.key, d.letterId))) ?? {};
      page.showNotice("acknowledged", `Acknowledged the dead letter ${done.letterId ?? d.letterId ?? ""} of key ${done.key ?? d.key} of client ${done.client ?? d.client}.`);
    } catch (e) {
      if (page.refused(e)) return page.signOut(e);
      page.showProblem(e, "Acknowledge refused");
    } finally {
      acking = false;
    }
    page.refresh();
  }

  $("letter-rows").addEventListener("click", (event) => {
    const button = event.target.closest("button.ack");
    if (!button || acking) return;
    acknowledge(button.closest("tr").letter);
  });

  return { read, clear };
}
