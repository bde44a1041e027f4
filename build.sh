#!/usr/bin/env bash
# Builds the Worker's WebAssembly and its wasm_exec.js into build/:
# with TinyGo when `tinygo` is on PATH, else with standard Go.
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
if command -v tinygo >/dev/null 2>&1; then
  tinygo build -target wasm -no-debug -o "$tmp/edge-orders.wasm" .
  cp "$(tinygo env TINYGOROOT)/targets/wasm_exec.js" "$tmp/wasm_exec.js"
else
  GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w" -o "$tmp/edge-orders.wasm" .
  cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" "$tmp/wasm_exec.js"
fi
for f in edge-orders.wasm wasm_exec.js; do
  cmp -s "$tmp/$f" "build/$f" || mv -f "$tmp/$f" "build/$f"
done
echo "build.sh: build/edge-orders.wasm $(wc -c < build/edge-orders.wasm) bytes"
