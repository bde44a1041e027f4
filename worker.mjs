// The Worker's JavaScript entry. It starts the Go program once per isolate and
// hands it every request; all decisions are made in Go.
import "./build/wasm_exec.js";
import program from "./build/edge-orders.wasm";

// fetchInGo is the handler the Go program publishes as globalThis.__goFetch
// (worker/serve_js.go) when it starts.
let fetchInGo;

function startGo() {
  const go = new Go();
  const startedAt = performance.now();
  const instance = new WebAssembly.Instance(program, go.importObject);
  // run() executes main until it blocks, so the handler exists when it returns.
  // If the program ever exits, the next request starts a fresh one.
  go.run(instance).finally(() => { fetchInGo = undefined; });
  fetchInGo = globalThis.__goFetch;
  console.log(JSON.stringify({ event: "go_started", ms: performance.now() - startedAt }));
}

export default {
  fetch(request, env, ctx) {
    if (!fetchInGo) startGo();
    return new Promise((resolve, reject) => fetchInGo(request, env, ctx, resolve, reject));
  },
};
