#!/usr/bin/env bash
# Builds the Worker's WebAssembly and its wasm_exec.js into build/, and
# names the compiler that built them in build/compiler.
#
# COMPILER says with what:
#   auto    (the default) the pinned TinyGo where it is installed; else
#           standard Go, saying so in one line. It never installs
#           anything;
#   tinygo  the pinned TinyGo, or fail (make tinygo installs it): what a
#           deploy names, so that it never falls back silently;
#   go      standard Go.
# TinyGo's module is about four times smaller under gzip and starts
# several times faster; a panic traps instead of being recovered, which
# the entry contains (docs/operating.md); bench/README.md compares them.
#
# wrangler runs this before every `wrangler dev` and deploy, and each
# running `wrangler dev` reloads its Worker when build/ changes: so a file
# is replaced, atomically, only when its content changed, and builds that
# run at once (the tests start several Workers) never disturb one another.
#
# Tests build variants beside it: BUILD_DIR (default build) is where the
# files go, BUILD_TAGS the Go build tags (test/panics_test.go builds
# -tags panichook into a folder of its own; nothing shipped has a tag).
set -euo pipefail
cd "$(dirname "$0")"
out=${BUILD_DIR:-build}
tags=${BUILD_TAGS:-}
# make test builds once, then sets EDGE_ORDERS_BUILT=1 for the dozens of
# Workers its tests start: each start's build would find the same module,
# at a second of CPU each, one at a time under the lock below.
if [[ "${EDGE_ORDERS_BUILT:-}" == 1 && -s $out/edge-orders.wasm && -s $out/wasm_exec.js ]]; then
  exit 0
fi
mkdir -p "$out"
tmp=$(mktemp -d "$out/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The TinyGo release the project pins, and the Go toolchain it needs
# (TinyGo 0.40 refuses a Go newer than 1.25), which every tinygo call
# below gets, whoever installed TinyGo: a packaged TinyGo beside Go 1.26
# fails otherwise. make tinygo's wrapper sets the same.
tinygo_pinned=0.40.1
tinygo() { GOTOOLCHAIN=go1.25.5 command tinygo "$@"; }

# tinygo_found is the version of the tinygo on PATH, empty for none.
tinygo_found() {
  type -P tinygo > /dev/null || return 0
  tinygo version 2> /dev/null | sed -n 's/^tinygo version \([^ ]*\) .*/\1/p'
}

# tinygo_inputs names what a TinyGo build reads, by hash: TinyGo takes
# about 20 s of CPU to link even when nothing changed, and the tests start
# several Workers at once, each running this script, so the build is
# reused while its inputs are the same.
tinygo_stack_size=${TINYGO_STACK_SIZE:-32KB}
tinygo_inputs() {
  {
    tinygo version
    "$(wasm_opt)" --version
    echo "stack size $tinygo_stack_size, tags $tags"
    sha256sum go.mod go.sum build.sh workers/wasm_exec_entry.js "$(tinygo env TINYGOROOT)/targets/wasm_exec.js"
    find . -name '*.go' ! -name '*_test.go' ! -path './node_modules/*' ! -path './build/*' -print0 | sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}

# wasm_opt names the wasm-opt TinyGo would run: WASMOPT, the one its
# release ships beside it, or the one on PATH.
wasm_opt() {
  if [[ -n "${WASMOPT:-}" ]]; then
    echo "$WASMOPT"
    return
  fi
  local root
  root=$(tinygo env TINYGOROOT)
  for w in "$root/bin/wasm-opt" "$root/build/wasm-opt" "$(command -v wasm-opt)"; do
    [[ -n "$w" && -x "$w" ]] && { echo "$w"; return; }
  done
  echo "build.sh: no wasm-opt for TinyGo (binaryen; make tinygo installs it)" >&2
  return 1
}

# build_tinygo builds with TinyGo, its errors in $tmp/tinygo.log, or
# reuses the last TinyGo build if its inputs are the same.
build_tinygo() {
  tinygo_inputs > "$tmp/tinygo.inputs"
  if [[ "$(cat "$out/compiler" 2> /dev/null)" == tinygo ]] && cmp -s "$tmp/tinygo.inputs" "$out/tinygo.inputs"; then
    cp "$out/edge-orders.wasm" "$out/wasm_exec.js" "$tmp/"
    return
  fi
  # Every goroutine gets a stack of its own on TinyGo's heap, and every
  # call from JavaScript into Go starts one: their size is most of the
  # heap. The wasm target's default is 64 KB; a new order overflows 12 KB
  # and fits in 16 KB, so 32 KB leaves twice the deepest path measured
  # (bench/README.md). TINYGO_STACK_SIZE overrides it.
  # TinyGo's wasm-opt step adds asyncify, which lets a goroutine pause
  # and resume: it rewrites every function that a pause may pass through.
  # Not told otherwise, it takes any call to JavaScript for one that may
  # pause, and rewrites their callers too, up to every function that can
  # panic (a panic's message is written out through JavaScript). Only
  # TinyGo's own scheduler pauses (asyncify.start_unwind, which asyncify
  # always counts), never a call to JavaScript: so wasm-opt is told to
  # ignore the imports, which takes a tenth off the gzipped module.
  # -panic=trap ends a panic at once instead of printing its message
  # first: a recover() is out of reach under TinyGo's wasm either way, and
  # the message's code at every bounds check was another tenth. The name
  # section stays, so the trap's stack in the log names Go's functions.
  # LLVM 19 warns that it does not know two wasm features TinyGo 0.40
  # names for LLVM 20; the module is the same without them.
  local wasm_opt
  wasm_opt=$(wasm_opt) || return 1
  printf '#!/bin/sh\nexec %q --pass-arg=asyncify-ignore-imports "$@"\n' "$wasm_opt" > "$tmp/wasm-opt"
  chmod +x "$tmp/wasm-opt"
  WASMOPT="$tmp/wasm-opt" tinygo build -target wasm -tags "$tags" -no-debug -panic=trap -stack-size="$tinygo_stack_size" -o "$tmp/edge-orders.wasm" . 2>&1 |
    grep -v "is not a recognized feature for this target" > "$tmp/tinygo.log" || true
  [[ -s "$tmp/edge-orders.wasm" ]] || return 1
  # wrangler's bundler defines a require that wasm_exec.js would adopt as
  # global.require and then call into forever at start-up (tinygo#5370,
  # fixed after 0.40.1); the Worker needs none of what it loads with it.
  # Its Node.js polyfills (node:fs, node:crypto, node:util) run only where
  # crypto and TextEncoder are missing, never in workerd; left in, they
  # make wrangler warn at every start and deploy that they "may throw
  # errors at runtime unless you enable nodejs_compat". They go.
  sed -e 's/typeof require !== "undefined"/false/' -e 's/require("node:[a-z]*")/undefined/g' \
    "$(tinygo env TINYGOROOT)/targets/wasm_exec.js" > "$tmp/wasm_exec.js"
  cat workers/wasm_exec_entry.js >> "$tmp/wasm_exec.js"
}

# WASM_NAMES=1 keeps the module's name section, so that a CPU profile
# (make profile) names Go's functions; it adds about 2% to the module.
build_go() {
  local ldflags="-s -w"
  [[ "${WASM_NAMES:-}" == 1 ]] && ldflags="-w"
  GOOS=js GOARCH=wasm go build -trimpath -tags="$tags" -ldflags="$ldflags" -o "$tmp/edge-orders.wasm" .
  cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" "$tmp/wasm_exec.js"
  cat workers/wasm_exec_entry.js >> "$tmp/wasm_exec.js"
}

# One build at a time: the others then find TinyGo's build up to date.
if command -v flock > /dev/null; then
  exec 9> "$out/.lock"
  flock 9
fi

compiler=${COMPILER:-auto}
found=$(tinygo_found)
if [[ $compiler == auto ]]; then
  if [[ $found == "$tinygo_pinned" ]]; then
    compiler=tinygo
  else
    echo "build.sh: TinyGo $tinygo_pinned not found${found:+ (the tinygo on PATH is $found)}: building with standard Go (make tinygo installs it; COMPILER=go to silence this)" >&2
    compiler=go
  fi
fi
case "$compiler" in
tinygo)
  if [[ $found != "$tinygo_pinned" ]]; then
    echo "build.sh: COMPILER=tinygo needs TinyGo $tinygo_pinned, found ${found:-no tinygo on PATH}$([[ -n $found ]] && echo " at $(type -P tinygo)") (make tinygo installs it)" >&2
    exit 1
  fi
  build_tinygo || { cat "$tmp/tinygo.log" >&2; exit 1; }
  ;;
go)
  build_go
  ;;
*)
  echo "build.sh: COMPILER=$compiler is not auto, tinygo or go" >&2
  exit 2
  ;;
esac
echo "$compiler" > "$tmp/compiler"
[[ $compiler == tinygo ]] || : > "$tmp/tinygo.inputs"
for f in edge-orders.wasm wasm_exec.js tinygo.inputs compiler; do
  cmp -s "$tmp/$f" "$out/$f" || mv -f "$tmp/$f" "$out/$f"
done
echo "build.sh: $out/edge-orders.wasm $(wc -c < "$out/edge-orders.wasm") bytes ($compiler${tags:+, tags $tags})"
