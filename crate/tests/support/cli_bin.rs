//! Where the `leasefence` binary is. It belongs to the `leasefence-cli` package (cli/), so that
//! `clap` is not a dependency of the library, and Cargo gives a package's tests only the paths of
//! its own binaries (`CARGO_BIN_EXE_*`). `cargo test --workspace` builds it next to these tests
//! (cli/ has an integration test, so its binary is part of the build): `target/<profile>/`.
//! `LEASEFENCE_BIN` overrides the path.

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

/// The `leasefence` binary of this build (`target/<profile>/leasefence`).
pub fn bin() -> PathBuf {
    if let Some(path) = std::env::var_os("LEASEFENCE_BIN") {
        return path.into();
    }
    let exe = std::env::current_exe().expect("the test binary's own path");
    // target/<profile>/deps/<test>-<hash>  ->  target/<profile>/leasefence
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("a test binary lives in target/<profile>/deps");
    let bin = profile_dir.join(format!("leasefence{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo test --workspace`, or `cargo build -p leasefence-cli` before \
         `cargo test -p leasefence`",
        bin.display()
    );
    bin
}

/// The counters line `leasefence work` prints at exit (its last line of standard output).
// Some tests include this file alone (`#[path]`) and use only `bin`.
#[allow(dead_code)]
pub fn work_counters(output: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_else(|| {
        panic!(
            "work printed nothing; stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}
