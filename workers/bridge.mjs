// The JavaScript half of package workers (workers/*_js.go). JavaScript
// owns every object: a request, the environment, a binding, a Durable
// Object's state. It keeps each in one table and names it to Go by number;
// Go passes numbers and bytes, never a JavaScript object, so no slot of
// wasm_exec.js's table of values is taken per request, and the compiler's
// collector decides nothing about a JavaScript value's life.
//
// Bytes cross through one long-lived buffer, as frames (workers/frame.go):
// fields, each an unsigned LEB128 length and its bytes. A frame longer than
// the buffer crosses in chunks, within one synchronous call.
//
// Calls from Go:
//   synchronous ones return a number: a frame's length in the buffer (or
//   -1 - its length for an error's frame), an object's number, or 0;
//   start(program, op, call, ...) begins an asynchronous binding call and
//   returns at once; when it settles, the program's settle function is
//   called with (call, ok, length) and the frame in the buffer.
// Import this module before a Go program starts; every entry that runs one
// does. Entries use hold, writeFrame and readResult below.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// buffer is the one array every frame crosses through.
const buffer = new Uint8Array(64 * 1024);

// objects is the table of what JavaScript keeps for Go, by number.
const objects = new Map();
let nextObject = 1;

// events are the numbers of the objects that stand for an event Go serves
// (a request, a queue message, an alarm, a Durable Object call, a
// waitUntil): what ended answers if the program dies under them.
const events = new Set();

// keep keeps o for Go and returns its number.
function keep(o) {
  const id = nextObject++;
  objects.set(id, o);
  return id;
}

// hold keeps event o for Go and returns its number.
export function hold(o) {
  const id = keep(o);
  events.add(id);
  return id;
}

// drop forgets object id.
export function drop(id) {
  objects.delete(id);
  events.delete(id);
}

function object(id) {
  const o = objects.get(id);
  if (o === undefined) throw new Error(`edge-orders bridge: no object ${id}`);
  return o;
}

// heldObjects is how many objects the table holds: what a test counts to
// see that nothing is kept past its request.
export function heldObjects() {
  return objects.size;
}

// encodeFrame writes fields (strings, Uint8Arrays, numbers, booleans,
// null or undefined as empty) as one frame.
export function encodeFrame(fields) {
  const parts = fields.map((f) => {
    if (f instanceof Uint8Array) return f;
    if (f === undefined || f === null || f === false) return new Uint8Array(0);
    if (f === true) return encoder.encode("1");
    return encoder.encode(String(f));
  });
  let size = 0;
  for (const p of parts) size += varintSize(p.length) + p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    let n = p.length;
    while (n >= 0x80) {
      out[at++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    out[at++] = n;
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function varintSize(n) {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

// decodeFrame reads a frame into its fields, as Uint8Arrays.
export function decodeFrame(bytes) {
  const fields = [];
  let at = 0;
  while (at < bytes.length) {
    let n = 0, scale = 1, b;
    do {
      b = bytes[at++];
      n += (b & 0x7f) * scale;
      scale *= 128;
    } while (b & 0x80);
    fields.push(bytes.subarray(at, at + n));
    at += n;
  }
  return fields;
}

const text = (field) => decoder.decode(field);

// Frames longer than the buffer: what Go staged so far, and what is left
// of a result for Go to take.
let staged = [];
let pending = null;

// writeFrame puts a frame in the buffer for Go, and returns its length;
// Go takes what does not fit with more().
export function writeFrame(frame) {
  if (frame.length <= buffer.length) {
    buffer.set(frame);
    pending = null;
  } else {
    buffer.set(frame.subarray(0, buffer.length));
    pending = frame.subarray(buffer.length);
  }
  return frame.length;
}

// readArgs returns the frame Go wrote: what it staged, then n bytes of the
// buffer.
function readArgs(n) {
  const last = buffer.slice(0, n);
  if (staged.length === 0) return last;
  const parts = [...staged, last];
  staged = [];
  const all = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return all;
}

// args reads the frame Go wrote as its fields.
const args = (n) => decodeFrame(readArgs(n));

// errorFrame is a failure as Go reads it: message, retryable, overloaded.
function errorFrame(e) {
  return encodeFrame([e instanceof Error ? e.message : String(e), e?.retryable === true, e?.overloaded === true]);
}

// readResult reads the frame of length n that Go wrote in answer to a
// synchronous call from an entry (a Durable Object method).
export function readResult(n) {
  return decodeFrame(readArgs(n));
}

// headerLines and headerPairs: headers cross as one field of
// "name: value" lines; Go writes no newline inside a name or value.
function headerLines(headers) {
  let lines = "";
  for (const [name, value] of headers) lines += `${name}: ${value}\n`;
  return lines;
}

function headerPairs(lines) {
  const pairs = [];
  for (const line of lines.split("\n")) {
    const colon = line.indexOf(": ");
    if (colon > 0) pairs.push([line.slice(0, colon), line.slice(colon + 2)]);
  }
  return pairs;
}

// requestHead is a request's method, URL and headers as one frame.
export function requestHead(request) {
  return encodeFrame([request.method, request.url, headerLines(request.headers)]);
}

// readAtMost reads a body stream whole if it holds at most limit bytes, as
// the stream gives them (a fetch answer's decoded, whatever its
// Content-Encoding); past limit it returns null, so that a body over the
// limit is never held whole. It first reads and drops up to drain bytes
// more, then cancels the stream: a client still sending a body somewhat
// over the limit then reads its 413, where a cancel mid-send can reset its
// connection (Go's net/http drains 256 KiB for the same reason).
export async function readAtMost(stream, limit, drain = 0) {
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await dropAtMost(reader, limit + drain - size);
      return null;
    }
    chunks.push(value);
  }
  const body = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    body.set(c, at);
    at += c.length;
  }
  return body;
}

// dropAtMost reads and drops what reader gives until the stream ends, or
// cancels it past room bytes or once drainWait.ms have passed: a client
// that stalls mid-body holds its answer no longer than that. A stream
// that fails (its client left) ends the drain as its end would.
async function dropAtMost(reader, room) {
  if (room >= 0) {
    let timer;
    const late = new Promise((resolve) => {
      timer = setTimeout(resolve, drainWait.ms, null);
    });
    try {
      while (room >= 0) {
        const read = reader.read();
        read.catch(() => {}); // failing after the wait ended, it is dropped too
        const got = await Promise.race([read, late]);
        if (got === null) break;
        if (got.done) return;
        room -= got.value.length;
      }
    } catch {
      return;
    } finally {
      clearTimeout(timer);
    }
  }
  reader.cancel().catch(() => {});
}

// requestDrain is how much of a request body past its limit
// readRequestBody reads and drops before it cancels the rest
// (readAtMost); drainWait is how long it waits for that at most (a test
// may shorten it).
export const requestDrain = 256 << 10;
export const drainWait = { ms: 2000 };

// readRequestBody is request's body if it holds at most limit bytes, or
// null: one declared over the limit is not read, but dropped as one
// without a declared length is past it (readAtMost).
export async function readRequestBody(request, limit) {
  const declared = request.headers.get("Content-Length");
  if (!request.body) return new Uint8Array(0);
  if (declared !== null && /^\d+$/.test(declared)) {
    if (Number(declared) > limit) {
      await dropAtMost(request.body.getReader(), requestDrain);
      return null;
    }
    const body = new Uint8Array(await request.arrayBuffer());
    return body.length > limit ? null : body;
  }
  // No declared length: chunk by chunk.
  return readAtMost(request.body, limit, requestDrain);
}

// Each Go program registers its settle function; start's calls name it.
const programs = [];

// The asynchronous binding calls, by name: each takes the objects its
// numbers name and the fields of its frame, and resolves to the fields of
// its answer.
const calls = {
  async readBody([served], [max]) {
    const body = await readRequestBody(served.request, Number(text(max)));
    return body === null ? [new Uint8Array(0), true] : [body];
  },

  async kvGet([ns], keys) {
    // One field per key in, three per key out: found, value, metadata
    // (as JSON). Several keys are read at once, one await for Go.
    const reads = await Promise.all(keys.map((k) => ns.getWithMetadata(text(k))));
    return reads.flatMap((r) => (r.value === null
      ? [false, "", ""]
      : [true, r.value, r.metadata === null || r.metadata === undefined ? "" : JSON.stringify(r.metadata)]));
  },

  async kvPut([ns], [key, value, metadata, ttl]) {
    const options = {};
    if (text(ttl) !== "") options.expirationTtl = Number(text(ttl));
    if (metadata.length > 0) options.metadata = JSON.parse(text(metadata));
    await ns.put(text(key), text(value), options);
    return [];
  },

  async kvDelete([ns], [key]) {
    await ns.delete(text(key));
    return [];
  },

  async kvList([ns], [prefix, cursor, limit]) {
    const options = { prefix: text(prefix), limit: Number(text(limit)) };
    if (cursor.length > 0) options.cursor = text(cursor);
    const page = await ns.list(options);
    const out = [page.list_complete ? "" : page.cursor];
    for (const k of page.keys) out.push(k.name, k.metadata === undefined || k.metadata === null ? "" : JSON.stringify(k.metadata));
    return out;
  },

  // rpc calls a Durable Object's method with one JSON argument; its answer
  // is one JSON string.
  async rpc([ns], [name, method, argument]) {
    const stub = ns.getByName(text(name));
    const answer = await stub[text(method)](text(argument));
    return [typeof answer === "string" ? answer : ""];
  },

  // fetch sends a request with target.fetch (the global scope, or a service
  // binding) and answers [status, body, over the limit, Location]. A
  // redirect is the answer, never followed. The body is read as it
  // streams, decoded, up to maxBytes (Go's OutgoingRequest.MaxAnswerBytes):
  // past it, the stream is cancelled and the answer has no body. A
  // timeout over 0 aborts the call, its answer's body included.
  async fetch([target], [method, url, headers, body, timeoutMs, maxBytes]) {
    const init = { method: text(method), headers: headerPairs(text(headers)), redirect: "manual" };
    if (body.length > 0) init.body = body.slice();
    const timeout = Number(text(timeoutMs));
    if (timeout > 0) init.signal = AbortSignal.timeout(timeout);
    const response = await (target ?? globalThis).fetch(text(url), init);
    const answer = await readAtMost(response.body, Number(text(maxBytes)));
    return [response.status, answer, answer === null, response.headers.get("Location")];
  },

  async rateLimit([limiter], [key]) {
    const { success } = await limiter.limit({ key: text(key) });
    return [success === true];
  },

  async queueSend([queue], [body, delaySeconds]) {
    await queue.send(text(body), { contentType: "text", delaySeconds: Number(text(delaySeconds)) });
    return [];
  },

  async sleep(_, [ms]) {
    await scheduler.wait(Number(text(ms)));
    return [];
  },
};

// The calls by number, as Go names them (opNumber).
const callNames = Object.keys(calls);
const callsByNumber = callNames.map((name) => calls[name]);

// The bridge Go reaches through globalThis.__goBridge.
const bridge = {
  buffer,

  // opNumber is the number of the binding call named name, -1 for none:
  // asked once per name, since a string would take a slot in Go's table
  // of values per call.
  opNumber(name) {
    return callNames.indexOf(name);
  },

  // register keeps a Go program's settle function and returns its number.
  register(settle) {
    programs.push(settle);
    return programs.length - 1;
  },

  // stage keeps n bytes of the buffer: the front of a frame too long for it.
  stage(n) {
    staged.push(buffer.slice(0, n));
  },

  // more puts the next part of a result in the buffer; its length.
  more() {
    if (pending === null) return 0;
    const part = pending.subarray(0, buffer.length);
    pending = pending.length > buffer.length ? pending.subarray(buffer.length) : null;
    buffer.set(part);
    return part.length;
  },

  // start begins call number call of program: op over the objects ids
  // names (0 for none), with the frame of length n as its fields.
  start(program, op, call, n, ...ids) {
    const fields = args(n);
    // A program that ended meanwhile (ended) is told nothing.
    const settle = (...a) => programs[program]?.(...a);
    let work;
    try {
      work = callsByNumber[op](ids.map((id) => (id === 0 ? undefined : object(id))), fields);
    } catch (e) {
      work = Promise.reject(e);
    }
    work.then(
      (answer) => settle(call, 1, writeFrame(encodeFrame(answer))),
      (e) => settle(call, 0, writeFrame(errorFrame(e))),
    );
  },

  // drop forgets object id.
  drop,

  // heldObjects is how many objects the table holds.
  heldObjects,

  // envOf keeps the environment of the event held as id (a request, a
  // queue batch's message, an alarm), and returns its number: the Go
  // program takes its first event's, for its life.
  envOf(id) {
    return keep(object(id).env);
  },

  // envVar answers [set, value] for the variable named by the frame (a
  // global's for env 0, as envBinding):
  // [vars] may hold numbers and booleans, which read as JavaScript prints
  // them.
  envVar(env, n) {
    const [name] = args(n);
    const v = (env === 0 ? globalThis : object(env))[text(name)];
    return writeFrame(encodeFrame(v === undefined || v === null ? [false, ""] : [true, String(v)]));
  },

  // envBinding keeps the binding named by the frame, for the life of the
  // Go program, and returns its number; 0 if there is none.
  envBinding(env, n) {
    const [name] = args(n);
    const b = env === 0 ? globalThis[text(name)] : object(env)[text(name)];
    return b !== null && typeof b === "object" ? keep(b) : 0;
  },

  // respond answers request number request with [status, headers, body].
  respond(request, n) {
    const [status, headers, body] = args(n);
    object(request).resolve(new Response(body.length > 0 ? body.slice() : null,
      { status: Number(text(status)), headers: headerPairs(text(headers)) }));
    return 0;
  },

  // waitUntil keeps request's Worker alive (ctx.waitUntil) until Go calls
  // taskDone with the number it returns.
  waitUntil(request) {
    let settle;
    object(request).ctx.waitUntil(new Promise((resolve, reject) => {
      settle = (failure) => (failure === "" ? resolve() : reject(new Error(failure)));
    }));
    return hold(settle);
  },

  // taskDone ends task with the frame [failure, detail]: failure "" for
  // none. A task is a waitUntil's settle function, or an event Go was
  // handed whole (an alarm, a queue message, a Cron Trigger), whose done
  // function gets both fields.
  taskDone(task, n) {
    const [failure, detail] = args(n);
    const held = object(task);
    drop(task);
    (typeof held === "function" ? held : held.done)(text(failure), text(detail ?? new Uint8Array(0)));
    return 0;
  },

  // log writes the frame's first field as a log line, from a microtask
  // once Go has returned: under wrangler dev, console.log called with Go's
  // frames on the stack costs about a millisecond more of workerd's CPU.
  // A second field "error", Go's choice, writes it with console.error.
  log(n) {
    const [line, level] = args(n);
    const s = text(line);
    const write = level !== undefined && text(level) === "error" ? console.error : console.log;
    queueMicrotask(() => write(s));
  },

  // random puts n random bytes in the buffer (crypto.getRandomValues).
  random(n) {
    crypto.getRandomValues(buffer.subarray(0, n));
    return n;
  },

  // sql runs the frame's [query, params...] on a Durable Object's SQLite
  // storage, synchronously, and answers its rows: [rows read, columns,
  // names..., values...], each value "n" for null, "s" and a string, or
  // "d" and a number. A failure is -1 - the length of its error frame.
  sql(state, n) {
    try {
      const [query, ...params] = args(n);
      const values = params.map((p) => {
        const tag = String.fromCharCode(p[0]);
        return tag === "s" ? text(p.subarray(1)) : tag === "d" ? Number(text(p.subarray(1))) : null;
      });
      const cursor = object(state).storage.sql.exec(text(query), ...values);
      const names = cursor.columnNames;
      const out = [];
      for (const row of cursor.raw()) {
        for (const v of row) out.push(v === null ? "n" : typeof v === "string" ? "s" + v : "d" + String(v));
      }
      return writeFrame(encodeFrame([cursor.rowsRead, names.length, ...names, ...out]));
    } catch (e) {
      return -1 - writeFrame(errorFrame(e));
    }
  },

  // writeDataPoint writes one data point to the Analytics Engine dataset
  // held as dataset, from the frame [indexes count, indexes..., blobs
  // count, blobs..., doubles...], and answers 0, or -1 - the length of
  // the error frame of what writeDataPoint threw. It returns nothing to
  // await: the runtime sends the point after the event.
  writeDataPoint(dataset, n) {
    try {
      object(dataset).writeDataPoint(point(args(n)));
      return 0;
    } catch (e) {
      return -1 - writeFrame(errorFrame(e));
    }
  },

  // answerTraps sets what ended answers and logs, from the frame [status,
  // headers, body, log line]: Go decides it, since once the program has
  // trapped, nothing of it runs.
  answerTraps(n) {
    const [status, headers, body, line] = args(n);
    onTrap.answer = (request) => new Response(body.length > 0 ? body.slice() : null,
      { status: Number(text(status)), headers: [...headerPairs(text(headers)), ...trapCORS(request)] });
    onTrap.line = text(line);
  },

  // corsTraps sets the CORS headers ended's answers carry, from the frame
  // [allowed origins, one a line; headers for an allowed origin's request
  // beside Access-Control-Allow-Origin naming it; headers for every
  // request; the path prefix no other origin may read, "" for none]:
  // Go's handler adds them to every answer, and nothing of Go runs once
  // the program has trapped.
  corsTraps(n) {
    const [origins, allowed, always, priv] = args(n).map(text);
    onTrap.cors = { origins: new Set(origins.split("\n").filter(Boolean)), allowed: headerPairs(allowed), always: headerPairs(always), private: priv };
  },

  // measureTraps has ended write the data point of the frame (as
  // writeDataPoint's) to the dataset held as dataset.
  measureTraps(dataset, n) {
    onTrap.dataset = object(dataset);
    onTrap.point = point(args(n));
  },

  // ended is told by wasm_exec_entry.js that the program stopped for good,
  // for cause (a trap, or an exit), and ends what the program held as an
  // isolate's death would, but answered: every request gets onTrap's
  // answer (a request answered already keeps its answer), every queue
  // message, alarm and Cron Trigger fails (the runtime retries it), every
  // waitUntil ends; the trap's log line and data point are written once;
  // the table is emptied, and the program's binding calls, when they
  // settle, are told nothing. The entry then starts a fresh program.
  ended(cause) {
    const failure = `edge-orders: the Go program ended: ${cause}`;
    for (const id of events) {
      const o = objects.get(id);
      if (typeof o === "function") o(failure);
      else if (Object.hasOwn(o, "resolve")) o.resolve(() => onTrap.answer(o.request));
      else if (Object.hasOwn(o, "done")) o.done(failure, "");
    }
    objects.clear();
    events.clear();
    programs.fill(null);
    staged = [];
    pending = null;
    const line = JSON.parse(onTrap.line);
    line.error = `${line.error}: ${cause?.stack ?? cause}`;
    // An answer of 500: an error line, as eventlog.To writes one.
    console.error(JSON.stringify(line));
    try {
      onTrap.dataset?.writeDataPoint(onTrap.point);
    } catch {
      // A refused point loses the trap's count, never its answers.
    }
  },

  // setAlarm sets a Durable Object's alarm for ms since the epoch; the
  // output gate holds the object's answer until it is stored.
  setAlarm(state, ms) {
    object(state).storage.setAlarm(ms);
  },
};

// onTrap is what ended does, as Go set it (answerTraps, corsTraps,
// measureTraps); until it does, a plain 500.
const onTrap = {
  answer: () => new Response("internal error", { status: 500 }),
  cors: null,
  line: JSON.stringify({ outcome: "internal_error", status: 500, error: "trap" }),
  dataset: null,
  point: null,
};

// trapCORS is the CORS headers of a trap's answer to request, as Go's
// handler adds them (corsTraps): none where CORS is off.
function trapCORS(request) {
  const cors = onTrap.cors;
  if (cors === null) return [];
  const origin = request?.headers?.get("Origin");
  return cors.origins.has(origin) && !underPrivate(request, cors.private)
    ? [["Access-Control-Allow-Origin", origin], ...cors.allowed, ...cors.always]
    : cors.always;
}

// underPrivate reports whether request's path is under prefix (which
// ends in "/"), or is that prefix without its slash.
function underPrivate(request, prefix) {
  if (!prefix) return false;
  const path = new URL(request.url).pathname;
  return path.startsWith(prefix) || path === prefix.slice(0, -1);
}

// answered is a request's Response: Go's, or, if the program trapped
// under it, onTrap's, made here, in the request's own context (a Response
// made in another request's cannot be sent).
export function answered(response) {
  return typeof response === "function" ? response() : response;
}

// point reads a data point's frame: [indexes count, indexes..., blobs
// count, blobs..., doubles...].
function point(fields) {
  let at = 0;
  const strings = () => {
    const count = Number(text(fields[at++]));
    const out = fields.slice(at, at + count).map(text);
    at += count;
    return out;
  };
  const indexes = strings();
  const blobs = strings();
  const doubles = fields.slice(at).map((f) => Number(text(f)));
  return { indexes, blobs, doubles };
}

globalThis.__goBridge = bridge;
