//! The fence guard: the check another store keeps so that a stale worker's write is refused there
//! too (docs/contract.md section 8, part 2).
//!
//! A lease's fence proves freshness only to the store that checks it. The guard carries that
//! check to a store the workers write to: a table `leasefence_guard(key, fence)` in that store,
//! where a write for `key` carrying fence F is accepted only if F is at least the highest fence
//! accepted for `key` so far, checked and recorded in the same transaction as the write. A lower
//! fence is refused with the current one, and the write does not happen.
//!
//! The key names the resource the write protects. Fences are comparable within one job only, so
//! keep one job per key (or put the job id in the key). An equal fence is accepted: the current
//! lease holder may write many times.
//!
//! - [`sqlite`]: on an SQLite file the other store's owner opens ([`SqliteGuard`]), or inside a
//!   transaction of their own ([`sqlite::accept`]);
//! - `postgres` (feature `postgres`): the same on a PostgreSQL database ([`postgres::accept`],
//!   [`postgres::write`]).
//!
//! The guard runs in *your* database, inside your transactions, so it takes the client types your
//! code already holds: a `rusqlite::Connection` / `Transaction`, a `postgres::Client` /
//! `Transaction`. These are the API's deliberate escape hatches to the database clients; use the
//! versions this crate depends on (rusqlite 0.43, postgres 0.19).
//!
//! For stores with conditional writes (S3, GCS, etcd) the same check is a recipe, not code: see
//! docs/fencing.md.

#[cfg(all(feature = "postgres", not(web)))]
pub mod postgres;
pub mod sqlite;

pub use sqlite::SqliteGuard;

use crate::outcome::Fence;

/// What the guard decided about one write.
///
/// ```
/// use leasefence::guard::Guarded;
/// let refused: Guarded<()> = Guarded::Refused { current: 7 };
/// assert_eq!(refused.accepted(), None);
/// assert_eq!(Guarded::Accepted(3).accepted(), Some(3));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Guarded<T> {
    /// The fence was at least the highest accepted: the write ran and committed; its value.
    Accepted(T),
    /// A higher fence was accepted for this key already: nothing was written.
    Refused {
        /// The highest fence accepted for the key.
        current: Fence,
    },
}

impl<T> Guarded<T> {
    /// The write's value when it was accepted.
    ///
    /// ```
    /// assert!(leasefence::guard::Guarded::Accepted(()).accepted().is_some());
    /// ```
    pub fn accepted(self) -> Option<T> {
        match self {
            Guarded::Accepted(value) => Some(value),
            Guarded::Refused { .. } => None,
        }
    }

    /// Whether the write was accepted.
    ///
    /// ```
    /// assert!(!leasefence::guard::Guarded::<()>::Refused { current: 2 }.is_accepted());
    /// ```
    pub fn is_accepted(&self) -> bool {
        matches!(self, Guarded::Accepted(_))
    }
}
