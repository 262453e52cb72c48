#!/usr/bin/env python3
"""What the component's bytes are spent on: the core module's code attributed by function name
(its `name` section) to SQLite, the time zone and cron crates, JSON, the WIT bindings, Rust's
standard library and leasefence itself, plus its data (string constants, jiff's time zone
database). Reads the unoptimized core module cargo writes (it has names); the shipped file is that
module after wasm-opt -Os, wrapped with the WASI adapter, so shares are what to look at.

    python3 bench/component/size.py [target/wasm32-wasip1/wasm/leasefence.wasm]
"""

import gzip
import sys
from collections import Counter
from pathlib import Path


def leb(data, i):
    result = shift = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


def sections(data):
    i = 8
    while i < len(data):
        kind = data[i]
        size, i = leb(data, i + 1)
        yield kind, data[i:i + size]
        i += size


def function_bodies(code):
    count, i = leb(code, 0)
    for _ in range(count):
        size, i = leb(code, i)
        yield size
        i += size


def names(custom):
    name_len, i = leb(custom, 0)
    if custom[i:i + name_len] != b"name":
        return None
    i += name_len
    result = {}
    while i < len(custom):
        sub = custom[i]
        size, i = leb(custom, i + 1)
        end = i + size
        if sub == 1:
            count, j = leb(custom, i)
            for _ in range(count):
                index, j = leb(custom, j)
                length, j = leb(custom, j)
                result[index] = custom[j:j + length].decode("utf-8", "replace")
                j += length
        i = end
    return result


GROUPS = [
    ("SQLite (C)", ("sqlite3", "unix", "pager", "btree", "vdbe", "Vdbe", "Btree", "Pager", "Wal", "whereLoop")),
    ("jiff (time zones)", ("jiff",)),
    ("croner (cron)", ("croner",)),
    ("serde / serde_json", ("serde",)),
    ("rusqlite", ("rusqlite", "libsqlite3")),
    ("wit-bindgen (component ABI)", ("wit_bindgen", "leasefence::component")),
    ("leasefence", ("leasefence",)),
    ("Rust std / alloc / core", ("std", "core", "alloc", "<", "__rust", "rust_")),
    ("WASI libc", ("__wasi", "wasi", "__", "_start", "memcpy", "memset", "malloc", "free", "dlmalloc")),
]


def demangled(name):
    """A legacy-mangled Rust symbol (`_ZN10leasefence5rules...E`) as its path, `leasefence::rules`;
    `$LT$`-style escapes are left as they are (the first segment names the crate)."""
    if not name.startswith("_ZN"):
        return name
    parts, i = [], 3
    while i < len(name) and name[i].isdigit():
        j = i
        while name[j].isdigit():
            j += 1
        length = int(name[i:j])
        parts.append(name[j:j + length])
        i = j + length
    return "::".join(p for p in parts if not (p.startswith("h") and len(p) == 17)) or name


def group_of(name):
    name = demangled(name)
    if name.startswith("_$LT$"):
        name = name[5:]
    for group, prefixes in GROUPS:
        bare = name.lstrip("_")
        if any(name.startswith(p) or bare.startswith(p) for p in prefixes):
            return group
    # C functions of SQLite are mostly lowerCamel statics; Rust symbols are mangled paths.
    return "SQLite (C)" if "::" not in name else "other Rust"


def main():
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "target/wasm32-wasip1/wasm/leasefence.wasm")
    data = path.read_bytes()
    imported = 0
    code = data_size = None
    function_names = {}
    for kind, body in sections(data):
        if kind == 2:
            count, i = leb(body, 0)
            for _ in range(count):
                for _part in range(2):
                    length, i = leb(body, i)
                    i += length
                desc = body[i]
                i += 1
                if desc == 0:
                    _, i = leb(body, i)
                    imported += 1
                elif desc == 1:
                    i += 1
                    flags = body[i]; i += 1
                    _, i = leb(body, i)
                    if flags & 1:
                        _, i = leb(body, i)
                elif desc == 2:
                    flags = body[i]; i += 1
                    _, i = leb(body, i)
                    if flags & 1:
                        _, i = leb(body, i)
                else:
                    i += 2
        elif kind == 10:
            code = list(function_bodies(body))
        elif kind == 11:
            data_size = len(body)
        elif kind == 0:
            function_names = names(body) or function_names
    totals = Counter()
    for n, size in enumerate(code):
        name = function_names.get(imported + n, "?")
        totals[group_of(name)] += size
    code_total = sum(code)
    print(f"{path}: {len(data)} bytes ({len(gzip.compress(data, 9))} gzipped)")
    print(f"code {code_total} bytes in {len(code)} functions; data {data_size} bytes")
    for group, size in totals.most_common():
        print(f"  {group:32} {size:>9} bytes  {100 * size / code_total:5.1f}% of code")


if __name__ == "__main__":
    main()
