//! `claim_next_many` on the native store: its checks (`checks.rs`), then `many.rs`'s
//! `claim_next_many`, written once for every client (the waits that cannot deadlock are
//! explained there).

use super::store::PgStore;
use super::{checks, many};
use crate::error::Result;
use crate::outcome::ClaimedJob;

impl PgStore {
    pub(super) fn claim_next_many_on(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        n: usize,
        now: f64,
        ttl: f64,
    ) -> Result<Vec<ClaimedJob>> {
        let window = checks::claim_next_many(queues, owner, n, now, ttl)?;
        let queues = queues.map(<[&str]>::to_vec);
        self.run("claim_next_many", async |wire| {
            many::claim_next_many(wire, queues, owner, n, window).await
        })
    }
}
