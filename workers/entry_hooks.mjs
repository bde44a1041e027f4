// Module hooks that load worker.mjs under Node.js for entry_start.test.mjs:
// cloudflare:workers stubbed, and the Worker's module taken from
// globalThis.__testProgram, so that a test can hand it a program of its
// own. build/wasm_exec.js is the one build.sh made.
export async function resolve(specifier, context, next) {
  if (specifier === "cloudflare:workers") {
    return { shortCircuit: true, url: "data:text/javascript,export class DurableObject{constructor(ctx,env){this.ctx=ctx;this.env=env;}}" };
  }
  if (specifier === "./build/edge-orders.wasm") {
    return { shortCircuit: true, url: "data:text/javascript,export default globalThis.__testProgram" };
  }
  return next(specifier, context);
}
