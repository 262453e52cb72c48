//! Embeds the dashboard's page (`leasefence ui`) in the binary: the files its modules import,
//! found by following their imports, so no table of files is kept by hand.
//!
//! In the workspace the page is read from `../web/` (where the playground's modules it shares
//! live); in a packaged crate, from `dashboard-assets/`, the copy `scripts/package-cli.sh` puts
//! there before `cargo package` (listed in Cargo.toml's `include`, ignored by git).
//! The output is `$OUT_DIR/dashboard_assets.rs`: `INDEX` (the shell) and `ASSETS` (path under the
//! server's root, content type, text), read by `src/ui/page.rs`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where the page starts: the shell's module and style, served at `/<path>`.
const ROOTS: [&str; 2] = ["dashboard/main.js", "dashboard/style.css"];
const SHELL: &str = "dashboard/index.html";
/// Browsers ask for `/favicon.svg`; the playground's icon is the dashboard's too.
const ICON: &str = "app/icon.svg";

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest.join("../web");
    let root = if workspace.join(SHELL).is_file() {
        workspace
    } else {
        manifest.join("dashboard-assets")
    };
    if !root.join(SHELL).is_file() {
        panic!(
            "leasefence-cli: the dashboard's page is missing: neither ../web/{SHELL} (the \
             workspace) nor dashboard-assets/{SHELL} (a packaged crate; scripts/package-cli.sh \
             copies it there before cargo package)"
        );
    }

    let mut files = BTreeSet::new();
    let mut pending: Vec<String> = ROOTS.iter().map(|r| r.to_string()).collect();
    while let Some(file) = pending.pop() {
        if !files.insert(file.clone()) {
            continue;
        }
        let path = root.join(&file);
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "leasefence-cli: the dashboard needs {file}, which cannot be read from {}: {err}",
                root.display()
            )
        });
        if file.ends_with(".js") {
            for import in imports(&text) {
                pending.push(resolve(&file, &import));
            }
        }
    }

    let mut out = String::new();
    let include = |path: &Path| format!("include_str!({:?})", path.display().to_string());
    let shell = root.join(SHELL);
    println!("cargo:rerun-if-changed={}", shell.display());
    let _ = writeln!(out, "const INDEX: &str = {};", include(&shell));
    let _ = writeln!(out, "const ASSETS: &[Asset] = &[");
    let served = files
        .iter()
        .map(|f| (format!("/{f}"), root.join(f)))
        .chain(std::iter::once((
            "/favicon.svg".to_owned(),
            root.join(ICON),
        )));
    for (url, path) in served {
        println!("cargo:rerun-if-changed={}", path.display());
        let _ = writeln!(
            out,
            "    Asset {{ path: {url:?}, content_type: {:?}, body: {} }},",
            content_type(&url),
            include(&path)
        );
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(dest.join("dashboard_assets.rs"), out).expect("OUT_DIR is writable");
}

/// The module specifiers a module imports statically (`import … from '…'`, `import '…'`).
fn imports(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            // A statement's own line (`import`, `export … from`, or a multi-line import's
            // closing `} from`), never text that only contains the words.
            if !["import ", "export ", "} from "]
                .iter()
                .any(|p| line.starts_with(p))
            {
                return None;
            }
            let rest = line
                .split_once(" from '")
                .map(|(_, rest)| rest)
                .or_else(|| line.strip_prefix("import '"))?;
            rest.split_once('\'').map(|(spec, _)| spec.to_owned())
        })
        .collect()
}

/// `spec` relative to the module `from` (both paths under the page's root).
fn resolve(from: &str, spec: &str) -> String {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for piece in spec.split('/') {
        match piece {
            "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("html") => "text/html; charset=utf-8",
        _ => "application/octet-stream",
    }
}
