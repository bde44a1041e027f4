#!/usr/bin/env bash
# Builds the Worker's WebAssembly and its wasm_exec.js into build/:
# with TinyGo when `tinygo` is on PATH, else with standard Go.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p build
if command -v tinygo >/dev/null 2>&1; then
  tinygo build -target wasm -no-debug -o build/edge-orders.wasm .
  cp "$(tinygo env TINYGOROOT)/targets/wasm_exec.js" build/wasm_exec.js
else
  GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w" -o build/edge-orders.wasm .
  cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" build/wasm_exec.js
fi
echo "build.sh: build/edge-orders.wasm $(wc -c < build/edge-orders.wasm) bytes"
