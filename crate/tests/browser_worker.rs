//! The wasm build in a real browser: a dedicated Web Worker on OPFS (sahpool), through the same
//! `WasmStore` surface the JavaScript `LeaseStore` uses. Run by
//! `wasm-pack test --headless --chrome crate -- --features browser --test browser_worker`.
#![cfg(all(target_arch = "wasm32", feature = "browser"))]

use js_sys::{Array, Reflect};
use leasefence::{LeaseStore, WasmStore};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

fn args(values: &[JsValue]) -> Array {
    values.iter().cloned().collect()
}

fn field(object: &JsValue, name: &str) -> JsValue {
    Reflect::get(object, &name.into()).unwrap()
}

fn s(text: &str) -> JsValue {
    JsValue::from_str(text)
}

fn n(number: f64) -> JsValue {
    JsValue::from_f64(number)
}

/// The store `name`, empty: a profile may keep an earlier run's database, so the store's tables
/// are dropped and made again (through the seam a crate building on this wasm uses).
async fn fresh(name: &str) -> WasmStore {
    let store = WasmStore::open_opfs(name.into())
        .await
        .expect("OPFS opens in a worker");
    let lease_store = store.lease_store().unwrap();
    for table in LeaseStore::TABLES {
        lease_store
            .connection()
            .execute_batch(&format!("DROP TABLE IF EXISTS {table}"))
            .unwrap();
    }
    lease_store.init().unwrap();
    store
}

#[wasm_bindgen_test]
async fn the_stale_worker_is_fenced_off_on_opfs() {
    let store = fresh("worker-story.db").await;
    assert_eq!(
        field(&store.call("enqueue", args(&[s("j")])).unwrap(), "value"),
        true
    );
    let a = store
        .call("claim", args(&[s("j"), s("A"), n(0.0), n(10.0)]))
        .unwrap();
    assert_eq!(field(&a, "value").as_f64(), Some(1.0));
    let held = store
        .call("claim", args(&[s("j"), s("B"), n(5.0), n(10.0)]))
        .unwrap();
    assert!(field(&held, "value").is_null());
    assert_eq!(
        field(&field(&held, "reason"), "code")
            .as_string()
            .as_deref(),
        Some("held")
    );
    let b = store
        .call("claim", args(&[s("j"), s("B"), n(12.0), n(10.0)]))
        .unwrap();
    assert_eq!(field(&b, "value").as_f64(), Some(2.0));
    let stale = store
        .call(
            "complete",
            args(&[s("j"), s("A"), n(1.0), n(13.0), s("late")]),
        )
        .unwrap();
    assert_eq!(field(&stale, "value"), false);
    let reason = field(&stale, "reason");
    assert_eq!(
        field(&reason, "code").as_string().as_deref(),
        Some("stale_fence")
    );
    assert_eq!(field(&reason, "fence").as_f64(), Some(2.0));
    let done = store
        .call(
            "complete",
            args(&[s("j"), s("B"), n(2.0), n(13.0), s("B's")]),
        )
        .unwrap();
    assert_eq!(field(&done, "value"), true);
    let row = field(&store.call("state", args(&[s("j")])).unwrap(), "value");
    assert_eq!(field(&row, "result").as_string().as_deref(), Some("B's"));
    assert_eq!(field(&row, "done"), true);
}

#[wasm_bindgen_test]
async fn bad_arguments_throw_invalid_argument_and_change_nothing() {
    let store = fresh("worker-args.db").await;
    store.call("enqueue", args(&[s("j")])).unwrap();
    for bad in [
        args(&[s("j"), s("A"), n(f64::NAN), n(10.0)]),
        args(&[s("j"), s("A"), n(0.0), n(0.0)]),
        args(&[s("j"), s("A"), n(0.0), n(f64::INFINITY)]),
        args(&[n(1.0), s("A"), n(0.0), n(10.0)]),
        args(&[s("j"), s("A"), n(0.0)]),
    ] {
        let err = store.call("claim", bad).unwrap_err();
        assert_eq!(
            field(&err, "code").as_string().as_deref(),
            Some("invalid_argument")
        );
    }
    let row = field(&store.call("state", args(&[s("j")])).unwrap(), "value");
    assert_eq!(field(&row, "fence").as_f64(), Some(0.0));
}

#[wasm_bindgen_test]
async fn data_survives_closing_and_reopening() {
    let mut store = fresh("worker-reopen.db").await;
    store.call("enqueue", args(&[s("kept")])).unwrap();
    store
        .call("claim", args(&[s("kept"), s("A"), n(0.0), n(10.0)]))
        .unwrap();
    // The application's own table next to the jobs, written on the store's connection.
    store
        .lease_store()
        .unwrap()
        .connection()
        .execute_batch(
            "CREATE TABLE IF NOT EXISTS notes(note TEXT); DELETE FROM notes; \
             INSERT INTO notes VALUES ('hello');",
        )
        .unwrap();
    store.close();
    assert!(
        store.lease_store().is_err(),
        "a closed store has no connection"
    );
    let again = WasmStore::open_opfs("worker-reopen.db".into())
        .await
        .unwrap();
    let row = field(&again.call("state", args(&[s("kept")])).unwrap(), "value");
    assert_eq!(field(&row, "fence").as_f64(), Some(1.0));
    let note: String = again
        .lease_store()
        .unwrap()
        .connection()
        .query_row("SELECT note FROM notes", [], |row| row.get(0))
        .unwrap();
    assert_eq!(note, "hello");
}
