#!/usr/bin/env bash
# Submits the same order twice under one Idempotency-Key, then looks it up,
# and checks the contract: the first call is a 201 with a fresh receipt, the
# retry a 200 with the identical body and "Idempotent-Replay: true", the
# lookup (a GET with the key) a 200 with the identical body and the same
# header. Exits non-zero on any difference. `make smoke URL=... TOKEN=...`
# runs it against a deployed Worker.
#
#   submit-order.sh [ENDPOINT]    (default http://127.0.0.1:8787)
#   API_TOKEN=<token> submit-order.sh ENDPOINT   for a Worker with API tokens
#   IDEMPOTENCY_KEY=<key> submit-order.sh ...    a key of your own (default a new UUID)
set -euo pipefail

ENDPOINT="${1:-http://127.0.0.1:8787}"
KEY="${IDEMPOTENCY_KEY:-$(uuidgen 2>/dev/null || cat /proc/sys/kernel/random/uuid)}"
# The header is the draft's Structured Field string: the key in quotes,
# each \ and " escaped, so that the Worker reads exactly KEY (bare, "x"
# would name x, and a comma a list). A key is 1 to 255 printable ASCII.
if ! LC_ALL=C bash -c '[[ $1 =~ ^[[:print:]]{1,255}$ ]]' _ "$KEY"; then
  echo "FAIL: IDEMPOTENCY_KEY must be 1 to 255 printable ASCII characters" >&2
  exit 2
fi
QUOTED="${KEY//\\/\\\\}"
QUOTED="\"${QUOTED//\"/\\\"}\""
ORDER='{"symbol":"MSFT","side":"buy","quantity":100}'
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# The token goes to curl in a file of $WORK (mode 700), never on its
# command line, which every user of the machine can read (ps). The array
# is spelt ${AUTH[@]+...} where used: bash before 4.4 (macOS's) calls an
# empty one unbound under set -u.
AUTH=()
if [ -n "${API_TOKEN:-}" ]; then
  printf 'Authorization: Bearer %s\n' "$API_TOKEN" >"$WORK/auth.header"
  AUTH=(-H "@$WORK/auth.header")
fi

# submit NAME: POSTs the order, keeping headers and body in $WORK/NAME.*
submit() {
  curl -sS -D "$WORK/$1.headers" -o "$WORK/$1.body" \
    -X POST "$ENDPOINT" ${AUTH[@]+"${AUTH[@]}"} \
    -H "Idempotency-Key: $QUOTED" \
    -H "content-type: application/json" \
    -d "$ORDER"
  cat "$WORK/$1.headers" "$WORK/$1.body"
  echo
}

# lookup NAME: GETs the key's receipt, keeping headers and body in $WORK/NAME.*
lookup() {
  curl -sS -D "$WORK/$1.headers" -o "$WORK/$1.body" \
    "$ENDPOINT" ${AUTH[@]+"${AUTH[@]}"} \
    -H "Idempotency-Key: $QUOTED"
  cat "$WORK/$1.headers" "$WORK/$1.body"
  echo
}

status() { head -n 1 "$WORK/$1.headers" | cut -d ' ' -f 2; }

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

echo "# First submission (Idempotency-Key: $QUOTED)"
submit first
echo "# Retry with the same key"
submit retry

[ "$(status first)" = 201 ] || fail "first submission returned $(status first), want 201"
[ "$(status retry)" = 200 ] || fail "retry returned $(status retry), want 200"
grep -qi '^Idempotent-Replay: true' "$WORK/retry.headers" || fail "retry lacks 'Idempotent-Replay: true'"
cmp -s "$WORK/first.body" "$WORK/retry.body" || fail "retry body differs from the first"
echo "# Lookup with the same key"
# A replay may come from the isolate's memory before the receipt's commit
# has landed (docs/http.md): until then a lookup says in progress (409).
for _ in 1 2 3 4 5; do
  lookup lookup
  [ "$(status lookup)" = 409 ] || break
  sleep 0.2
done
[ "$(status lookup)" = 200 ] || fail "lookup returned $(status lookup), want 200"
grep -qi '^Idempotent-Replay: true' "$WORK/lookup.headers" || fail "lookup lacks 'Idempotent-Replay: true'"
cmp -s "$WORK/first.body" "$WORK/lookup.body" || fail "lookup body differs from the first"
echo "OK: the retry replayed the original receipt, and the lookup found it"
