
// build.sh appends this to TinyGo's wasm_exec.js (and only TinyGo's).
//
// Every call from JavaScript into Go made the wrapper above build a new
// event object, and handed Go that object and the call's arguments object;
// syscall/js's handleEvent takes both as values it never releases, and
// TinyGo 0.40 runs no finalizers, so each call left two entries in the
// table of values Go refers to. This wrapper hands Go the same event and
// arguments array on every call instead, their contents replaced: the
// table keeps one entry for each, whose count alone goes up. It frees
// nothing itself, so it is as safe on a TinyGo whose finalizers work.
// A nested call (JavaScript that Go calls, calling Go) reuses them too:
// handleEvent has read the outer call's id and arguments before it runs
// the function, and writes its result after the inner call returned.
(() => {
  const original = Go.prototype._makeFuncWrapper;
  if (!String(original).includes("_pendingEvent")) {
    console.warn("edge-orders: this TinyGo's wasm_exec.js is not the one workers/wasm_exec_tinygo.js was written for; calls into Go may leak");
    return;
  }
  Go.prototype._makeFuncWrapper = function (id) {
    const go = this;
    return function (...args) {
      const event = (go._sharedEvent ??= { id: 0, this: undefined, args: [], result: undefined });
      event.id = id;
      event.this = this;
      event.args.length = 0;
      event.args.push(...args);
      go._pendingEvent = event;
      go._resume();
      const result = event.result;
      event.this = event.result = undefined;
      event.args.length = 0;
      return result;
    };
  };
})();

// Calls into Go through the export edge_orders_enter (workers/
// entry_tinygo_js.go) instead of a js.FuncOf. TinyGo runs every js.FuncOf
// call on a new goroutine whose stack it allocates on its heap and scans
// conservatively; a stale word in one dead stack that points into another
// keeps it alive, so with a goroutine per crossing the heap grew with load.
// The export runs on the stack of its caller and starts no goroutine;
// the scheduler then runs whatever it woke, as resume() would.
(() => {
  const run = Go.prototype.run;
  Go.prototype.run = function (instance) {
    // The program asks for its functions while it starts, inside run.
    globalThis.__goExported = (entry) => (a = 0, b = 0, c = 0) => this._enter(entry, a, b, c);
    return run.call(this, instance);
  };
  Go.prototype._enter = function (entry, a, b, c) {
    if (this.exited) throw new Error("Go program has already exited");
    if (this._entered) throw new Error("edge-orders: a call into Go from JavaScript that Go is calling");
    this._entered = true;
    try {
      const exports = this._inst.exports;
      const result = exports.edge_orders_enter(entry, a, b, c);
      exports.go_scheduler();
      return result;
    } finally {
      this._entered = false;
      if (this.exited) this._resolveExitPromise();
    }
  };
})();
