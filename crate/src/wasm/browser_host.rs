//! The browser's storage host calls, through web-sys: whether this browser has OPFS sync access
//! handles (checked before the worker opens the database), asking the browser to keep the
//! origin's storage (`navigator.storage.persist()`, so a learner's database is not evicted under
//! storage pressure), and how much of the origin's quota is used (`navigator.storage.estimate()`).
//!
//! `persist()` is offered to pages only (the Storage standard exposes it on `Window`, not in
//! workers), so the playground's page calls [`storage_persist`] and its worker answers
//! [`storage_estimate`] and [`opfs_check`]. Both scopes are handled: the functions look at the
//! global they run in.

use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{StorageEstimate, StorageManager, Window, WorkerGlobalScope};

use super::js_error;

/// `navigator.storage` of the page or worker this runs in.
fn storage_manager() -> Result<StorageManager, JsValue> {
    let global = js_sys::global();
    if let Some(worker) = global.dyn_ref::<WorkerGlobalScope>() {
        return Ok(worker.navigator().storage());
    }
    if let Some(window) = global.dyn_ref::<Window>() {
        return Ok(window.navigator().storage());
    }
    Err(js_error(
        "storage",
        "navigator.storage is only in browser pages and workers",
    ))
}

/// Whether the storage manager of this scope has `name` (e.g. `persist`, which workers lack).
fn offers(manager: &StorageManager, name: &str) -> bool {
    Reflect::get(manager, &name.into()).is_ok_and(|value| value.is_function())
}

async fn answer(promise: Result<Promise, JsValue>) -> Result<JsValue, JsValue> {
    JsFuture::from(promise?).await
}

/// Throws a `storage` error unless this browser has OPFS sync access handles, which the sahpool
/// VFS needs (`FileSystemFileHandle.prototype.createSyncAccessHandle`).
#[wasm_bindgen(js_name = opfsCheck)]
pub fn opfs_check() -> Result<(), JsValue> {
    let handle = Reflect::get(&js_sys::global(), &"FileSystemFileHandle".into())?;
    let has_sync_access = handle.is_function()
        && Reflect::get(&handle, &"prototype".into())
            .and_then(|prototype| Reflect::has(&prototype, &"createSyncAccessHandle".into()))
            .unwrap_or(false);
    if has_sync_access {
        Ok(())
    } else {
        Err(js_error(
            "storage",
            "this browser has no OPFS sync access handles; leasefence needs Chrome 108+, \
             Firefox 111+ or Safari 16.4+, on https:// or http://localhost",
        ))
    }
}

/// Asks the browser to keep this origin's storage (`navigator.storage.persist()`); resolves to
/// its answer (`true`: persisted, `false`: it may evict under storage pressure). Pages only.
#[wasm_bindgen(js_name = storagePersist)]
pub async fn storage_persist() -> Result<bool, JsValue> {
    let manager = storage_manager()?;
    if !offers(&manager, "persist") {
        return Err(js_error(
            "storage",
            "navigator.storage.persist() is offered to pages only, not to workers",
        ));
    }
    Ok(answer(manager.persist()).await?.as_bool().unwrap_or(false))
}

/// `{usage, quota, persisted}`: the bytes this origin uses and may use
/// (`navigator.storage.estimate()`), and whether its storage is persisted
/// (`navigator.storage.persisted()`). In a page or a worker.
#[wasm_bindgen(js_name = storageEstimate)]
pub async fn storage_estimate() -> Result<JsValue, JsValue> {
    let manager = storage_manager()?;
    let estimate: StorageEstimate = answer(manager.estimate()).await?.unchecked_into();
    let persisted = answer(manager.persisted())
        .await?
        .as_bool()
        .unwrap_or(false);
    let report = Object::new();
    let number = |value: Option<f64>| value.map_or(JsValue::NULL, JsValue::from_f64);
    Reflect::set(&report, &"usage".into(), &number(estimate.get_usage()))?;
    Reflect::set(&report, &"quota".into(), &number(estimate.get_quota()))?;
    Reflect::set(&report, &"persisted".into(), &persisted.into())?;
    Ok(report.into())
}
