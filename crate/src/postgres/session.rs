//! One live PostgreSQL connection ([`Session`]): connecting, the session settings (lock
//! timeout, durability), the schema check on first use, the prepared statements, and dropping
//! the connection when it is lost so that the next call connects again.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::failure::{connection_lost, is_transient, postgres_error, refused_for_good};
use super::native_wire::{ClientWire, Statements};
use super::schema::{lock_timeout_setting, set_up};
use super::tls;
use crate::async_leases::ready;
use crate::error::{Error, Result};

/// One live connection, set up and with its statements prepared.
pub(super) struct Session {
    pub(super) client: Client,
    pub(super) stmts: Statements,
    /// The `lock_timeout` value of [`SESSION_SETTINGS`], as sent at connect.
    pub(super) lock_timeout: String,
    /// The names of the statements the store prepared on this connection ([`Statements`]), as
    /// the server listed them at connect: a fenced write checks that none of them was dropped.
    pub(super) own_statements: Vec<String>,
    /// Set when something this session cannot undo happened to it (a fenced statement
    /// deallocated the prepared statements, say): the session is dropped after the call, and
    /// the next call connects again.
    pub(super) tainted: bool,
}

impl Session {
    /// This connection lent to one operation, with its prepared statements.
    pub(super) fn wire(&mut self) -> ClientWire<'_> {
        ClientWire::prepared(&mut self.client, &self.stmts)
    }
}

/// Where and how to connect, and the live session if there is one: everything of a
/// [`PgStore`](super::PgStore) but its operations.
pub(super) struct Link {
    pub(super) config: Config,
    /// The TLS connector, `None` for `sslmode=disable`.
    pub(super) tls: Option<MakeRustlsConnect>,
    /// The URL's `sslmode`, for messages.
    pub(super) ssl_mode: tls::SslMode,
    pub(super) label: String,
    pub(super) lock_timeout: Duration,
    /// What one job may carry (section 12), as the store was opened with.
    pub(super) limits: crate::Limits,
    pub(super) session: Mutex<Option<Session>>,
}

/// A failure of `operation` on a connection: retryable unless the server refused who we are
/// (authentication, an unknown database).
pub(super) fn failure(operation: &'static str, source: postgres::Error) -> Error {
    let disconnected =
        !refused_for_good(&source) && (connection_lost(&source) || is_transient(&source));
    postgres_error(operation, source, disconnected)
}

impl Link {
    /// A new bare connection with the link's settings and TLS (no session settings, no schema
    /// check): the store's session and the wake-up listener (`listen.rs`) start from it.
    pub(super) fn connect(&self, operation: &'static str) -> Result<Client> {
        let connected = match &self.tls {
            Some(tls) => self.config.connect(tls.clone()),
            None => self.config.connect(NoTls),
        };
        connected.map_err(|source| match tls::refused_by_tls(&source, self.ssl_mode) {
            // Connecting again cannot change a certificate.
            Some(problem) => Error::Open {
                path: self.label.clone(),
                problem,
            },
            None => failure(operation, source),
        })
    }

    /// A link with this one's settings and no connection yet (claim_many's lanes).
    pub(super) fn unconnected_twin(&self) -> Link {
        Link {
            config: self.config.clone(),
            tls: self.tls.clone(),
            ssl_mode: self.ssl_mode,
            label: self.label.clone(),
            lock_timeout: self.lock_timeout,
            limits: self.limits,
            session: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Session>> {
        self.session.lock().unwrap_or_else(|poisoned| {
            // A call panicked mid-way: its connection is in an unknown state; start afresh.
            self.session.clear_poison();
            let mut guard = poisoned.into_inner();
            *guard = None;
            guard
        })
    }

    /// Runs `work` on the live session, connecting first when there is none. A client error
    /// that leaves the connection unusable drops the session (the next call connects again)
    /// and is reported as `disconnected`.
    pub(super) fn with_session<T>(
        &self,
        operation: &'static str,
        work: impl FnOnce(&mut Session) -> Result<T>,
    ) -> Result<T> {
        let mut guard = self.lock();
        if guard.as_ref().is_some_and(|s| s.client.is_closed()) {
            // The client already knows the socket is gone: nothing was sent on it, so
            // connecting again now is safe.
            *guard = None;
        }
        let session = match guard.as_mut() {
            Some(session) => session,
            None => guard.insert(self.open_session(operation)?),
        };
        let result = work(session);
        let closed = session.client.is_closed();
        let tainted = session.tainted;
        match result {
            Err(Error::Postgres {
                operation,
                source: crate::error::PostgresError(crate::error::PgFailure::Client(source)),
                ..
            }) => {
                let lost = closed || connection_lost(&source);
                // A statement of the store's that the server no longer has (a fenced write's
                // statements deallocated it): this session cannot serve again; the next call
                // connects anew. The error itself is what it is.
                let unprepared = source.code() == Some(&SqlState::INVALID_SQL_STATEMENT_NAME);
                if lost || tainted || unprepared {
                    *guard = None;
                }
                Err(postgres_error(operation, source, lost))
            }
            other => {
                if tainted {
                    *guard = None;
                }
                other
            }
        }
    }

    /// Connects, sets the session up, makes sure the schema is there, prepares the statements.
    /// Failures are reported as failures of `operation`, the call that needed the connection.
    fn open_session(&self, operation: &'static str) -> Result<Session> {
        let failed = |source: postgres::Error| failure(operation, source);
        let mut client = self.connect(operation)?;
        let lock_timeout = lock_timeout_setting(self.lock_timeout);
        ready(set_up(
            &mut ClientWire::bare(&mut client),
            &lock_timeout,
            &self.label,
        ))
        .map_err(|err| match err {
            // Classified again with the client in hand: the connection may be gone.
            Error::Postgres {
                source: crate::error::PostgresError(crate::error::PgFailure::Client(source)),
                ..
            } => failed(source),
            other => other,
        })?;
        let stmts = Statements::prepare(&mut client).map_err(failed)?;
        // A simple query, so that it is not itself one of the statements counted.
        let own_statements = client
            .simple_query("SELECT name FROM pg_prepared_statements WHERE NOT from_sql")
            .map_err(failed)?
            .iter()
            .filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => row.get(0).map(String::from),
                _ => None,
            })
            .collect();
        Ok(Session {
            client,
            stmts,
            lock_timeout,
            own_statements,
            tainted: false,
        })
    }
}
