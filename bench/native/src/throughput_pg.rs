//! The throughput section's PostgreSQL drains (`--pg-url`): the same `Worker::run_concurrent`
//! drain, in the same child process (`throughput-drain`), on leasefence's PostgreSQL backend.
//!
//! Every drain starts from the same state: the schema `lfbench_throughput` is dropped and made
//! again, filled through leasefence (`enqueue_many`, as the SQLite file is), vacuumed and
//! analyzed, and the server checkpointed, so that no background work of the fill lands in the
//! drain. The store's URL puts it in that schema and turns TLS off (`sslmode=disable`), as
//! bench/postgres does for its main figures.
//!
//! Its syncs are the server's: the delta of `pg_stat_wal.wal_sync` (every WAL fsync/fdatasync the
//! server made, by any of its processes: backends, WAL writer, checkpointer) across the drain.
//! A backend publishes its counts when it goes idle (at most once a second) and when it exits,
//! so each reading waits until no other client is connected and the count has held still for a
//! while. Data-file syncs (checkpoints) are not WAL syncs and are not in it.

use std::path::Path;
use std::time::{Duration, Instant};

use leasefence::NewJob;
use postgres::{Client, NoTls};

use crate::{job_id, Result};

/// The schema every PostgreSQL drain runs in, dropped and made again before each.
const SCHEMA: &str = "lfbench_throughput";

/// The server behind `--pg-url`, and a client on it that only reads (statistics and counts).
pub(crate) struct PgTarget {
    base: String,
    /// The store's URL: the drain's schema, no TLS.
    pub(crate) url: String,
    reader: Client,
    /// `SHOW server_version`.
    pub(crate) version: String,
}

impl PgTarget {
    /// Connects to `base` and checks that the server has `pg_stat_wal` (PostgreSQL 14 or later).
    pub(crate) fn connect(base: &str) -> Result<PgTarget> {
        let mut reader = Client::connect(base, NoTls).map_err(|e| {
            format!("throughput: cannot connect to --pg-url (start a server with scripts/postgres.sh): {e}")
        })?;
        let version: String = reader.query_one("SHOW server_version", &[])?.get(0);
        reader
            .query_one("SELECT wal_sync FROM pg_stat_wal", &[])
            .map_err(|e| {
                format!(
                    "throughput: PostgreSQL {version} has no pg_stat_wal.wal_sync ({e}); the sync \
                     count needs PostgreSQL 14 or later"
                )
            })?;
        let separator = if base.contains('?') { '&' } else { '?' };
        Ok(PgTarget {
            url: format!("{base}{separator}options=-csearch_path%3D{SCHEMA}&sslmode=disable"),
            base: base.to_string(),
            reader,
            version,
        })
    }

    /// A fresh schema with `jobs` jobs, vacuumed, analyzed and checkpointed; every connection it
    /// used is closed when it returns.
    pub(crate) fn fill(&mut self, jobs: usize) -> Result<()> {
        let mut setup = Client::connect(&self.base, NoTls)?;
        // An identifier cannot be bound; SCHEMA is a constant of fixed characters.
        setup.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA}"
        ))?;
        {
            let store = leasefence::open(&self.url)?;
            let new: Vec<NewJob> = (0..jobs).map(|i| NewJob::new(job_id(i))).collect();
            for chunk in new.chunks(leasefence::MAX_BATCH) {
                store.enqueue_many(chunk)?;
            }
        }
        // One statement each: VACUUM cannot run inside a multi-statement string.
        for quiet in [
            format!("VACUUM ANALYZE {SCHEMA}.jobs"),
            "CHECKPOINT".to_string(),
        ] {
            setup.batch_execute(&quiet)?;
        }
        Ok(())
    }

    /// The server's WAL syncs so far, once every other client has gone and the count holds
    /// still (a backend publishes its counts at the latest when it exits; the WAL writer on its
    /// next round, every 200 ms by default).
    pub(crate) fn settled_wal_syncs(&mut self) -> Result<i64> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let others: i64 = self
                .reader
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
                    &[],
                )?
                .get(0);
            if others == 0 {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "throughput: {others} other client(s) still connected to PostgreSQL after 30 s"
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut last = self.wal_syncs()?;
        let mut still = 0;
        while still < 3 {
            std::thread::sleep(Duration::from_millis(150));
            let now = self.wal_syncs()?;
            if now == last {
                still += 1;
            } else {
                still = 0;
                last = now;
            }
            if Instant::now() > deadline {
                return Err("throughput: pg_stat_wal.wal_sync did not settle within 30 s".into());
            }
        }
        Ok(last)
    }

    fn wal_syncs(&mut self) -> Result<i64> {
        // Each query is its own transaction, so each sees fresh statistics.
        Ok(self
            .reader
            .query_one("SELECT wal_sync FROM pg_stat_wal", &[])?
            .get(0))
    }

    /// The jobs done in the drain's schema.
    pub(crate) fn done(&mut self) -> Result<usize> {
        let done: i64 = self
            .reader
            .query_one(
                &format!("SELECT count(*) FROM {SCHEMA}.jobs WHERE done = $1"),
                &[&1i32],
            )?
            .get(0);
        Ok(usize::try_from(done)?)
    }

    /// What `Worker::open` takes.
    pub(crate) fn target(&self) -> &Path {
        Path::new(&self.url)
    }
}

impl Drop for PgTarget {
    fn drop(&mut self) {
        let _ = self
            .reader
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"));
    }
}
