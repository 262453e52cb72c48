//! The binary runs and names itself. Also makes `cargo test --workspace` build
//! `target/<profile>/leasefence`, which the library's process tests (crate/tests/) drive.

use std::process::Command;

#[test]
fn prints_its_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_leasefence"))
        .arg("--version")
        .output()
        .expect("run leasefence --version");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.trim(),
        format!("leasefence {}", env!("CARGO_PKG_VERSION"))
    );
}
