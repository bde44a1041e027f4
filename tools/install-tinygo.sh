#!/usr/bin/env bash
# Installs the pinned TinyGo that COMPILER=tinygo builds the Worker with,
# from the Go module proxy and Debian's packages alone:
#
#   - Debian: LLVM 19 (TinyGo links against it and runs its clang and
#     wasm-ld), binaryen (wasm-opt), and the wasm libraries TinyGo would
#     otherwise build from sources its module zip lacks: compiler-rt's
#     builtins and wasi-libc;
#   - the module proxy: TinyGo's source (go mod download), built with the
#     Go toolchain it accepts, which the go command fetches by
#     GOTOOLCHAIN.
#
# It installs into TINYGO_PREFIX (a versioned folder) and links
# BIN_DIR/tinygo to a wrapper there. Run it again and it checks and
# leaves a good install as it is; each step is skipped when its result is
# there. `make tinygo` runs it. Nothing else in the project needs it:
# COMPILER=auto builds with standard Go where TinyGo is absent.
set -euo pipefail

version=0.40.1
# TinyGo 0.40 refuses a Go newer than 1.25.
go_toolchain=go1.25.5
llvm=19
packages=(llvm-$llvm-dev clang-$llvm lld-$llvm libclang-$llvm-dev
  libclang-rt-$llvm-dev-wasm32 binaryen wasi-libc)

say() { echo "install-tinygo: $*"; }
# took prints the seconds since the last step.
last=$SECONDS
took() { say "$1 ($((SECONDS - last)) s)"; last=$SECONDS; }
cannot() {
  say "cannot install here: $*" >&2
  cat <<EOF >&2
install-tinygo: this script needs a Debian-like system (Debian 12 or
Ubuntu 24.04 and later, whose apt has LLVM $llvm), as root or with sudo.
Elsewhere install TinyGo $version yourself and put it on PATH:
  macOS:   brew tap tinygo-org/tools && brew install tinygo
  others:  the packages and release archives listed at
           https://tinygo.org/getting-started/install/
build.sh uses the tinygo it finds on PATH for COMPILER=tinygo; without
one, COMPILER=auto (the default) builds with standard Go.
EOF
  exit 1
}

if [[ $(id -u) == 0 ]]; then
  prefix_default=/usr/local/lib/edge-orders/tinygo-$version
  bin_default=/usr/local/bin
else
  prefix_default=${XDG_DATA_HOME:-$HOME/.local/share}/edge-orders/tinygo-$version
  bin_default=$HOME/.local/bin
fi
prefix=${TINYGO_PREFIX:-$prefix_default}
bin_dir=${BIN_DIR:-$bin_default}
root=$prefix/tinygo # TINYGOROOT: the module's source, and build/tinygo

# The install is good when the wrapper runs and reports the pinned
# version: then there is nothing to do.
if [[ -x $prefix/bin/tinygo ]] && "$prefix/bin/tinygo" version 2> /dev/null | grep -q "tinygo version $version "; then
  say "TinyGo $version is installed in $prefix"
  installed=1
else
  installed=
fi

# Debian's packages, those missing only.
missing=()
if [[ -z $installed ]]; then
  command -v dpkg-query > /dev/null && command -v apt-get > /dev/null ||
    cannot "no apt-get and dpkg (not a Debian-like system)"
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if ((${#missing[@]})); then
  sudo=()
  if [[ $(id -u) != 0 ]]; then
    command -v sudo > /dev/null || cannot "not root, no sudo, and apt packages missing: ${missing[*]}"
    sudo=(sudo)
  fi
  say "apt-get install ${missing[*]}"
  # Another apt or dpkg running (an unattended upgrade, another install)
  # holds dpkg's lock: wait for it, up to ten minutes, rather than fail.
  apt_wait=(-o DPkg::Lock::Timeout=600)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_wait[@]}" update -q ||
    cannot "apt-get update failed"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_wait[@]}" install -y -q --no-install-recommends "${missing[@]}" ||
    cannot "apt-get install ${missing[*]} failed (this system's apt may have no LLVM $llvm)"
  took "Debian's packages installed"
fi

if [[ -z $installed ]]; then
  command -v go > /dev/null || cannot "no go on PATH (Go 1.25 or later builds TinyGo)"
  mkdir -p "$prefix/bin" "$prefix/lib"
  cd "$prefix"

  # TinyGo's source, copied out of the read-only module cache. The module
  # zip leaves out its git submodules: src/net (an empty folder will do,
  # since the Worker imports neither net nor net/http) and the sources of
  # the C libraries, which Debian's builds replace below.
  if [[ ! -s $root/build/tinygo ]]; then
    say "go mod download github.com/tinygo-org/tinygo@v$version"
    dir=$(cd / && GOTOOLCHAIN=local GOFLAGS= go mod download -json "github.com/tinygo-org/tinygo@v$version" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -d $dir ]] || cannot "go mod download gave no source folder"
    rm -rf "$root.tmp"
    cp -r "$dir" "$root.tmp"
    chmod -R u+w "$root.tmp"
    mkdir -p "$root.tmp/src/net"
    say "building TinyGo against LLVM $llvm with $go_toolchain (about a minute)"
    (cd "$root.tmp" && GOTOOLCHAIN=$go_toolchain GOFLAGS= CGO_ENABLED=1 \
      go build -buildvcs=false -tags "llvm$llvm osusergo" -o build/tinygo .)
    rm -rf "$root"
    mv "$root.tmp" "$root"
    took "TinyGo built"
  fi

  # The libraries, laid out as TinyGo's cache holds one it built: lib.a,
  # and wasi-libc's headers in include/. The wrapper places them in the
  # cache, where TinyGo looks before it builds a library.
  lib=$prefix/lib
  if [[ ! -s $lib/compiler-rt-wasm32-unknown-wasi-generic/lib.a ]]; then
    rt=$(ls /usr/lib/llvm-$llvm/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a 2> /dev/null | head -1)
    [[ -s $rt ]] || cannot "libclang-rt-$llvm-dev-wasm32 installed no libclang_rt.builtins-wasm32.a"
    mkdir -p "$lib/compiler-rt-wasm32-unknown-wasi-generic"
    cp "$rt" "$lib/compiler-rt-wasm32-unknown-wasi-generic/lib.a"
  fi
  if [[ ! -s $lib/wasi-libc-wasm32-unknown-wasi-generic/lib.a ]]; then
    [[ -s /usr/lib/wasm32-wasi/libc.a && -d /usr/include/wasm32-wasi ]] ||
      cannot "wasi-libc installed no /usr/lib/wasm32-wasi/libc.a"
    tmp=$(mktemp -d)
    mkdir -p "$tmp/include"
    cp -r /usr/include/wasm32-wasi/. "$tmp/include/"
    cp /usr/lib/wasm32-wasi/libc.a "$tmp/lib.a"
    # Debian builds wasi-libc with asserts on, and the assert in
    # arc4random_buf brings printf and stdio into the module (about 25 KB,
    # and the fd_close and fd_seek imports). An assert that traps replaces
    # musl's assert.o in the archive.
    printf '%s\n' '_Noreturn void __assert_fail(const char *expr, const char *file, int line, const char *func) { __builtin_trap(); }' > "$tmp/assert.c"
    clang-$llvm --target=wasm32-unknown-wasi -Oz -c "$tmp/assert.c" -o "$tmp/assert.o"
    llvm-ar-$llvm r "$tmp/lib.a" "$tmp/assert.o"
    rm -rf "$lib/wasi-libc-wasm32-unknown-wasi-generic"
    mkdir -p "$lib/wasi-libc-wasm32-unknown-wasi-generic"
    mv "$tmp/lib.a" "$tmp/include" "$lib/wasi-libc-wasm32-unknown-wasi-generic/"
    rm -rf "$tmp"
  fi

  # The wrapper: TinyGo's root, the Go it accepts, LLVM's tools on PATH,
  # and the libraries in the cache of whoever runs it.
  cat > "$prefix/bin/tinygo.tmp" <<EOF
#!/bin/sh
# TinyGo $version, installed by edge-orders' tools/install-tinygo.sh.
export TINYGOROOT='$root'
export GOTOOLCHAIN=$go_toolchain
export PATH="/usr/lib/llvm-$llvm/bin:\$PATH"
cache="\${XDG_CACHE_HOME:-\$HOME/.cache}/tinygo"
for l in '$lib'/*/; do
  l=\${l%/}
  cmp -s "\$l/lib.a" "\$cache/\${l##*/}/lib.a" || { mkdir -p "\$cache" && rm -rf "\$cache/\${l##*/}" && cp -r "\$l" "\$cache/"; }
done
exec '$root/build/tinygo' "\$@"
EOF
  chmod +x "$prefix/bin/tinygo.tmp"
  mv "$prefix/bin/tinygo.tmp" "$prefix/bin/tinygo"

  # Fetch the Go toolchain now rather than at the first build.
  GOTOOLCHAIN=$go_toolchain go version > /dev/null
  "$prefix/bin/tinygo" version | grep -q "tinygo version $version " ||
    cannot "the built tinygo does not run: $("$prefix/bin/tinygo" version 2>&1 | head -3)"
  took "TinyGo $version installed in $prefix"
fi

# On PATH: a link in BIN_DIR, unless another tinygo is already there.
target=$bin_dir/tinygo
if [[ -L $target && $(readlink "$target") == "$prefix/bin/tinygo" ]]; then
  :
elif [[ -e $target ]]; then
  say "$target is another tinygo and is left alone; this one is $prefix/bin/tinygo"
else
  mkdir -p "$bin_dir"
  ln -sfn "$prefix/bin/tinygo" "$target"
  say "linked $target"
fi
case ":$PATH:" in
*":$bin_dir:"*) ;;
*) say "$bin_dir is not on PATH: add it, or call $prefix/bin/tinygo" ;;
esac
