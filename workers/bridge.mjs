// The JavaScript half of package workers (workers/*_js.go). Each function
// here does in one call from Go what would otherwise take several syscall/js
// operations: every one of those crosses between Go and JavaScript, and
// every object or string it hands Go carries a Go finalizer, which costs
// more than the operation itself. Import this module before the Go program
// starts; every entry that runs one does.
// Stateless: a test may run two Go programs in one isolate.
const bridge = {
  // then settles promise into Go, in the promise's own I/O context, through
  // the Go program's two callbacks made once (await_js.go).
  then(promise, id, resolved, rejected) {
    promise.then((value) => resolved(id, value), (reason) => rejected(id, reason));
  },

  // log writes one log line from a microtask, once Go has returned: under
  // wrangler dev, console.log called with Go's frames on the stack costs
  // about a millisecond more of workerd's CPU (measured; the inspector
  // records the call's stack). The line belongs to the same request either way.
  log(line) {
    queueMicrotask(() => console.log(line));
  },

  // respond resolves a fetch event with a Response. headers is one string of
  // "name: value" lines: Go writes header names and values without newlines.
  respond(resolve, status, headers, body) {
    resolve(new Response(body, { status, headers: headerPairs(headers) }));
  },

  // waitUntil keeps the Worker alive after the response (ctx.waitUntil)
  // until Go calls the function it returns: with nothing once its task is
  // done, or with a message if the task panicked. One function to release,
  // where a promise executor made in Go would be one more callback per call.
  waitUntil(ctx) {
    let settle;
    ctx.waitUntil(new Promise((resolve, reject) => {
      settle = (failure) => (failure === undefined ? resolve() : reject(new Error(failure)));
    }));
    return settle;
  },

  // object makes {name: value, ...} from name, value pairs.
  object(...pairs) {
    const o = {};
    for (let i = 0; i < pairs.length; i += 2) o[pairs[i]] = pairs[i + 1];
    return o;
  },

  // queueSend sends body, as text, to a queue producer binding, delivered
  // after delaySeconds.
  queueSend(queue, body, delaySeconds) {
    return queue.send(body, { contentType: "text", delaySeconds });
  },

  // fetch sends a request with target.fetch (the global scope, or a
  // service binding) and resolves to [status, body text]; a timeoutMs over
  // 0 aborts the request, its answer's body included, after that long.
  async fetch(target, method, url, headers, body, timeoutMs) {
    const init = { method, headers: headerPairs(headers), body };
    if (timeoutMs > 0) init.signal = AbortSignal.timeout(timeoutMs);
    const response = await target.fetch(url, init);
    return [response.status, await response.text()];
  },
};

// headerPairs reads "name: value" lines into [name, value] pairs.
function headerPairs(lines) {
  const pairs = [];
  for (const line of lines.split("\n")) {
    const colon = line.indexOf(": ");
    if (colon > 0) pairs.push([line.slice(0, colon), line.slice(colon + 2)]);
  }
  return pairs;
}

globalThis.__goBridge = bridge;
