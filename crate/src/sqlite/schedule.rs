//! Recurring jobs on SQLite (docs/contract.md section 11): schedules in `leasefence_schedules`,
//! and `enqueue_due` as one transaction that enqueues each schedule's due slots if missing and
//! moves its `last` forward. The cron and slot rules are `rules/schedule.rs`.

use rusqlite::params;

use super::ops;
use super::write_tx::{deferred, immediate};
use crate::error::{Error, Result};
use crate::rules::schedule::{check, check_name, due, now_seconds};
use crate::schedule::{Missed, Schedule, StoredSchedule};
use crate::sqlite::LeaseStore;
use crate::DEFAULT_QUEUE;

impl LeaseStore {
    /// Stores `schedule` (section 11), replacing one of the same name (its latest slot enqueued
    /// is kept). A bad name, pattern, time zone or queue is
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) and changes nothing.
    ///
    /// ```
    /// use leasefence::{LeaseStore, Schedule};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.schedule(&Schedule::new("digest", "0 8 * * MON").tz("Europe/Berlin"))?;
    /// assert_eq!(store.schedules()?.len(), 1);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn schedule(&self, schedule: &Schedule) -> Result<()> {
        check(schedule)?;
        let tx = immediate(&self.conn, "schedule")?;
        tx.prepare_cached(include_str!("sql/schedule_put.sql"))
            .and_then(|mut stmt| {
                stmt.execute(params![
                    schedule.name,
                    schedule.cron,
                    schedule.tz,
                    schedule.queue.as_deref().unwrap_or(DEFAULT_QUEUE),
                    schedule.priority.unwrap_or(0),
                    schedule.payload,
                    schedule.missed.as_str(),
                ])
            })
            .map_err(Error::storage("schedule"))?;
        tx.commit().map_err(Error::storage("schedule"))
    }

    /// Removes the schedule `name`: `true`, or `false` when there was none. Its jobs stay.
    ///
    /// ```
    /// use leasefence::{LeaseStore, Schedule};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.schedule(&Schedule::new("tick", "* * * * *"))?;
    /// assert!(store.unschedule("tick")?);
    /// assert!(!store.unschedule("tick")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn unschedule(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        let tx = immediate(&self.conn, "unschedule")?;
        let removed = tx
            .prepare_cached(include_str!("sql/schedule_delete.sql"))
            .and_then(|mut stmt| stmt.execute(params![name]))
            .map_err(Error::storage("unschedule"))?;
        tx.commit().map_err(Error::storage("unschedule"))?;
        Ok(removed == 1)
    }

    /// Every stored schedule, by name, with its latest slot enqueued.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// assert!(store.schedules()?.is_empty());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn schedules(&self) -> Result<Vec<StoredSchedule>> {
        let tx = deferred(&self.conn, "schedules")?;
        let listed = read_schedules(&tx, "schedules")?;
        tx.commit().map_err(Error::storage("schedules"))?;
        Ok(listed)
    }

    /// Enqueues every schedule's due slot at `now` in one transaction and answers the job ids
    /// it added (section 11); a slot's job that exists already is neither added nor answered.
    ///
    /// ```
    /// use leasefence::{LeaseStore, Schedule};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.schedule(&Schedule::new("hourly", "0 * * * *"))?;
    /// assert_eq!(store.enqueue_due(7300.0)?, ["hourly@1970-01-01T02:00:00Z"]);
    /// assert_eq!(store.state("hourly@1970-01-01T02:00:00Z")?.unwrap().until, 7200.0);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn enqueue_due(&self, now: f64) -> Result<Vec<String>> {
        let now = now_seconds(now)?;
        // The common tick has nothing due: found by reading alone, without the write lock every
        // other writer of the file would wait behind.
        let listed = read_schedules(&self.conn, "enqueue_due")?;
        if listed.iter().all(|stored| due(stored, now).is_none()) {
            return Ok(Vec::new());
        }
        let tx = immediate(&self.conn, "enqueue_due")?;
        let mut added = Vec::new();
        for stored in read_schedules(&tx, "enqueue_due")? {
            let Some((jobs, last)) = due(&stored, now) else {
                continue;
            };
            for job in &jobs {
                if ops::enqueue(&tx, job)? {
                    added.push(job.job.clone());
                }
            }
            tx.prepare_cached(include_str!("sql/schedule_last.sql"))
                .and_then(|mut stmt| stmt.execute(params![stored.schedule.name, last]))
                .map_err(Error::storage("enqueue_due"))?;
        }
        tx.commit().map_err(Error::storage("enqueue_due"))?;
        Ok(added)
    }
}

/// Every row of `leasefence_schedules`, by name.
fn read_schedules(
    conn: &rusqlite::Connection,
    operation: &'static str,
) -> Result<Vec<StoredSchedule>> {
    conn.prepare_cached(include_str!("sql/schedules.sql"))
        .and_then(|mut stmt| {
            stmt.query_map([], |row| {
                let missed: String = row.get(6)?;
                Ok(StoredSchedule {
                    schedule: Schedule {
                        name: row.get(0)?,
                        cron: row.get(1)?,
                        tz: row.get(2)?,
                        queue: Some(row.get(3)?),
                        priority: Some(row.get(4)?),
                        payload: row.get(5)?,
                        missed: Missed::parse(&missed).unwrap_or_default(),
                    },
                    last: row.get(7)?,
                })
            })?
            .collect()
        })
        .map_err(Error::storage(operation))
}
