// The TypeScript reference Worker's validate(), as JavaScript: the one copy
// of the oracle that order/testdata/parity.mjs (under node, for go test
// ./order/) and test/reference/port/worker.js (bundled by wrangler) both import.
//
// It returns {symbol, side, quantity} for a body that is a valid order and
// null for anything else, with JavaScript's typeof and Number.isInteger.
export function validate(body) {
  if (typeof body !== "object" || body === null) return null;
  const { symbol, side, quantity } = body;
  if (typeof symbol !== "string" || symbol.length === 0) return null;
  if (side !== "buy" && side !== "sell") return null;
  if (typeof quantity !== "number" || !Number.isInteger(quantity) || quantity <= 0) return null;
  return { symbol, side, quantity };
}
