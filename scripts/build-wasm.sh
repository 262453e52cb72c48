#!/usr/bin/env bash
# Builds wasm with wasm-pack for one place it runs: the library (crate/) for `node` (Node fs VFS,
# CommonJS glue) or `browser` (OPFS sahpool VFS, ES module glue), into OUT_DIR as leasefence.js +
# leasefence_bg.wasm; or `playground`, the playground crate (playground/: the library's browser
# build plus the playground's calls), as leasefence_playground.js + leasefence_playground_bg.wasm.
# Size matters on the web, so: the `wasm` profile (-Os), SQLite without the extensions the
# contract never uses, and binaryen's wasm-opt from npm (Debian's is broken).
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: build-wasm.sh node|browser|playground OUT_DIR"
target=${1:?$usage}
out=${2:?$usage}
case "$target" in
  node) glue=nodejs crate=crate name=leasefence features=(--features node) ;;
  browser) glue=web crate=crate name=leasefence features=(--features browser) ;;
  # The playground crate turns on the library's `browser` feature itself.
  playground) glue=web crate=playground name=leasefence_playground features=() ;;
  *) echo "build-wasm.sh: target must be node, browser or playground, got $target" >&2; exit 2 ;;
esac
bash scripts/setup-wasm.sh

# SQLite features the contract does not use (sqlite-wasm-rs enables them by default). The
# authorizer stays in: fenced writes refuse writes to the library's tables with it (measured:
# 3,945 bytes raw, 2,142 gzipped on the Node wasm).
export SQLITE_WASM_RS_FLAGS="-USQLITE_ENABLE_FTS5 -USQLITE_ENABLE_RTREE -USQLITE_ENABLE_SESSION \
 -USQLITE_ENABLE_PREUPDATE_HOOK -USQLITE_ENABLE_DBSTAT_VTAB -USQLITE_ENABLE_DBPAGE_VTAB \
 -USQLITE_ENABLE_BYTECODE_VTAB -USQLITE_ENABLE_STMTVTAB -USQLITE_ENABLE_UNKNOWN_SQL_FUNCTION \
 -USQLITE_ENABLE_COLUMN_METADATA -USQLITE_ENABLE_MATH_FUNCTIONS -USQLITE_ENABLE_OFFSET_SQL_FUNC \
 -USQLITE_ENABLE_UNLOCK_NOTIFY -DSQLITE_OMIT_PROGRESS_CALLBACK \
 -DSQLITE_OMIT_COMPLETE -DSQLITE_OMIT_GET_TABLE -DSQLITE_OMIT_TCL_VARIABLE \
 -DSQLITE_OMIT_UTF16 -DSQLITE_OMIT_INCRBLOB -DSQLITE_OMIT_BLOB_LITERAL -DSQLITE_OMIT_JSON \
 -DSQLITE_DQS=0 -DSQLITE_OMIT_DESERIALIZE -DSQLITE_OMIT_SHARED_CACHE"
# Only the playground keeps SQLite's statement trace: it shows the statements each operation ran
# (playground/src/trace.rs). The library's builds have no use for it.
if [ "$target" != playground ]; then SQLITE_WASM_RS_FLAGS+=" -DSQLITE_OMIT_TRACE"; fi

echo "== building the wasm for $target (wasm-pack --target $glue)"
# wasm-pack runs cargo (the -Os `wasm` profile) and the wasm-bindgen CLI from PATH
# (--mode no-install: it downloads nothing); its own wasm-opt is off (--no-opt), npm's runs below.
# Each target keeps its own build directory, so switching between them does not rebuild SQLite
# (CARGO_TARGET_DIR, not --target-dir: wasm-pack asks cargo metadata where the wasm is).
mkdir -p "$out"
out_abs=$(cd "$out" && pwd)
CARGO_TARGET_DIR="$PWD/target/wasm-$target-build" wasm-pack --quiet build "$crate" \
  --mode no-install --no-opt --no-pack --no-typescript --no-gitignore \
  --target "$glue" --profile wasm --out-dir "$out_abs" --out-name "$name" \
  -- "${features[@]}"

# wasm-opt takes most of a rebuild that changed nothing (20-30 s here): keep its output next to
# the build, keyed by the hash of its input and flags, and reuse it while both are the same.
opt_flags=(-Os --strip-debug --strip-producers
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
  --enable-mutable-globals --enable-reference-types --enable-multivalue)
cache="target/wasm-$target-build/wasm-opt"
wasm="$out/${name}_bg.wasm"
key=$( (cat "$wasm"; echo "${opt_flags[*]}") | sha256sum | cut -d' ' -f1)
if [ -f "$cache/$key.wasm" ]; then
  cp "$cache/$key.wasm" "$wasm"
else
  node_modules/.bin/wasm-opt "${opt_flags[@]}" "$wasm" -o "$wasm"
  rm -rf "$cache" && mkdir -p "$cache" && cp "$wasm" "$cache/$key.wasm"
fi
