// Runs kv's compiled wasm test binary inside workerd against the ORDERS
// binding and answers with the `go test -v` output. Status 200 means the
// binary exited 0.
import "../../build/wasm_exec.js";
import tests from "../../build/kv.test.wasm";

export default {
  async fetch(request, env) {
    globalThis.ORDERS = env.ORDERS;
    let output = "";
    const decoder = new TextDecoder();
    globalThis.fs.writeSync = (fd, buf) => {
      output += decoder.decode(buf);
      return buf.length;
    };
    const go = new Go();
    go.argv = ["kv.test", "-test.v", "-test.run", "^TestWorkers"];
    let exitCode = -1;
    go.exit = (code) => { exitCode = code; };
    await go.run(await WebAssembly.instantiate(tests, go.importObject));
    return new Response(output, { status: exitCode === 0 ? 200 : 500 });
  },
};
