#!/usr/bin/env bash
# Builds the WebAssembly component (docs/contract.md section 14) into dist/leasefence.wasm:
# the crate with feature `component` (crate/src/component/, the world of crate/wit/) for
# wasm32-wasip1, made a component with the WASI preview1 reactor adapter by jco (`jco new
# --wasi-reactor`). Installs what it needs, idempotently: the Rust target, Debian's wasi-libc
# (the C library SQLite is compiled against), and jco from npm (package.json).
#
# Why wasip1 plus the adapter, not wasm32-wasip2: wasip2's libc opens writable files with the
# `mutate-directory` flag, which jco's Node file system refuses; the adapted wasip1 build runs
# unchanged on wasmtime and jco alike.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/leasefence.wasm}

rustup target list --installed | grep -qx wasm32-wasip1 || rustup target add wasm32-wasip1
if [ ! -f /usr/include/wasm32-wasi/stdio.h ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wasi-libc clang >/dev/null
fi
[ -x node_modules/.bin/jco ] || npm install --no-audit --no-fund --loglevel=error

# clang looks for <sysroot>/include/<target> and <sysroot>/lib/<target>; Debian's wasi-libc puts
# them under the triple wasm32-wasi, so a sysroot of links names them for wasip1.
sysroot=target/wasi-sysroot
mkdir -p "$sysroot/include" "$sysroot/lib"
for triple in wasm32-wasi wasm32-wasip1; do
  ln -sfn /usr/include/wasm32-wasi "$sysroot/include/$triple"
  ln -sfn /usr/lib/wasm32-wasi "$sysroot/lib/$triple"
done

WASI_SYSROOT="$PWD/$sysroot" cargo build --quiet -p leasefence --target wasm32-wasip1 \
  --profile wasm --no-default-features --features component
mkdir -p "$(dirname "$out")"
# binaryen's wasm-opt (npm's: Debian's writes broken wasm) on the core module, before it is
# wrapped; it keeps the component-type section wit-bindgen wrote. Cached by the hash of its input
# and flags, as scripts/build-wasm.sh does: it takes 20-30 s here.
core=target/wasm32-wasip1/wasm/leasefence.wasm
opt_flags=(-Os --strip-debug --strip-producers)
cache=target/component-build/wasm-opt
key=$( (cat "$core"; echo "${opt_flags[*]}") | sha256sum | cut -d' ' -f1)
if [ ! -f "$cache/$key.wasm" ]; then
  rm -rf "$cache" && mkdir -p "$cache"
  node_modules/.bin/wasm-opt "${opt_flags[@]}" "$core" -o "$cache/$key.wasm.tmp"
  mv "$cache/$key.wasm.tmp" "$cache/$key.wasm"
fi
node_modules/.bin/jco new "$cache/$key.wasm" --wasi-reactor -o "$out" >/dev/null
# The same component as an ES module for Node (the tests in tests/component run it): jco
# transpile, beside a package.json that says it is one.
js=target/component-js
rm -rf "$js"
node_modules/.bin/jco transpile "$out" -o "$js" --name leasefence --quiet >/dev/null
echo '{"type": "module"}' > "$js/package.json"
size=$(stat -c %s "$out")
gz=$(gzip -9 -c "$out" | wc -c)
echo "leasefence: built $out ($size bytes, $gz gzipped; sha256 $(sha256sum "$out" | cut -c1-16))"
