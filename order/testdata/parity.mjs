// Runs the original Worker's decoding and validation on every body it is
// given, so the Go port can be compared with real JavaScript.
//
// stdin:  a JSON array of base64-encoded request bodies.
// stdout: a JSON array with, for each body, JSON.stringify({symbol, side,
//         quantity}) of the validated order as a string, or null when the
//         body is rejected. Each result is a string (not an object) so that
//         lone surrogates reach Go escaped, exactly as the receipt prints them.

import { validate } from "./validate.mjs";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const bodies = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const results = [];
for (const b64 of bodies) {
  const bytes = Buffer.from(b64, "base64");
  // What the Worker's request.json() does in workerd at its compatibility
  // date: decode UTF-8 with replacement, keeping a BOM, then JSON.parse.
  // (Node's own Response.json() would strip a BOM, twice even.)
  let body = null;
  try {
    body = JSON.parse(new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes));
  } catch {}
  const order = validate(body);
  results.push(order === null ? null : JSON.stringify({ symbol: order.symbol, side: order.side, quantity: order.quantity }));
}
process.stdout.write(JSON.stringify(results));
