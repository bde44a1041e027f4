// A program that traps while it starts (a TinyGo panic in an
// initialiser, memory exhausted as it restarts after a trap) only rejects
// what wasm_exec.js's run returns: the entry ends it as a trap ends one,
// fails the event, and starts another for the next event, instead of
// taking it for running and failing every event of the isolate from then
// on (found by a review).
import { register } from "node:module";
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

const built = new URL("../build/wasm_exec.js", import.meta.url);

// (module (func (export "_start") unreachable)): a start that traps.
const trapsAtStart = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0,
  7, 10, 1, 6, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74, 0, 0, 10, 5, 1, 3, 0, 0, 0x0b]);

test("a program that trapped while it started is started again by the next event", { skip: !fs.existsSync(built) && "no build/wasm_exec.js: run ./build.sh" }, async () => {
  register("./entry_hooks.mjs", import.meta.url);
  globalThis.__testProgram = new WebAssembly.Module(trapsAtStart);
  const unhandled = [];
  const onUnhandled = (e) => unhandled.push(String(e));
  process.on("unhandledRejection", onUnhandled);
  const failedStarts = [];
  const { log, error } = console;
  console.log = () => {};
  console.error = (s) => { if (String(s).includes("while it started")) failedStarts.push(s); };
  const outcomes = [];
  try {
    const { default: worker } = await import("../worker.mjs");
    for (let i = 0; i < 3; i++) {
      try {
        await worker.fetch(new Request("http://127.0.0.1/"), {}, { waitUntil: (p) => p.catch(() => {}) });
        outcomes.push("answered");
      } catch (e) {
        outcomes.push(String(e.message));
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  } finally {
    Object.assign(console, { log, error });
    process.off("unhandledRejection", onUnhandled);
  }
  const { heldObjects } = await import("./bridge.mjs");
  assert.deepEqual(outcomes, Array(3).fill("edge-orders: the Go program trapped while it started"));
  assert.equal(failedStarts.length, 3, `each event started a program that failed: ${failedStarts.length} failures logged`);
  assert.equal(heldObjects(), 0, "events left in the bridge's table");
  assert.deepEqual(unhandled, []);
});
