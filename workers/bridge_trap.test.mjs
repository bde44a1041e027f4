// A trap's log line is an answer of 500: docs/operating.md (Logs) says it
// goes out through console.error, as every error line does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encodeFrame, writeFrame } from "./bridge.mjs";

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
