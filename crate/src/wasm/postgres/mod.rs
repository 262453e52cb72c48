//! PostgreSQL from Node: [`WasmPgStore`], the store the npm package's `LeaseStore.connect(url)`
//! returns for a `postgres://` URL. JavaScript lends it a `pg` pool and does the network I/O; the
//! statements, the checks, the reasons and their order are the crate's (`crate::postgres`), run
//! through the same protocol dispatch as every other store, answering with promises.

mod fenced;
mod guard;
mod js_wire;
mod store;

use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;

use super::{answer_to_js, error_to_js, request_from_js};
use crate::postgres::schema::lock_timeout_setting;
use crate::postgres::tls_settings::{split_url, ServerCheck};
use crate::rules::target::url_label;
use store::{NodePgStore, PgPool};

/// A lease store on a PostgreSQL server, through a `pg` pool:
///
/// ```js
/// const { Pool } = require('pg');
/// const store = WasmPgStore.onPool(new Pool({ connectionString: url }), url, 10000);
/// await store.call('enqueue', ['job']);                    // {value: true, reason: null}
/// const { value: fence } = await store.call('claim', ['job', 'A', 0, 30]);
/// ```
#[wasm_bindgen]
pub struct WasmPgStore {
    store: Rc<NodePgStore>,
}

#[wasm_bindgen]
impl WasmPgStore {
    /// A store on `pool` (a `pg` `Pool`). `url` names the server in messages (its password is
    /// never shown); `busyTimeoutMs` is each connection's `lock_timeout`. Connects nothing yet.
    #[wasm_bindgen(js_name = onPool)]
    pub fn on_pool(pool: PgPool, url: &str, busy_timeout_ms: f64) -> Result<WasmPgStore, JsValue> {
        if !(busy_timeout_ms.is_finite() && busy_timeout_ms >= 0.0) {
            return Err(super::js_error(
                "invalid_argument",
                "busyTimeout must be a finite number of milliseconds, 0 or more",
            ));
        }
        let timeout = std::time::Duration::from_millis(busy_timeout_ms as u64);
        Ok(WasmPgStore {
            store: Rc::new(NodePgStore {
                pool,
                lock_timeout: lock_timeout_setting(timeout),
                label: url_label(url),
                schema_checked: std::cell::Cell::new(false),
            }),
        })
    }

    /// Borrows a connection and sets it up (the session settings, the schema checked and made
    /// where missing): a promise that rejects, with the reason, when the server cannot be used.
    pub fn connect(&self) -> Promise {
        let store = Rc::clone(&self.store);
        wasm_bindgen_futures::future_to_promise(async move {
            store.connect().await.map_err(|e| error_to_js(&e))?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Tells the store that the pool lost a connection while it was idle (the pool's `error`
    /// event: a server restart, perhaps onto a restored database): the next new connection checks
    /// the schema again, as after a lost connection in a call.
    #[wasm_bindgen(js_name = connectionLost)]
    pub fn connection_lost(&self) {
        self.store.schema_checked.set(false);
    }

    /// The server as a label: user, hosts, ports and database, never the password.
    pub fn url(&self) -> String {
        self.store.label.clone()
    }

    /// The callback form of `fenced` (docs/contract.md section 8): opens the transaction on one
    /// connection, calls `work(handle)` (a [`fenced::PgFencedTx`]; `work` may return a promise,
    /// which is awaited), then checks that your statements left the library's tables alone,
    /// checks the lease and commits. A promise of `{value, reason}`; an exception `work` throws
    /// (or a rejection) rolls back and rejects with that exception.
    #[wasm_bindgen(js_name = fencedWith)]
    pub fn fenced_with(
        &self,
        job: JsValue,
        owner: JsValue,
        fence: JsValue,
        now: JsValue,
        options: JsValue,
        work: Function,
    ) -> Promise {
        let args = match super::fenced::lease_args(&job, &owner, &fence, &now, &options) {
            Ok(args) => args,
            Err(err) => return Promise::reject(&err),
        };
        let store = Rc::clone(&self.store);
        wasm_bindgen_futures::future_to_promise(async move {
            let (lease, now, finish) = args;
            let thrown = std::cell::RefCell::new(None);
            let outcome = store
                .fenced_callback(&lease, now, finish, &work, &thrown)
                .await;
            if let Some(exception) = thrown.take() {
                return Err(exception);
            }
            super::fenced::outcome_to_js(outcome.map_err(|e| error_to_js(&e))?)
        })
    }

    /// Runs the operation `op` with its positional arguments, as `WasmStore.call` takes them: a
    /// promise of `{value, reason}`, rejected with an `Error` carrying `code` and `retryable`.
    pub fn call(&self, op: &str, args: Array) -> Promise {
        let request = match request_from_js(op, &args) {
            Ok(request) => request,
            Err(err) => return Promise::reject(&err),
        };
        let store = Rc::clone(&self.store);
        wasm_bindgen_futures::future_to_promise(async move {
            request.validate().map_err(|e| error_to_js(&e))?;
            match crate::protocol::run(&*store, &request).await {
                Ok(answer) => answer_to_js(&answer),
                Err(err) => Err(error_to_js(&err)),
            }
        })
    }
}

/// How to connect to the server at `url` with libpq's TLS meanings, the crate's reading of the
/// URL for `pg` (which gives some of these parameters meanings of its own): `{url, encrypt,
/// check, rootCert, clientCert, clientKey}`. `url` is the URL without `sslmode`, `sslrootcert`,
/// `sslcert` and `sslkey`; `encrypt` is `never`, `prefer` (TLS when the server offers it) or
/// `always`; `check` is `none`, `chain` or `full` (also the URL's host); `rootCert` a file, or
/// `system`, or null. `defaultRoot` and `defaultCert`/`defaultKey` are libpq's default files
/// (`~/.postgresql/root.crt`, `postgresql.crt`, `postgresql.key`), given when they exist.
/// Throws `invalid_argument` for what libpq would refuse too, naming `call` (`LeaseStore.connect`
/// by default, `FenceGuard.connect`).
#[wasm_bindgen(js_name = pgConnectPlan)]
pub fn pg_connect_plan(
    url: &str,
    default_root: Option<String>,
    default_cert: Option<String>,
    default_key: Option<String>,
    call: Option<String>,
) -> Result<JsValue, JsValue> {
    let call = call.unwrap_or_else(|| "LeaseStore.connect".into());
    let refused = |problem: String| {
        super::js_error(
            "invalid_argument",
            &format!("{call}({}): {problem}", url_label(url)),
        )
    };
    let (rest, settings) = split_url(url).map_err(refused)?;
    let root = settings.root_cert.clone().or(default_root);
    let check = settings.server_check(root.is_some()).map_err(refused)?;
    let defaults = default_cert.zip(default_key);
    let identity = settings.client_identity(defaults).map_err(refused)?;
    let plan = js_sys::Object::new();
    let set = |key: &str, value: JsValue| {
        let _ = js_sys::Reflect::set(&plan, &key.into(), &value);
    };
    let text = |value: Option<String>| value.map_or(JsValue::NULL, JsValue::from);
    set("url", rest.into());
    set(
        "encrypt",
        match (check, settings.mode) {
            (None, _) => "never",
            (Some(_), crate::postgres::tls_settings::SslMode::Prefer) => "prefer",
            (Some(_), _) => "always",
        }
        .into(),
    );
    set(
        "check",
        match check {
            None | Some(ServerCheck::EncryptOnly) => "none",
            Some(ServerCheck::Chain) => "chain",
            Some(ServerCheck::ChainAndName) => "full",
        }
        .into(),
    );
    set("rootCert", text(check.is_some().then_some(root).flatten()));
    let (cert, key) = identity.unzip();
    set("clientCert", text(cert));
    set("clientKey", text(key));
    set("mode", settings.mode.name().into());
    Ok(plan.into())
}
