//! One configuration flag, `pg`: the PostgreSQL backend's core (its statements and operations,
//! `src/postgres/wire.rs` and `ops.rs`) is compiled in. Natively with the `postgres` feature (the
//! `postgres` client runs it); in wasm with `node` (Node's `pg` runs it through JavaScript).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(pg)");
    let feature = |name: &str| std::env::var_os(format!("CARGO_FEATURE_{name}")).is_some();
    let wasm = std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32");
    if (feature("POSTGRES") && !wasm) || (feature("NODE") && wasm) {
        println!("cargo::rustc-cfg=pg");
    }
    // The Node-API addon: napi-build sets the link arguments a Node addon needs.
    #[cfg(feature = "addon")]
    if feature("ADDON") && !wasm {
        napi_build::setup();
    }
}
