
// build.sh appends this to wasm_exec.js, standard Go's and TinyGo's alike.
//
// Calls into Go go through the wasm export edge_orders_enter (workers/
// entry_js.go), not a js.FuncOf. Under standard Go a js.FuncOf call is an
// event that syscall/js reads back field by field, a dozen calls out of Go
// and a JavaScript value with a finalizer for each of them; under TinyGo
// it is a new goroutine, whose stack it allocates on its heap and scans
// conservatively: a stale word in one dead stack that looks like an
// address keeps another alive, and with a goroutine per call the heap
// grew with load, to the isolate's 128 MB. The export runs on its
// caller's stack, reads its numbers from its arguments and starts no
// goroutine; the scheduler then runs what it woke, until every goroutine
// waits, as after a js.FuncOf.
//
// Anything thrown out of the program (a trap: a TinyGo panic, which
// -panic=trap makes a wasm unreachable, a memory fault, a stack
// overflow) leaves it unwound in mid-call, its goroutines, locks and
// scheduler as they were: nothing promises that it runs again. So does an
// exit with a failure (standard Go's fatal errors). Either ends the
// program for good: the bridge answers what it held (__goBridge.ended),
// and the entry starts a fresh program for the next event, as if the
// isolate had died. An exit with code 0 (a test binary's end) ends only
// the program.
(() => {
  const run = Go.prototype.run;
  Go.prototype.run = function (instance) {
    // The program asks for its functions while it starts, inside run.
    globalThis.__goExported = (entry) => (a = 0, b = 0, c = 0) => this._enter(entry, a, b, c);
    // Standard Go's exit code, which TinyGo's proc_exit keeps itself.
    const exit = this.exit;
    if (exit) this.exit = (code) => { this.exitCode = code; exit.call(this, code); };
    return run.call(this, instance);
  };
  Go.prototype._enter = function (entry, a, b, c) {
    if (this.exited) throw new Error("Go program has already exited");
    if (this._entered) throw new Error("edge-orders: a call into Go from JavaScript that Go is calling");
    this._entered = true;
    try {
      const exports = this._inst.exports;
      const result = exports.edge_orders_enter(entry, a, b, c);
      // TinyGo's scheduler, or standard Go's resume: with no event
      // pending, it runs every goroutine that can run, then pauses.
      if (exports.go_scheduler) exports.go_scheduler();
      else exports.resume();
      return result;
    } catch (e) {
      // TinyGo's exit throws, once it has set exited.
      if (!this.exited) this._end(e);
      throw e;
    } finally {
      this._entered = false;
      if (this.exited) this._exited();
    }
  };
  // Standard Go's timers and js.FuncOf calls resume it here.
  const resume = Go.prototype._resume;
  Go.prototype._resume = function () {
    try {
      resume.call(this);
    } catch (e) {
      if (!this.exited) this._end(e);
      throw e;
    }
    if (this.exited) this._exited();
  };
  // _exited ends a program that exited: a failure unless its code is 0.
  Go.prototype._exited = function () {
    if (this.exitCode) this._end(new Error(`the Go program exited with code ${this.exitCode}`));
    else this._resolveExitPromise?.();
  };
  // _end ends the program once, for cause: run() returns, and the bridge
  // answers and forgets everything the program held.
  Go.prototype._end = function (cause) {
    if (this._ended) return;
    this._ended = true;
    this.exited = true;
    this._resolveExitPromise?.();
    globalThis.__goBridge.ended(cause);
  };
})();
