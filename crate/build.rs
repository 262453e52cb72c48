//! Two configuration flags:
//! - `web`: wasm32 under a JavaScript host (`wasm32-unknown-unknown`: Node and the browser, through
//!   wasm-bindgen). WASI (`wasm32-wasip2`, the component of feature `component`) is no `web`
//!   target: it has a file system and builds SQLite from source as native targets do.
//! - `native`: neither (Linux, macOS, Windows): processes, threads, POSIX locks, host names.
//! - `pg`: the PostgreSQL backend's core (its statements and operations, `src/postgres/wire.rs`
//!   and `ops.rs`) is compiled in. Natively with the `postgres` feature (the `postgres` client
//!   runs it); in wasm with `node` (Node's `pg` runs it through JavaScript).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(pg)");
    println!("cargo::rustc-check-cfg=cfg(web)");
    println!("cargo::rustc-check-cfg=cfg(native)");
    let feature = |name: &str| std::env::var_os(format!("CARGO_FEATURE_{name}")).is_some();
    let wasm = std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32");
    let wasi = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("wasi");
    let web = wasm && !wasi;
    if web {
        println!("cargo::rustc-cfg=web");
    }
    if !wasm {
        println!("cargo::rustc-cfg=native");
    }
    if (feature("POSTGRES") && !wasm) || (feature("NODE") && web) {
        println!("cargo::rustc-cfg=pg");
    }
    // The Node-API addon: napi-build sets the link arguments a Node addon needs.
    #[cfg(feature = "addon")]
    if feature("ADDON") && !wasm {
        napi_build::setup();
    }
}
