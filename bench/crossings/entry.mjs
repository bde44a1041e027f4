// The Go Worker (worker.mjs) with every call between Go and JavaScript
// counted, for the benchmark's crossings table. It serves the shipped Worker
// unchanged; only the Go runtime's imports are wrapped with counters.
//
//   GET /__bench/crossings          the counts since the last reset, as JSON:
//                                   {imports: {name: n}, resumes: n}
//   GET /__bench/crossings?reset    the same, then zero them
//
// imports counts each call from Go into JavaScript by import name (every
// syscall/js operation is one, such as syscall/js.valueCall; the runtime's
// clock, timers and random bytes are others). resumes counts the entries
// from JavaScript into Go: a callback, a promise settling, a timer firing.
import worker, { Ledger } from "../../worker.mjs";

export { Ledger };

let imports = {};
let resumes = 0;

// worker.mjs runs `new Go()` on its first request, after this module has
// run: the Go it finds then is this counting subclass of wasm_exec.js's.
const Go = globalThis.Go;
globalThis.Go = class CountingGo extends Go {
  constructor() {
    super();
    const gojs = this.importObject.gojs;
    for (const [name, fn] of Object.entries(gojs)) {
      gojs[name] = (sp) => {
        imports[name] = (imports[name] ?? 0) + 1;
        return fn(sp);
      };
    }
    const resume = this._resume.bind(this);
    this._resume = () => {
      resumes++;
      return resume();
    };
  }
};

export default {
  fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__bench/crossings") {
      const body = Response.json({ imports, resumes });
      if (url.searchParams.has("reset")) {
        imports = {};
        resumes = 0;
      }
      return body;
    }
    return worker.fetch(request, env, ctx);
  },
};
