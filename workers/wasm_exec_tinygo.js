
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
