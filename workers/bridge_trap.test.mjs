// A trap's log line is an answer of 500: docs/operating.md (Logs) says it
// goes out through console.error, as every error line does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { answered, encodeFrame, hold, writeFrame } from "./bridge.mjs";

test("a trap's line is written with console.error", () => {
  const bridge = globalThis.__goBridge;
  const line = JSON.stringify({ outcome: "internal_error", status: 500, error: "trap", ms: 0 });
  bridge.answerTraps(writeFrame(encodeFrame(["500", "Content-Type: application/problem+json\n", "{}", line])));
  const logged = [], errors = [];
  const { log, error } = console;
  console.log = (s) => logged.push(s);
  console.error = (s) => errors.push(s);
  try {
    bridge.ended(new Error("RuntimeError: unreachable"));
  } finally {
    Object.assign(console, { log, error });
  }
  assert.equal(errors.length, 1, `console.error got ${errors.length} lines, console.log ${JSON.stringify(logged)}`);
  assert.match(errors[0], /"status":500/);
});

// A trap's answer carries the CORS headers Go's handler would add
// (corsTraps), so that a page on an allowed origin reads the 500 instead
// of a CORS failure, which says its origin is not allowed.
test("a trap's answer carries the handler's CORS headers", () => {
  const bridge = globalThis.__goBridge;
  const line = JSON.stringify({ outcome: "internal_error", status: 500, error: "trap", ms: 0 });
  bridge.answerTraps(writeFrame(encodeFrame(["500", "Content-Type: application/problem+json\n", "{}", line])));
  bridge.corsTraps(writeFrame(encodeFrame(["https://desk.example\nhttps://b.example", "Access-Control-Expose-Headers: Retry-After\n", "Vary: Origin\n", "/admin/"])));
  const answers = new Map();
  for (const origin of ["https://desk.example", "https://evil.example", ""]) {
    const request = new Request("http://127.0.0.1/orders", { headers: origin ? { Origin: origin } : {} });
    hold({ request, resolve: (r) => answers.set(origin, answered(r)) });
  }
  // The admin API's answers name no origin, a trap's neither.
  for (const path of ["/admin/orders", "/admin"]) {
    const request = new Request(`http://127.0.0.1${path}`, { headers: { Origin: "https://desk.example" } });
    hold({ request, resolve: (r) => answers.set(path, answered(r)) });
  }
  const { error } = console;
  console.error = () => {};
  try {
    bridge.ended(new Error("RuntimeError: unreachable"));
  } finally {
    console.error = error;
  }
  const desk = answers.get("https://desk.example");
  assert.equal(desk.status, 500);
  assert.equal(desk.headers.get("Access-Control-Allow-Origin"), "https://desk.example");
  assert.equal(desk.headers.get("Access-Control-Expose-Headers"), "Retry-After");
  assert.equal(desk.headers.get("Vary"), "Origin");
  assert.equal(desk.headers.get("Content-Type"), "application/problem+json");
  for (const origin of ["https://evil.example", "", "/admin/orders", "/admin"]) {
    const other = answers.get(origin);
    assert.equal(other.headers.get("Access-Control-Allow-Origin"), null, `from ${origin || "no origin"}`);
    assert.equal(other.headers.get("Vary"), "Origin");
  }
});
