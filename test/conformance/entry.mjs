// Runs a package's compiled wasm test binary inside workerd, with the
// Worker's bindings published as globals, and answers with its `go test -v`
// output: GET /kv runs kv's, GET /ledger runs ledger's. Status 200 means the
// binary exited 0. The Ledger class is the Worker's own, running the real
// Go program in a Go instance of its own.
import "../../build/wasm_exec.js";
import "../../workers/bridge.mjs";
import kvTests from "../../build/kv.test.wasm";
import ledgerTests from "../../build/ledger.test.wasm";
export { Ledger } from "../../worker.mjs";

const binaries = {
  "/kv": { module: kvTests, run: "^(TestNamespace|TestStoreConformanceInWorkerd)" },
  "/ledger": { module: ledgerTests, run: "^TestClient" },
};

export default {
  async fetch(request, env) {
    const binary = binaries[new URL(request.url).pathname];
    if (!binary) return new Response("no such test binary", { status: 404 });
    globalThis.ORDERS = env.ORDERS;
    globalThis.LEDGER = env.LEDGER;
    let output = "";
    const decoder = new TextDecoder();
    const writeSync = globalThis.fs.writeSync;
    globalThis.fs.writeSync = (fd, buf) => {
      output += decoder.decode(buf);
      return buf.length;
    };
    const go = new Go();
    go.argv = ["pkg.test", "-test.v", "-test.run", binary.run];
    let exitCode = -1;
    go.exit = (code) => { exitCode = code; };
    try {
      await go.run(await WebAssembly.instantiate(binary.module, go.importObject));
    } finally {
      globalThis.fs.writeSync = writeSync;
    }
    return new Response(output, { status: exitCode === 0 ? 200 : 500 });
  },
};
