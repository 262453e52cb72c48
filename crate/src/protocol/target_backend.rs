//! [`TargetBackend`]: the protocol's backend on a file path or a `postgres://` URL, opened on first
//! use.

use super::Backend;
use crate::error::{Error, Result};
use crate::leases::Leases;
use crate::sqlite::LeaseStore;

/// A [`Backend`] on any target [`open`](crate::open) accepts: an SQLite file path or a
/// `postgres://` URL. Opens it on first use (retrying on the next request if that fails, so a
/// batch keeps serving) and runs `claim_many` on real threads, one connection per owner. What
/// `leasefence --db` uses.
///
/// ```
/// use leasefence::protocol::{respond, TargetBackend};
/// let dir = tempfile::tempdir().unwrap();
/// let mut backend = TargetBackend::new(dir.path().join("q.db"), leasefence::OpenOptions::new());
/// assert_eq!(respond(&mut backend, r#"{"op":"enqueue","job":"j"}"#).to_json(), r#"{"value":true}"#);
/// ```
pub struct TargetBackend {
    target: std::path::PathBuf,
    options: crate::OpenOptions,
    opened: Option<Opened>,
}

enum Opened {
    Sqlite(LeaseStore),
    Other(Box<dyn Leases>),
}

impl TargetBackend {
    /// A backend for `target` (a file path or a `postgres://` URL); nothing is opened yet.
    ///
    /// ```
    /// let b = leasefence::protocol::TargetBackend::new("postgres://localhost/q", Default::default());
    /// # let _ = b;
    /// ```
    pub fn new(target: impl Into<std::path::PathBuf>, options: crate::OpenOptions) -> Self {
        TargetBackend {
            target: target.into(),
            options,
            opened: None,
        }
    }

    fn open(&mut self) -> Result<&Opened> {
        let opened = match self.opened.take() {
            Some(opened) => opened,
            None => match self.target.to_str().filter(|t| crate::is_postgres_url(t)) {
                Some(_) => Opened::Other(crate::open_with(&self.target, &self.options)?),
                None => Opened::Sqlite(self.options.open(&self.target)?),
            },
        };
        Ok(self.opened.insert(opened))
    }
}

impl Backend for TargetBackend {
    fn store(&mut self) -> Result<&LeaseStore> {
        match self.open()? {
            Opened::Sqlite(store) => Ok(store),
            Opened::Other(store) => Err(Error::invalid(
                "store",
                format!("{store:?} is not an SQLite file; use Backend::leases"),
            )),
        }
    }

    fn leases(&mut self) -> Result<&dyn Leases> {
        Ok(match self.open()? {
            Opened::Sqlite(store) => store,
            Opened::Other(store) => store.as_ref(),
        })
    }
}
