//! The fence guard on a PostgreSQL database (see [the module notes](super)). The statements are
//! `postgres/guard.rs`'s, which Node's `FenceGuard` runs too.

use postgres::{Client, Transaction};

use super::Guarded;
use crate::async_leases::ready;
use crate::error::{Error, Result};
use crate::outcome::Fence;
use crate::postgres::guard;
use crate::postgres::native_wire::ClientWire;

fn failed(source: postgres::Error) -> Error {
    Error::Postgres {
        operation: "guard",
        disconnected: source.is_closed(),
        transient: false,
        refused_for_good: false,
        source: crate::error::PostgresError(crate::error::PgFailure::Client(source)),
    }
}

/// Creates the guard's table (`leasefence_guard`, in the current schema) if it is missing.
///
/// ```no_run
/// let mut client = postgres::Client::connect("postgres://localhost/ledger", postgres::NoTls).unwrap();
/// leasefence::guard::postgres::install(&mut client)?;
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn install(client: &mut Client) -> Result<()> {
    ready(guard::install(&mut ClientWire::bare(client)))
}

/// The guard's check inside your transaction: records `fence` for `key` when it is at least the
/// highest accepted, else [`Guarded::Refused`] with the current one. The key's row stays locked
/// until your transaction ends, so concurrent writers for one key take turns; do your write after
/// an accepted check and roll back on a refusal.
///
/// ```no_run
/// use leasefence::guard::{postgres as guard, Guarded};
/// let mut client = postgres::Client::connect("postgres://localhost/ledger", postgres::NoTls).unwrap();
/// let mut tx = client.transaction().unwrap();
/// if let Guarded::Accepted(()) = guard::accept(&mut tx, "invoice-42", 3)? {
///     tx.execute("UPDATE invoices SET sent = true WHERE id = $1", &[&"invoice-42"]).unwrap();
///     tx.commit().unwrap();
/// }
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn accept(tx: &mut Transaction<'_>, key: &str, fence: Fence) -> Result<Guarded<()>> {
    ready(guard::accept(&mut ClientWire::bare(tx), key, fence))
}

/// One transaction on `client`: the guard's check for `key` and `fence`, then `work`, then the
/// commit; on a refusal `work` never runs and nothing is written.
///
/// ```no_run
/// use leasefence::guard::postgres as guard;
/// let mut client = postgres::Client::connect("postgres://localhost/ledger", postgres::NoTls).unwrap();
/// guard::install(&mut client)?;
/// let written = guard::write(&mut client, "ledger", 4, |tx| {
///     tx.execute("INSERT INTO ledger(entry) VALUES ($1)", &[&"x"])
/// })?;
/// assert!(written.is_accepted());
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn write<T>(
    client: &mut Client,
    key: &str,
    fence: Fence,
    work: impl FnOnce(&mut Transaction<'_>) -> std::result::Result<T, postgres::Error>,
) -> Result<Guarded<T>> {
    let mut tx = client.transaction().map_err(failed)?;
    if let Guarded::Refused { current } = accept(&mut tx, key, fence)? {
        tx.rollback().map_err(failed)?;
        return Ok(Guarded::Refused { current });
    }
    let value = work(&mut tx).map_err(failed)?;
    tx.commit().map_err(failed)?;
    Ok(Guarded::Accepted(value))
}
