//! The fence guard's statements on a PostgreSQL database, for every client (the native
//! `guard::postgres`, Node's `FenceGuard`): its table, and the check inside the writer's
//! transaction (docs/contract.md section 8, part 2).

use super::wire::{Sql, Wire};
use crate::error::Result;
use crate::guard::Guarded;
use crate::outcome::Fence;

/// The guard's table, made where missing (in the session's current schema).
pub(crate) const TABLE: &str =
    "CREATE TABLE IF NOT EXISTS leasefence_guard(key TEXT PRIMARY KEY, fence BIGINT NOT NULL)";

/// Creates the guard's table if it is missing.
pub(crate) async fn install(wire: &mut impl Wire) -> Result<()> {
    wire.batch("guard", TABLE).await
}

/// How many rows this transaction wrote to the guard's table so far: a guarded write reads it
/// after its check and after your statements, and refuses them when it moved (they may write
/// anything of yours, but not the fences).
#[cfg_attr(not(web), allow(dead_code))]
pub(crate) async fn writes(wire: &mut impl Wire) -> Result<Option<i64>> {
    wire.run("guard", Sql::GuardWrites, vec![])
        .await?
        .one("guard")?
        .opt_int("guard", 0)
}

/// The refusal of statements that wrote the guard's table.
#[cfg_attr(not(web), allow(dead_code))]
pub(crate) fn refused_writes() -> crate::Error {
    crate::Error::invalid(
        "statements",
        "guarded statements may not write the guard's table leasefence_guard (it holds the \
         fences every writer is checked against); nothing was committed",
    )
}

/// The guard's check inside an open transaction: records `fence` for `key` when it is at least
/// the highest accepted, else [`Guarded::Refused`] with the current one. The key's row stays
/// locked until the transaction ends, so writers for one key take turns.
pub(crate) async fn accept(wire: &mut impl Wire, key: &str, fence: Fence) -> Result<Guarded<()>> {
    let accepted = wire
        .run("guard", Sql::GuardAccept, vec![key.into(), fence.into()])
        .await?;
    if accepted.first().is_some() {
        return Ok(Guarded::Accepted(()));
    }
    let current = wire
        .run("guard", Sql::GuardCurrent, vec![key.into()])
        .await?
        .one("guard")?
        .int("guard", 0)?;
    Ok(Guarded::Refused { current })
}
