//! [`PgStore`]: the contract's operations on PostgreSQL, each a conditional `UPDATE` on the
//! store's session, with the reason read afterwards and the order decided by
//! [`crate::rules`]; `claim_many` through the shared race harness ([`crate::race`]).

use std::sync::Mutex;
use std::time::Duration;

use postgres::{Config, Row};

use super::failure::pg;
use super::native_wire::ClientWire;
use super::operations::{self, Connections};
use super::ops;
use super::session::Link;
use super::tls;
use crate::async_leases::ready;
use crate::call::{Call, Reply};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::leases::Leases;
use crate::options::OpenOptions;
use crate::outcome::{Fence, Outcome};
use crate::rules::fenced::{FencedHandle, Finish};
use crate::rules::queues::check_queues;
use crate::rules::{claim_many_window, target::url_label, LeaseRow, LeaseWindow};

/// How many connections `claim_many` opens at most: the owners are spread over them.
/// PostgreSQL serves 100 connections by default, shared by every worker.
///
/// ```
/// assert!(leasefence::CLAIM_MANY_CONNECTIONS <= 100);
/// ```
pub const CLAIM_MANY_CONNECTIONS: usize = 16;

/// A lease store on a PostgreSQL server: the whole contract through [`Leases`], on one
/// connection that is opened again after it is lost.
///
/// Open it with [`open`](crate::open) (`postgres://` or `postgresql://` URL) or
/// [`PgStore::connect`]. The tables are created in the connection's current schema (the first
/// existing schema of its `search_path`; choose one with `?options=-csearch_path%3Dqueue`).
/// Calls from several threads on one store take turns on its connection; give each worker its
/// own store for parallelism.
///
/// TLS follows libpq's `sslmode` and `sslrootcert` (`prefer` by default). Across machines use
/// `verify-full`, which checks that the server holds a certificate for the URL's host, signed
/// by the authority in `sslrootcert`:
///
/// ```no_run
/// use leasefence::Leases;
/// let store = leasefence::PgStore::connect(
///     "postgres://app@db.internal/queue?sslmode=verify-full&sslrootcert=/etc/leasefence/ca.pem",
/// )?;
/// store.enqueue("invoice-42")?;
/// let fence = store.claim("invoice-42", "worker-a", 0.0, 30.0)?.granted();
/// # Ok::<(), leasefence::Error>(())
/// ```
pub struct PgStore {
    pub(super) link: Link,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.link.label)
            .finish()
    }
}

pub(super) use super::checks::check_text;

/// The lease in a row of `SELECT owner, until, fence, done FROM jobs ...`, if there is a row.
pub(super) fn lease_of(row: Option<Row>, operation: &'static str) -> Result<Option<LeaseRow>> {
    row.map(|row| {
        Ok(LeaseRow {
            owner: row.try_get(0)?,
            until: row.try_get(1)?,
            fence: row.try_get(2)?,
            done: row.try_get::<_, i32>(3)? != 0,
        })
    })
    .transpose()
    .map_err(pg(operation))
}

impl PgStore {
    /// Connects to the server at `url` (`postgres://user:password@host:port/database?...`, or
    /// `postgresql://`), checks that the `jobs` table, if present, has exactly the contract's
    /// shape, and creates the tables if missing. Default [`OpenOptions`].
    ///
    /// ```no_run
    /// let store = leasefence::PgStore::connect("postgresql://localhost/queue")?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn connect(url: &str) -> Result<PgStore> {
        Self::connect_with(url, &OpenOptions::new())
    }

    /// [`PgStore::connect`] with options: the busy timeout is the session's `lock_timeout`
    /// (how long an operation waits for another transaction's row lock before failing with a
    /// retryable error) and, unless the URL sets `connect_timeout`, the connect timeout.
    ///
    /// ```no_run
    /// let options = leasefence::OpenOptions::new().busy_timeout(std::time::Duration::from_secs(2));
    /// let store = leasefence::PgStore::connect_with("postgres://localhost/queue", &options)?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn connect_with(url: &str, options: &OpenOptions) -> Result<PgStore> {
        let store = Self::configure(url, options)?;
        store.link.with_session("connect", |_| Ok(()))?;
        Ok(store)
    }

    /// Parses the URL; connects nothing yet.
    fn configure(url: &str, options: &OpenOptions) -> Result<PgStore> {
        let label = url_label(url);
        let refused = |problem: String| Error::Open {
            path: label.clone(),
            problem,
        };
        // The TLS parameters first: the client library knows neither verify-ca/verify-full
        // nor sslrootcert.
        let (url, settings) = tls::split_url(url).map_err(refused)?;
        let connector = tls::connector(&settings).map_err(refused)?;
        let mut config: Config = url.parse().map_err(|err| Error::Open {
            path: label.clone(),
            problem: format!(
                "not a usable PostgreSQL URL ({err}); write it as \
                 postgres://user:password@host:port/database"
            ),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.busy_timeout.max(Duration::from_secs(1)));
        }
        if config.get_application_name().is_none() {
            config.application_name("leasefence");
        }
        config.ssl_mode(tls::client_mode(settings.mode));
        Ok(PgStore {
            link: Link {
                config,
                tls: connector,
                ssl_mode: settings.mode,
                label,
                lock_timeout: options.busy_timeout,
                limits: options.limits,
                session: Mutex::new(None),
            },
        })
    }

    /// The server as a label: user, hosts, ports and database, never the password
    /// (`rules::target::url_label`).
    ///
    /// ```no_run
    /// let store = leasefence::PgStore::connect("postgres://app:secret@localhost/queue")?;
    /// assert_eq!(store.url(), "postgres://app@localhost/queue");
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn url(&self) -> &str {
        &self.link.label
    }

    /// A store with this one's settings and no connection yet (claim_many's lanes).
    fn unconnected_twin(&self) -> PgStore {
        PgStore {
            link: self.link.unconnected_twin(),
        }
    }

    /// Runs one operation of `ops.rs` or `many.rs` on the live session (connecting first if
    /// need be).
    pub(super) fn run<T>(
        &self,
        operation: &'static str,
        work: impl AsyncFnOnce(&mut ClientWire<'_>) -> Result<T>,
    ) -> Result<T> {
        self.link
            .with_session(operation, |session| ready(work(&mut session.wire())))
    }
}

/// The connection the operations (`operations.rs`) run on: the live session.
impl Connections for PgStore {
    type Wire<'w> = ClientWire<'w>;

    fn on_connection<T>(
        &self,
        operation: &'static str,
        work: impl AsyncFnOnce(&mut ClientWire<'_>) -> Result<T>,
    ) -> impl std::future::Future<Output = Result<T>> {
        std::future::ready(self.run(operation, work))
    }

    fn limits(&self) -> crate::Limits {
        self.link.limits
    }
}

/// Each call is `operations.rs`'s, driven to its end at once (the client is synchronous), but
/// `jobs`, `claim_many` (a race across connections), fenced writes (`fenced/`) and `enqueue_many`
/// with statements; and the watch (`listen.rs`).
impl Leases for PgStore {
    fn execute(&self, call: Call<'_>) -> Result<Reply> {
        match call {
            Call::Jobs => Ok(Reply::Jobs(
                self.run("jobs", async |wire| ops::jobs(wire).await)?,
            )),
            Call::ClaimMany {
                job,
                owners,
                now,
                ttl,
            } => {
                let window = claim_many_window(owners.len(), now, ttl)?;
                let owners = crate::call::texts(&owners);
                Ok(Reply::Fences(self.claim_race(&job, &owners, window)?))
            }
            Call::EnqueueMany { jobs, statements } if !statements.is_empty() => Ok(Reply::Bools(
                self.enqueue_many_statements(&jobs, &statements)?,
            )),
            Call::Fenced {
                lease,
                now,
                statements,
                finish,
            } => Ok(Reply::Outcome(self.fenced_statements(
                &lease,
                now,
                &statements,
                finish,
            )?)),
            call => ready(operations::execute(self, call)),
        }
    }

    fn limits(&self) -> crate::Limits {
        self.link.limits
    }

    /// A connection of its own `LISTEN`s on the channels of `queues` (`postgres/listen.rs`);
    /// enqueue, enqueue_many and revive notify them at commit.
    fn watch(
        &self,
        queues: Option<&[&str]>,
        wakeup: crate::wake::Wakeup,
    ) -> Result<Option<crate::wake::Watch>> {
        check_queues(queues)?;
        super::listen::listen(self.link.unconnected_twin(), queues, wakeup).map(Some)
    }

    fn fenced_with(
        &self,
        lease: &Lease,
        now: f64,
        finish: Finish,
        work: &mut dyn FnMut(&mut dyn FencedHandle) -> Result<()>,
    ) -> Result<Outcome<()>> {
        PgStore::fenced_with(self, lease, now, finish, |tx| work(tx))
    }
}

impl PgStore {
    /// Every owner's claim at once on its own connection (at most
    /// [`CLAIM_MANY_CONNECTIONS`]; more owners take turns on them), released together by a
    /// barrier so that they really race; answers in input order.
    fn claim_race(
        &self,
        job: &str,
        owners: &[&str],
        window: LeaseWindow,
    ) -> Result<Vec<Outcome<Fence>>> {
        check_text("job", job)?;
        for owner in owners {
            check_text("owner", owner)?;
        }
        crate::race::claim_race(
            owners,
            CLAIM_MANY_CONNECTIONS,
            || {
                let store = self.unconnected_twin();
                store.link.with_session("claim_many", |_| Ok(()))?;
                Ok(store)
            },
            |store, owner| ready(operations::claim_within(store, "claim", job, owner, window)),
        )
    }
}
