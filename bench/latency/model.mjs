// What the delay model alone predicts, without any local work: the p50 and
// p99 of a new order's binding calls on each Worker's response path, drawn
// with the same sampleDelay the benchmark's entries use. It shows which
// ratios the call sequences allow before anything is measured.
//
//   node bench/latency/model.mjs [-kv-read p50,p95,p99] [-kv-write ...] [-do-rtt ...] [-do-write ...]
//
// The defaults are bench's (bench/delays.go).
import { sampleDelay } from "../../test/wrapped/wrap.mjs";

const spec = (s) => {
  const [p50, p95 = p50, p99 = p95] = s.split(",").map(Number);
  return { p50, p95, p99 };
};
const flags = { "-kv-read": "7,50,250", "-kv-write": "30,100,300", "-do-rtt": "10,25,60", "-do-write": "5,15,40" };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i += 2) {
  if (!(args[i] in flags) || args[i + 1] === undefined) {
    console.error(`usage: node bench/latency/model.mjs [${Object.keys(flags).join(" p50,p95,p99] [")} p50,p95,p99]`);
    process.exit(2);
  }
  flags[args[i]] = args[i + 1];
}
const read = spec(flags["-kv-read"]), write = spec(flags["-kv-write"]);
const doWrite = [spec(flags["-do-rtt"]), spec(flags["-do-write"])];
const d = sampleDelay;

// Each Worker's binding calls on a new order's response path.
const paths = {
  // get result ∥ get pending, put pending, put result (the claim is left to expire)
  "Go KV": () => Math.max(d(read), d(read)) + d(write) + d(write),
  // claim, commit
  "Go ledger": () => d(doWrite) + d(doWrite),
  // get result, get pending, put pending, put result, delete pending, one after another
  "seed TS (and JS port)": () => d(read) + d(read) + d(write) + d(write) + d(write),
};
const n = 200000;
const at = (xs, p) => xs[Math.ceil(p * xs.length) - 1];
const rows = Object.entries(paths).map(([name, path]) => {
  const xs = Array.from({ length: n }, path).sort((a, b) => a - b);
  return { name, p50: at(xs, 0.5), p99: at(xs, 0.99) };
});
const seed = rows[rows.length - 1];
console.log(`delays: KV read ${flags["-kv-read"]}, KV write ${flags["-kv-write"]}, DO round trip ${flags["-do-rtt"]}, DO durability ${flags["-do-write"]} (p50,p95,p99 ms)`);
console.log("| new order | p50 ms | p99 ms | p50 ÷ seed | p99 ÷ seed |\n|---|--:|--:|--:|--:|");
for (const r of rows) {
  console.log(`| ${r.name} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${(r.p50 / seed.p50).toFixed(2)}× | ${(r.p99 / seed.p99).toFixed(2)}× |`);
}
