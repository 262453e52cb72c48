//! A PostgreSQL schema of one test's own, for the `#[ignore]`d PostgreSQL variants of the worker
//! tests (`scripts/postgres.sh` runs them with a server in `LEASEFENCE_PG_URL`).

use std::sync::atomic::{AtomicUsize, Ordering};

use postgres::NoTls;

static SCHEMAS: AtomicUsize = AtomicUsize::new(0);

/// A fresh schema, dropped with everything in it when the value is dropped; `url` works in it.
pub struct PgSchema {
    pub base: String,
    pub name: String,
    pub url: String,
}

impl PgSchema {
    /// Panics with how to get a server when `LEASEFENCE_PG_URL` is unset.
    pub fn new(test: &str) -> PgSchema {
        let base = std::env::var("LEASEFENCE_PG_URL")
            .ok()
            .filter(|url| !url.is_empty())
            .unwrap_or_else(|| {
                panic!("{test} needs LEASEFENCE_PG_URL: run `bash scripts/postgres.sh`")
            });
        let name = format!(
            "lf_{test}_{}_{}",
            std::process::id(),
            SCHEMAS.fetch_add(1, Ordering::SeqCst)
        );
        let mut admin = postgres::Client::connect(&base, NoTls).expect("connect to the server");
        // Identifiers cannot be bound; this one is made above from fixed characters.
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
            ))
            .unwrap();
        let url = with_param(&base, &format!("options=-csearch_path%3D{name}"));
        PgSchema { base, name, url }
    }

    /// A plain client working in this schema, for looking behind the store's back.
    pub fn admin(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, NoTls).unwrap()
    }

    /// The schema's URL naming the connections `application_name`, so that a test can find
    /// (and terminate) them.
    pub fn url_named(&self, application: &str) -> String {
        with_param(&self.url, &format!("application_name={application}"))
    }
}

/// `url` with one more query parameter.
pub fn with_param(url: &str, param: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{param}")
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.base, NoTls) {
            let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}
