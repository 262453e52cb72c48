//! Opening a store by target: a file path means SQLite, a `postgres://` URL PostgreSQL. The
//! one place that knows both backends.

#[cfg(not(web))]
use crate::error::Result;
#[cfg(not(web))]
use crate::leases::Leases;
pub use crate::rules::target::is_postgres_url;

/// How a target is named in messages and logs: a file by its path as given, a PostgreSQL server
/// by its settings (user, hosts, ports, database), never its password.
///
/// ```
/// assert_eq!(
///     leasefence::target_label("postgres://app:se/cret@db:5432/queue"),
///     "postgres://app@db:5432/queue"
/// );
/// assert_eq!(leasefence::target_label("queue.db"), "queue.db");
/// ```
pub fn target_label(target: impl AsRef<std::path::Path>) -> String {
    let target = target.as_ref();
    match target.to_str().filter(|t| is_postgres_url(t)) {
        Some(url) => crate::rules::target::url_label(url),
        None => target.display().to_string(),
    }
}

/// Opens the store named by `target` with the default [`OpenOptions`](crate::OpenOptions): a
/// file path means an SQLite file (created if missing), a `postgres://` or `postgresql://` URL
/// means a PostgreSQL server (feature `postgres`; the `jobs` table and its companions are created
/// in the connection's current schema if missing).
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let store = leasefence::open(dir.path().join("queue.db"))?;
/// assert!(store.enqueue("job")?);
/// assert_eq!(store.claim("job", "me", 0.0, 30.0)?.granted(), Some(1));
/// # Ok::<(), leasefence::Error>(())
/// ```
#[cfg(not(web))]
pub fn open(target: impl AsRef<std::path::Path>) -> Result<Box<dyn Leases>> {
    open_with(target, &crate::OpenOptions::new())
}

/// [`open`] with options. For SQLite they are used as by
/// [`OpenOptions::open`](crate::OpenOptions::open); on PostgreSQL the busy timeout becomes the
/// session's `lock_timeout` and the connect timeout (unless the URL sets `connect_timeout`), and
/// the journal and locking options, which are SQLite's, do not apply.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let options = leasefence::OpenOptions::new().busy_timeout(std::time::Duration::from_secs(2));
/// let store = leasefence::open_with(dir.path().join("queue.db"), &options)?;
/// assert_eq!(store.state("nothing")?, None);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[cfg(not(web))]
pub fn open_with(
    target: impl AsRef<std::path::Path>,
    options: &crate::OpenOptions,
) -> Result<Box<dyn Leases>> {
    let target = target.as_ref();
    match target.to_str().filter(|t| is_postgres_url(t)) {
        Some(url) => open_postgres(url, options),
        None => Ok(Box::new(options.open(target)?)),
    }
}

#[cfg(all(feature = "postgres", not(web)))]
fn open_postgres(url: &str, options: &crate::OpenOptions) -> Result<Box<dyn Leases>> {
    Ok(Box::new(crate::postgres::PgStore::connect_with(
        url, options,
    )?))
}

#[cfg(all(not(feature = "postgres"), not(web)))]
fn open_postgres(url: &str, _options: &crate::OpenOptions) -> Result<Box<dyn Leases>> {
    Err(crate::Error::Open {
        path: crate::rules::target::url_label(url),
        problem: "this build of leasefence has no PostgreSQL support; build it with the \
                  `postgres` feature (on by default)"
            .into(),
    })
}
