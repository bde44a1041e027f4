
// build.sh appends this to TinyGo's wasm_exec.js (and only TinyGo's).
//
// Calls into Go go through the export edge_orders_enter (workers/
// entry_tinygo_js.go), not a js.FuncOf. TinyGo runs every js.FuncOf call
// on a new goroutine, whose stack it allocates on its heap and scans
// conservatively: a stale word in one dead stack that looks like an
// address keeps another alive, and with a goroutine per call the heap
// grew with load, to the isolate's 128 MB. The export runs on its caller's
// stack and starts no goroutine; the scheduler then runs what it woke, as
// resume() would after a js.FuncOf. syscall/js's event objects, which
// TinyGo never frees, are not made at all.
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
