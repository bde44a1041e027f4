// Runs a package's compiled wasm test binary inside workerd, with the
// Worker's bindings published as globals (the Analytics Engine dataset's
// through a wrapper that keeps its last point, since wrangler dev drops
// them), and answers with its `go test -v`
// output: GET /kv?run=REGEXP runs kv's, GET /ledger?run=REGEXP ledger's,
// GET /workers?run=REGEXP the typed bindings' own.
// Status 200 means the binary exited 0. The Ledger class is the Worker's
// own, running the real Go program in a Go instance of its own.
//
// The binaries are built by the compiler that built the Worker, since this
// loads its wasm_exec.js. Standard Go's takes its flags from go.argv,
// reports its exit code through go.exit and writes through fs.writeSync;
// TinyGo's has its flags built in (tinygo test -c -v -run), returns its
// exit code from go.run and writes through console.log.
import "../../build/wasm_exec.js";
import "../../workers/bridge.mjs";
import kvTests from "../../build/kv.test.wasm";
import ledgerTests from "../../build/ledger.test.wasm";
import workersTests from "../../build/workers.test.wasm";
export { Ledger } from "../../worker.mjs";

const binaries = { "/kv": kvTests, "/ledger": ledgerTests, "/workers": workersTests };

// What workers' Fetcher test fetches from this Worker itself.
const answers = {
  "/echo": () => new Response("echo", { status: 201 }),
  "/redirect": () => new Response(null, { status: 302, headers: { Location: "/echo" } }),
  "/big": () => new Response("x".repeat(100000)),
};

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (answers[url.pathname]) return answers[url.pathname]();
    const module = binaries[url.pathname];
    if (!module) return new Response("no such test binary", { status: 404 });
    globalThis.ORDERS = env.ORDERS;
    globalThis.LEDGER = env.LEDGER;
    globalThis.LIMIT = env.LIMIT;
    globalThis.QUEUE = env.QUEUE;
    // wrangler dev drops data points: the dataset's test reads back the
    // last point the real binding was handed, and an error thrown.
    globalThis.METRICS = {
      writeDataPoint(point) {
        globalThis.METRICS_WRITTEN = JSON.stringify(point);
        return env.METRICS.writeDataPoint(point);
      },
    };
    globalThis.METRICS_THROWS = {
      writeDataPoint() {
        throw new Error("writeDataPoint(): too many data points");
      },
    };
    globalThis.ORIGIN = url.origin;
    let output = "";
    const decoder = new TextDecoder();
    const writeSync = globalThis.fs?.writeSync;
    const log = console.log;
    if (writeSync) {
      globalThis.fs.writeSync = (fd, buf) => {
        output += decoder.decode(buf);
        return buf.length;
      };
    }
    console.log = (...parts) => { output += parts.join(" ") + "\n"; };
    const go = new Go();
    go.argv = ["pkg.test", "-test.v", "-test.run", url.searchParams.get("run") ?? ""];
    let exitCode = -1;
    go.exit = (code) => { exitCode = code; };
    try {
      const result = await go.run(await WebAssembly.instantiate(module, go.importObject));
      if (typeof result === "number") exitCode = result;
    } finally {
      if (writeSync) globalThis.fs.writeSync = writeSync;
      console.log = log;
    }
    return new Response(output, { status: exitCode === 0 ? 200 : 500 });
  },
};
