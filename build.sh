#!/usr/bin/env bash
# Builds the Worker's WebAssembly and its wasm_exec.js into build/.
#
# COMPILER says with what: go (the default) or tinygo. TinyGo's module is
# five times smaller and starts faster, but TinyGo 0.40 never finalizes a
# JavaScript value, so a long-lived isolate leaks one per call between Go
# and JavaScript: it is built only when asked for, until the bridge
# releases its values itself.
#
# wrangler runs this before every `wrangler dev` and deploy, and each
# running `wrangler dev` reloads its Worker when build/ changes: so a file
# is replaced, atomically, only when its content changed, and builds that
# run at once (the tests start several Workers) never disturb one another.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p build
tmp=$(mktemp -d build/.tmp.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
case "${COMPILER:-go}" in
go)
  GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w" -o "$tmp/edge-orders.wasm" .
  cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" "$tmp/wasm_exec.js"
  ;;
tinygo)
  tinygo build -target wasm -no-debug -o "$tmp/edge-orders.wasm" .
  # wrangler's bundler defines a require that wasm_exec.js would adopt as
  # global.require and then call into forever at start-up (tinygo#5370,
  # fixed after 0.40.1); the Worker needs none of what it loads with it.
  sed 's/typeof require !== "undefined"/false/' "$(tinygo env TINYGOROOT)/targets/wasm_exec.js" > "$tmp/wasm_exec.js"
  cat workers/wasm_exec_tinygo.js >> "$tmp/wasm_exec.js"
  ;;
*)
  echo "build.sh: COMPILER=${COMPILER} is neither go nor tinygo" >&2
  exit 2
  ;;
esac
for f in edge-orders.wasm wasm_exec.js; do
  cmp -s "$tmp/$f" "build/$f" || mv -f "$tmp/$f" "build/$f"
done
echo "build.sh: build/edge-orders.wasm $(wc -c < build/edge-orders.wasm) bytes (${COMPILER:-go})"
