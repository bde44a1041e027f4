// Drives one Worker with autocannon for bench/load.go and prints
// autocannon's result as JSON: node bench/load.mjs URL CONNS SECONDS BODY [KEY].
// Every request gets an Idempotency-Key of its own, or KEY if given (a
// replay). The programmatic API, because the command line cannot put a
// fresh id in a header.
import autocannon from "autocannon";

const [url, connections, seconds, body, key] = process.argv.slice(2);
const prefix = `bench-${Date.now()}-`;
let n = 0;
const result = await autocannon({
  url,
  connections: Number(connections),
  duration: Number(seconds),
  method: "POST",
  headers: { "content-type": "application/json" },
  body,
  requests: [{
    setupRequest(request) {
      request.headers = { ...request.headers, "idempotency-key": key || prefix + n++ };
      return request;
    },
  }],
});
process.stdout.write(JSON.stringify(result));
