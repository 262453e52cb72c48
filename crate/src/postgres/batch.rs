//! The batch operations on PostgreSQL (docs/contract.md section 10): each one transaction,
//! answered item by item exactly as the single operations would answer in list order, and each
//! one statement where it can be (`sql/*_many.sql`, the list bound as arrays and read back with
//! `unnest(...) WITH ORDINALITY`). `claim_next_many` is in `claim_batch.rs`.
//!
//! - `enqueue_many`: one `INSERT ... SELECT` of the first item of each id, `ON CONFLICT DO
//!   NOTHING`; a later item of an id already in the list answers `false`, as a second `enqueue`
//!   would.
//! - `renew_many` / `complete_many`: one `UPDATE ... FROM unnest(...)` for the whole list, which
//!   also reads the row of every lease it refused, so the reasons come in the same statement. A job
//!   listed twice cannot be written twice by one `UPDATE`, so the list runs in rounds: round `k`
//!   holds the `k`-th item of each job, and each round sees the ones before it (a completed job is
//!   `done` to its second completion, a renewed lease is still live to its second renewal). A list
//!   naming every job once is one round. A lease refused by a row that then explains no refusal
//!   (another transaction changed it in between) is written again, as the single operations do.

use std::collections::HashMap;

use postgres::types::ToSql;
use postgres::{Row, ToStatement, Transaction};

use super::failure::pg;
use super::session::Statements;
use super::store::{check_lease, check_text, PgStore, MAX_TRIES};
use crate::batch::{LeaseCompletion, NewJob};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::registry::WorkerBeat;
use crate::rules::batch::{check_batch, check_new_jobs};
use crate::rules::registry::check_beat;
use crate::rules::DEFAULT_QUEUE;
use crate::rules::{check_now, unexplained, why_write_refused, LeaseRow, LeaseWindow};

impl PgStore {
    pub(super) fn enqueue_many_on(&self, jobs: &[NewJob]) -> Result<Vec<bool>> {
        check_pg_jobs(jobs)?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        self.link.with_session("enqueue_many", |session| {
            // One statement, and when some job is in another queue or has a priority, a second
            // one in the same transaction.
            let mut tx = session.client.transaction().map_err(pg("enqueue_many"))?;
            let added = enqueue_rows(
                &mut tx,
                &session.stmts.enqueue_many,
                &session.stmts.set_queue,
                jobs,
            )?;
            tx.commit().map_err(pg("enqueue_many"))?;
            Ok(added)
        })
    }

    /// Contract `enqueue_many` inside the caller's own transaction (docs/contract.md section 11):
    /// the jobs commit when `tx` commits, with the caller's rows, and vanish when it rolls back.
    /// Runs the store's own `enqueue_many` SQL on `tx` in a savepoint (an error leaves `tx` as it
    /// was, still usable), answering each job as [`Leases::enqueue_many`](crate::Leases) does.
    /// The tables are found by `tx`'s `search_path`, so connect to the schema the store uses; they
    /// must exist already (any [`PgStore::connect`] to that schema made them), or the call is
    /// [`Error::InvalidArgument`] and writes nothing. Your own statements on `tx` are not
    /// restricted here: leave `jobs` and the `leasefence_*` tables to the library.
    ///
    /// ```no_run
    /// use leasefence::{NewJob, PgStore};
    /// let url = "postgres://localhost/shop";
    /// let store = PgStore::connect(url)?; // creates the tables on first use
    /// let mut app = postgres::Client::connect(url, postgres::NoTls).unwrap();
    /// let mut tx = app.transaction().unwrap();
    /// tx.execute("INSERT INTO orders(id) VALUES ($1)", &[&"o-1"]).unwrap();
    /// PgStore::enqueue_in(&mut tx, &[NewJob::new("ship-o-1")])?;
    /// tx.commit().unwrap(); // the order and its job, or neither
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn enqueue_in(tx: &mut Transaction<'_>, jobs: &[NewJob]) -> Result<Vec<bool>> {
        check_pg_jobs(jobs)?;
        let mut inner = tx.transaction().map_err(pg("enqueue_many"))?;
        let present: bool = inner
            .query_one(SCHEMA_PRESENT, &[])
            .and_then(|row| row.try_get(0))
            .map_err(pg("enqueue_many"))?;
        if !present {
            return Err(Error::invalid(
                "transaction",
                "its search_path does not lead to leasefence's tables (jobs, leasefence_order, \
                 leasefence_payloads and the trigger leasefence_track): connect a PgStore to \
                 this schema once (it creates them), or set the transaction's search_path to the \
                 store's schema",
            ));
        }
        let sql_enqueue: &str = include_str!("sql/enqueue_many.sql");
        let sql_set_queue: &str = include_str!("sql/set_queue.sql");
        let added = enqueue_rows(&mut inner, sql_enqueue, sql_set_queue, jobs)?;
        inner.commit().map_err(pg("enqueue_many"))?;
        Ok(added)
    }

    pub(super) fn renew_many_on(
        &self,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        self.renew_with_beat("renew_many", None, leases, now, ttl)
    }

    /// `Leases::heartbeat`: `renew_many`'s statement over the leases, then the beat, in one
    /// transaction.
    pub(super) fn heartbeat_on(
        &self,
        beat: &WorkerBeat,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        self.renew_with_beat("heartbeat", Some(beat), leases, now, ttl)
    }

    /// The leases renewed by `renew_many`'s statement, and the worker's beat if given, in one
    /// transaction; every argument checked first.
    fn renew_with_beat(
        &self,
        operation: &'static str,
        beat: Option<&WorkerBeat>,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        check_batch("leases", leases.len())?;
        let until = LeaseWindow::new(now, ttl)?.until();
        leases.iter().try_for_each(check_lease)?;
        if let Some(beat) = beat {
            check_beat(beat)?;
        }
        let items: Vec<&Lease> = leases.iter().collect();
        let beat_at = beat.map(|beat| (beat, ttl));
        self.write_many(
            operation,
            &items,
            now,
            beat_at,
            renew_rows(&items, now, until),
        )
    }

    pub(super) fn complete_many_on(
        &self,
        completions: &[LeaseCompletion],
        now: f64,
    ) -> Result<Vec<Outcome<()>>> {
        check_batch("leases", completions.len())?;
        check_now(now)?;
        for done in completions {
            check_lease(&done.lease)?;
            if let Some(result) = &done.result {
                check_text("result", result)?;
            }
        }
        let items: Vec<&Lease> = completions.iter().map(|done| &done.lease).collect();
        self.write_many("complete_many", &items, now, None, |tx, stmts, pending| {
            let (jobs, owners, fences) = lease_columns(&items, pending);
            let results: Vec<Option<&str>> = pending
                .iter()
                .map(|&i| completions[i].result.as_deref())
                .collect();
            let params: [&(dyn ToSql + Sync); 5] = [&jobs, &owners, &fences, &results, &now];
            tx.query(&stmts.complete_many, &params)
        })
    }

    /// A fenced write of every lease in one transaction (and a worker's beat before its commit, if
    /// given): `write` runs the operation's statement
    /// on the leases at the given positions (no job twice) and answers, per lease in that order,
    /// whether it was written and the row the statement found. Granted, or refused with the
    /// contract's reason for that row (`why_write_refused`, `now` for the live check).
    fn write_many(
        &self,
        operation: &'static str,
        leases: &[&Lease],
        now: f64,
        beat: Option<(&WorkerBeat, f64)>,
        mut write: impl FnMut(
            &mut Transaction<'_>,
            &Statements,
            &[usize],
        ) -> std::result::Result<Vec<Row>, postgres::Error>,
    ) -> Result<Vec<Outcome<()>>> {
        if leases.is_empty() && beat.is_none() {
            return Ok(Vec::new());
        }
        let rounds = rounds(leases.iter().map(|lease| lease.job.as_str()));
        self.link.with_session(operation, |session| {
            let mut tx = session.client.transaction().map_err(pg(operation))?;
            let mut answers: Vec<Option<Outcome<()>>> = vec![None; leases.len()];
            for round in rounds {
                let mut pending = round;
                let mut tries = 0;
                while !pending.is_empty() {
                    if tries == MAX_TRIES {
                        let job = &leases[pending[0]].job;
                        return Err(unexplained(operation, job, Some(MAX_TRIES)));
                    }
                    tries += 1;
                    let rows = write(&mut tx, &session.stmts, &pending).map_err(pg(operation))?;
                    let mut changed_since = Vec::new();
                    for row in rows {
                        let (position, written) = read_answer(&row, operation)?;
                        let index = *item_at(&mut pending, position, operation)?;
                        let answer = if written {
                            Some(Outcome::Granted(()))
                        } else {
                            let lease = lease_row(&row, operation)?;
                            why_write_refused(lease, leases[index], Some(now))
                                .map(Outcome::Rejected)
                        };
                        match answer {
                            Some(answer) => answers[index] = Some(answer),
                            // The row matches now: it changed after the UPDATE looked.
                            None => changed_since.push(index),
                        }
                    }
                    pending = changed_since;
                }
            }
            if let Some((beat, ttl)) = beat {
                super::registry::record_beat(&mut tx, beat, now, ttl).map_err(pg(operation))?;
            }
            tx.commit().map_err(pg(operation))?;
            answers
                .into_iter()
                .map(|answer| {
                    answer.ok_or_else(|| Error::Internal {
                        message: format!("{operation} answered no row for one of its leases"),
                    })
                })
                .collect()
        })
    }
}

/// `renew_many`'s statement over the leases at the positions given, as `write_many` runs it.
fn renew_rows<'a>(
    items: &'a [&'a Lease],
    now: f64,
    until: f64,
) -> impl FnMut(
    &mut Transaction<'_>,
    &Statements,
    &[usize],
) -> std::result::Result<Vec<Row>, postgres::Error>
       + 'a {
    move |tx, stmts, pending| {
        let (jobs, owners, fences) = lease_columns(items, pending);
        let params: [&(dyn ToSql + Sync); 5] = [&jobs, &owners, &fences, &now, &until];
        tx.query(&stmts.renew_many, &params)
    }
}

/// The positions of the list in rounds: round `k` holds the `k`-th item of each job, in list
/// order, so no round names a job twice, and running the rounds one after the other gives every
/// item the answer it would get after the items before it.
fn rounds<'a>(jobs: impl Iterator<Item = &'a str>) -> Vec<Vec<usize>> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (index, job) in jobs.enumerate() {
        let count = seen.entry(job).or_insert(0);
        if rounds.len() == *count {
            rounds.push(Vec::new());
        }
        rounds[*count].push(index);
        *count += 1;
    }
    rounds
}

/// The job, owner and fence columns of the leases at `positions`, bound as arrays.
fn lease_columns<'a>(
    leases: &[&'a Lease],
    positions: &[usize],
) -> (Vec<&'a str>, Vec<&'a str>, Vec<i64>) {
    let mut jobs = Vec::with_capacity(positions.len());
    let mut owners = Vec::with_capacity(positions.len());
    let mut fences = Vec::with_capacity(positions.len());
    for &i in positions {
        jobs.push(leases[i].job.as_str());
        owners.push(leases[i].owner.as_str());
        fences.push(leases[i].fence);
    }
    (jobs, owners, fences)
}

/// The first two columns of a `*_many.sql` answer row: the item's position (from 1) and
/// whether it was written.
fn read_answer(row: &Row, operation: &'static str) -> Result<(i64, bool)> {
    Ok((
        row.try_get(0).map_err(pg(operation))?,
        row.try_get(1).map_err(pg(operation))?,
    ))
}

/// The row the statement found for a refused lease (columns 2 to 6: owner, until, fence, done,
/// exists), `None` when the job does not exist.
fn lease_row(row: &Row, operation: &'static str) -> Result<Option<LeaseRow>> {
    let read = || -> std::result::Result<Option<LeaseRow>, postgres::Error> {
        if !row.try_get::<_, bool>(6)? {
            return Ok(None);
        }
        Ok(Some(LeaseRow {
            owner: row.try_get(2)?,
            until: row.try_get(3)?,
            fence: row.try_get(4)?,
            done: row.try_get::<_, i32>(5)? != 0,
        }))
    };
    read().map_err(pg(operation))
}

/// The item at a position the server answered (from 1): an error, never a panic, should the
/// server answer a position the list does not have.
fn item_at<'a, T>(items: &'a mut [T], position: i64, operation: &str) -> Result<&'a mut T> {
    let len = items.len();
    usize::try_from(position)
        .ok()
        .and_then(|p| p.checked_sub(1))
        .and_then(|i| items.get_mut(i))
        .ok_or_else(|| Error::Internal {
            message: format!("{operation} answered item {position} of a list of {len}"),
        })
}

/// Whether the tables and the trigger `enqueue_many` writes through are where `search_path`
/// leads: without the trigger a job would never be claimed.
const SCHEMA_PRESENT: &str = "SELECT to_regclass('jobs') IS NOT NULL \
    AND to_regclass('leasefence_order') IS NOT NULL \
    AND to_regclass('leasefence_payloads') IS NOT NULL \
    AND EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('jobs') \
                AND tgname = 'leasefence_track')";

/// The checks of `enqueue_many`'s list on PostgreSQL: the batch bounds and item values, and no
/// U+0000 in a job's text.
pub(super) fn check_pg_jobs(jobs: &[NewJob]) -> Result<()> {
    check_new_jobs(jobs)?;
    for job in jobs {
        check_text("job", &job.job)?;
        if let Some(payload) = &job.payload {
            check_text("payload", payload)?;
        }
    }
    Ok(())
}

/// `enqueue_many`'s writes on an open transaction, answered in order: `sql/enqueue_many.sql`,
/// then, for the jobs it inserted whose queue or priority is not the default, `sql/set_queue.sql`
/// (the trigger gives every new row the defaults). The statements come prepared on the store's
/// session, or as their text on a caller's transaction: the same SQL either way. The jobs arrive
/// checked ([`check_pg_jobs`]).
pub(super) fn enqueue_rows<E, Q>(
    tx: &mut Transaction<'_>,
    enqueue_many: &E,
    set_queue: &Q,
    jobs: &[NewJob],
) -> Result<Vec<bool>>
where
    E: ToStatement + ?Sized,
    Q: ToStatement + ?Sized,
{
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<&str> = jobs.iter().map(|job| job.job.as_str()).collect();
    let untils: Vec<f64> = jobs.iter().map(|job| job.run_at.unwrap_or(0.0)).collect();
    let payloads: Vec<Option<&str>> = jobs.iter().map(|job| job.payload.as_deref()).collect();
    // The queues, for the wake-up notifications (channels.sql).
    let queues: Vec<&str> = jobs.iter().map(|job| job.queue_name()).collect();
    let rows = tx
        .query(enqueue_many, &[&ids, &untils, &payloads, &queues])
        .map_err(pg("enqueue_many"))?;
    let mut added = vec![false; jobs.len()];
    for row in rows {
        let position: i64 = row.try_get(0).map_err(pg("enqueue_many"))?;
        *item_at(&mut added, position, "enqueue_many")? = true;
    }
    let placed: Vec<&NewJob> = jobs
        .iter()
        .zip(&added)
        .filter(|(job, &added)| {
            added && (job.queue_name() != DEFAULT_QUEUE || job.priority.unwrap_or(0) != 0)
        })
        .map(|(job, _)| job)
        .collect();
    if !placed.is_empty() {
        let names: Vec<&str> = placed.iter().map(|job| job.job.as_str()).collect();
        let queues: Vec<&str> = placed.iter().map(|job| job.queue_name()).collect();
        let priorities: Vec<i64> = placed.iter().map(|job| job.priority.unwrap_or(0)).collect();
        tx.execute(set_queue, &[&names, &queues, &priorities])
            .map_err(pg("enqueue_many"))?;
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_hold_each_job_once_in_list_order() {
        let jobs = ["a", "b", "a", "c", "a", "b"];
        assert_eq!(
            rounds(jobs.into_iter()),
            [vec![0, 1, 3], vec![2, 5], vec![4]]
        );
        assert_eq!(rounds(["x", "y"].into_iter()), [vec![0, 1]]);
        assert!(rounds(std::iter::empty()).is_empty());
    }

    #[test]
    fn a_position_outside_the_list_is_an_error() {
        let mut items = [1, 2];
        assert_eq!(*item_at(&mut items, 2, "op").unwrap(), 2);
        for bad in [0, 3, -1] {
            assert!(matches!(
                item_at(&mut items, bad, "op"),
                Err(Error::Internal { .. })
            ));
        }
    }
}
