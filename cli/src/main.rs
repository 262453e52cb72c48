//! `leasefence`: the lease store from the command line, and the JSON-lines `batch` server.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    std::process::exit(requests::run());
}

/// The CLI's modules, native only: a wasm32 build of the workspace compiles an empty `main`.
macro_rules! native_modules {
    ($($module:ident),* $(,)?) => {
        $(
            #[cfg(not(target_arch = "wasm32"))]
            mod $module;
        )*
    };
}

native_modules!(
    batch,
    call,
    clock,
    commands,
    enqueue_stdin,
    exit,
    jobs_table,
    operations,
    requests,
    ui,
    unlock,
    work,
);
