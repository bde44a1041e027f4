// Measures one start of a build's Go program as this process's CPU time
// (process.cpuUsage: every thread, V8's compiler threads included), not
// wall time, which a busy machine stretches: the module's compile, then
// its instantiation and Go's start until main blocks, as worker.mjs does
// them. bench/start.go runs it once per fresh process, the builds taking
// turns, so nothing is warm.
//
//   node bench/start.mjs DIR    DIR holds edge-orders.wasm and wasm_exec.js
//
// It prints {"compileMs": ..., "startMs": ...}.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const dir = resolve(process.argv[2]);
const bytes = readFileSync(`${dir}/edge-orders.wasm`);
await import(pathToFileURL(`${dir}/wasm_exec.js`).href);
await import("../workers/bridge.mjs");

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
let at = cpuMs();
const program = new WebAssembly.Module(bytes);
const compileMs = cpuMs() - at;
const go = new Go();
at = cpuMs();
go.run(new WebAssembly.Instance(program, go.importObject));
const startMs = cpuMs() - at;
console.log(JSON.stringify({ compileMs, startMs }));
process.exit(0);
