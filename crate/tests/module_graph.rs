#![cfg(not(target_arch = "wasm32"))]
//! Imports go one way inside `crate/src` (crate/src/README.md): no two modules import each
//! other, directly or through others. A module here is a top-level file (`error.rs`) or a child
//! of a top-level folder (`rules/target.rs`, `sqlite/fenced/` with everything under it), as
//! crate/src/README.md draws them. An import is a path naming such a module: `crate::a::b`,
//! `crate::{a::b, ..}`, or `super::b` resolved from where it is written. A folder's own `mod.rs`
//! re-exporting its children is no import between siblings and is left out, as are imports
//! between a module and the folder above it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The module path of a source file: `sqlite/fenced/steps.rs` is `[sqlite, fenced, steps]`,
/// `sqlite/mod.rs` is `[sqlite]`, `lib.rs` (or a binary's `main.rs`) is `[]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifiers of `text` from `at` on, split at `::`, stopping at anything else.
fn segments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        out.push(rest[..end].to_owned());
        match rest[end..].strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    out
}

/// Every module path `line` imports, resolved against `here`, the file's module path.
fn imports(line: &str, here: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let text = line;
    let mut i = 0;
    while let Some(pos) = text[i..].find("crate::").map(|p| p + i) {
        let before_ok = pos == 0 || !is_ident(text[..pos].chars().last().unwrap());
        let tail = &text[pos + "crate::".len()..];
        if before_ok {
            if let Some(group) = tail.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                for item in inner.split(',') {
                    found.push(segments(item.trim()));
                }
            } else {
                found.push(segments(tail));
            }
        }
        i = pos + 1;
    }
    let mut i = 0;
    while let Some(pos) = text[i..].find("super::").map(|p| p + i) {
        let before_ok = pos == 0 || !is_ident(text[..pos].chars().last().unwrap());
        if before_ok && !text[..pos].ends_with("super::") {
            // `super` is the parent of the module the file is (a mod.rs is its folder's).
            let mut base: Vec<String> = here.to_vec();
            base.pop();
            let mut tail = &text[pos + "super::".len()..];
            while let Some(next) = tail.strip_prefix("super::") {
                base.pop();
                tail = next;
            }
            if let Some(group) = tail.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                for item in inner.split(',') {
                    let mut path = base.clone();
                    path.extend(segments(item.trim()));
                    found.push(path);
                }
            } else {
                let mut path = base;
                path.extend(segments(tail));
                found.push(path);
            }
        }
        i = pos + 1;
    }
    found
}

/// The graph's node of a module path: a top-level module, or a child of a top-level folder.
fn node(path: &[String], folders: &BTreeSet<String>) -> Option<String> {
    match path {
        [] => None,
        [top, ..] if !folders.contains(top) => Some(top.clone()),
        [top] => Some(top.clone()),
        [top, child, ..] => Some(format!("{top}/{child}")),
    }
}

/// The import graph of `src`: node -> the nodes it imports.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let paths: Vec<(PathBuf, Vec<String>)> = files
        .iter()
        .map(|f| (f.clone(), module_path(src, f)))
        .collect();
    let folders: BTreeSet<String> = paths
        .iter()
        .filter(|(_, p)| p.len() >= 2)
        .map(|(_, p)| p[0].clone())
        .collect();
    let modules: BTreeSet<Vec<String>> = paths.iter().map(|(_, p)| p.clone()).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, here) in &paths {
        let Some(from) = node(here, &folders) else {
            continue;
        };
        // A folder's own mod.rs (`sqlite/mod.rs`): its re-exports are no sibling imports.
        if here.len() == 1 && folders.contains(&here[0]) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let mut after_cfg_test = false;
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            // A file's unit tests (`#[cfg(test)] mod tests`) may reach anywhere; they end it.
            if after_cfg_test && code.starts_with("mod ") {
                break;
            }
            after_cfg_test = code == "#[cfg(test)]";
            for path in imports(code, here) {
                // The longest prefix that is a module of the crate.
                let module = (1..=path.len())
                    .rev()
                    .map(|n| path[..n].to_vec())
                    .find(|p| modules.contains(p));
                let Some(to) = module.and_then(|m| node(&m, &folders)) else {
                    continue;
                };
                let related = from == to
                    || from.starts_with(&format!("{to}/"))
                    || to.starts_with(&format!("{from}/"));
                if !related {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    edges
}

/// The circles of `edges`: each strongly connected set of more than one node (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        edges: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        found: Vec<Vec<String>>,
    }
    fn visit(s: &mut State<'_>, v: &str) {
        let i = s.index.len();
        s.index.insert(v.to_owned(), i);
        s.low.insert(v.to_owned(), i);
        s.stack.push(v.to_owned());
        s.on_stack.insert(v.to_owned());
        let next: Vec<String> = s.edges.get(v).into_iter().flatten().cloned().collect();
        for w in next {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.to_owned(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.to_owned(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut set = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let last = w == v;
                set.push(w);
                if last {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                s.found.push(set);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    let nodes: Vec<String> = edges.keys().cloned().collect();
    for v in nodes {
        if !state.index.contains_key(&v) {
            visit(&mut state, &v);
        }
    }
    state.found
}

/// The circles of the tree under `src`, each written out with its edges inside the circle.
fn described_circles(src: &Path, least_edges: usize) -> Vec<String> {
    let edges = graph(src);
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() >= least_edges,
        "the import graph of {} looks empty; the scan is broken: {edges:?}",
        src.display()
    );
    circles(&edges)
        .iter()
        .map(|set| {
            let inner: Vec<String> = set
                .iter()
                .map(|a| {
                    let to: Vec<&String> = edges[a].iter().filter(|b| set.contains(b)).collect();
                    format!("{a} -> {to:?}")
                })
                .collect();
            inner.join("; ")
        })
        .collect()
}

/// Fails with every circle of the tree at `dir` (relative to the crate), named `dir` in the message.
fn assert_no_circles(dir: &str, least_edges: usize) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let found = described_circles(&src, least_edges);
    assert!(
        found.is_empty(),
        "import circles in {dir} (put each piece of knowledge where it belongs, so that imports \
         go one way):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_two_modules_of_the_crate_import_each_other() {
    assert_no_circles("src", 50);
}

/// The command line's modules too (`cli/src`, where `ui/` is the dashboard's folder).
#[test]
fn no_two_modules_of_the_command_line_import_each_other() {
    assert_no_circles("../cli/src", 8);
}

/// The scan itself, on a circle it must see.
#[test]
fn the_scan_sees_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("rules")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod error; mod rules;").unwrap();
    std::fs::write(src.join("rules/mod.rs"), "pub(crate) mod target;").unwrap();
    std::fs::write(src.join("error.rs"), "use crate::rules::target::is_url;").unwrap();
    std::fs::write(
        src.join("rules/target.rs"),
        "fn f() -> crate::error::Error {}",
    )
    .unwrap();
    let edges = graph(src);
    assert_eq!(
        circles(&edges),
        vec![vec!["error".to_owned(), "rules/target".to_owned()]]
    );
}
