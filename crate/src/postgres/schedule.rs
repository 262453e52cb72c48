//! Recurring jobs on PostgreSQL (docs/contract.md section 11): schedules in
//! `leasefence_schedules`, and `enqueue_due` as one transaction that enqueues each schedule's
//! due slots if missing (`ON CONFLICT DO NOTHING`, so racing callers add each job once) and moves
//! its `last` forward. The cron and slot rules are `rules/schedule.rs`, shared with SQLite.

use postgres::Row;

use super::failure::pg;
use super::session::Session;
use super::store::{check_text, PgStore};
use crate::error::Result;
use crate::rules::schedule::{check, check_name, due, now_seconds};
use crate::rules::DEFAULT_QUEUE;
use crate::schedule::{Missed, Schedule, StoredSchedule};

impl PgStore {
    pub(super) fn schedule_on(&self, schedule: &Schedule) -> Result<()> {
        check(schedule)?;
        if let Some(payload) = &schedule.payload {
            check_text("payload", payload)?;
        }
        check_text("cron", &schedule.cron)?;
        let queue = schedule.queue.as_deref().unwrap_or(DEFAULT_QUEUE);
        let priority = schedule.priority.unwrap_or(0);
        self.link.with_session("schedule", |session| {
            session
                .client
                .execute(
                    include_str!("sql/schedule_put.sql"),
                    &[
                        &schedule.name,
                        &schedule.cron,
                        &schedule.tz,
                        &queue,
                        &priority,
                        &schedule.payload,
                        &schedule.missed.as_str(),
                    ],
                )
                .map_err(pg("schedule"))
                .map(drop)
        })
    }

    pub(super) fn unschedule_on(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        self.link.with_session("unschedule", |session| {
            let removed = session
                .client
                .execute(include_str!("sql/schedule_delete.sql"), &[&name])
                .map_err(pg("unschedule"))?;
            Ok(removed == 1)
        })
    }

    pub(super) fn schedules_on(&self) -> Result<Vec<StoredSchedule>> {
        self.link.with_session("schedules", |session| {
            let rows = session
                .client
                .query(include_str!("sql/schedules.sql"), &[])
                .map_err(pg("schedules"))?;
            rows.iter()
                .map(stored)
                .collect::<std::result::Result<_, _>>()
                .map_err(pg("schedules"))
        })
    }

    pub(super) fn enqueue_due_on(&self, now: f64) -> Result<Vec<String>> {
        let now = now_seconds(now)?;
        self.link.with_session("enqueue_due", |session| {
            let Session { client, stmts, .. } = session;
            let mut tx = client.transaction().map_err(pg("enqueue_due"))?;
            let listed = tx
                .query(include_str!("sql/schedules.sql"), &[])
                .map_err(pg("enqueue_due"))?
                .iter()
                .map(stored)
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(pg("enqueue_due"))?;
            let mut added = Vec::new();
            for schedule in &listed {
                let Some((jobs, last)) = due(schedule, now) else {
                    continue;
                };
                for job in &jobs {
                    let until = job.run_at.unwrap_or(0.0);
                    let queue = job.queue_name();
                    let inserted: i64 = tx
                        .query_one(&stmts.enqueue, &[&job.job, &until, &job.payload, &queue])
                        .and_then(|row| row.try_get(0))
                        .map_err(pg("enqueue_due"))?;
                    if inserted != 1 {
                        continue;
                    }
                    let (queue, priority) = (job.queue_name(), job.priority.unwrap_or(0));
                    if queue != DEFAULT_QUEUE || priority != 0 {
                        tx.execute(
                            &stmts.set_queue,
                            &[&vec![job.job.as_str()], &vec![queue], &vec![priority]],
                        )
                        .map_err(pg("enqueue_due"))?;
                    }
                    added.push(job.job.clone());
                }
                tx.execute(
                    include_str!("sql/schedule_last.sql"),
                    &[&schedule.schedule.name, &last],
                )
                .map_err(pg("enqueue_due"))?;
            }
            tx.commit().map_err(pg("enqueue_due"))?;
            Ok(added)
        })
    }
}

/// One row of `sql/schedules.sql`.
fn stored(row: &Row) -> std::result::Result<StoredSchedule, postgres::Error> {
    let missed: String = row.try_get(6)?;
    Ok(StoredSchedule {
        schedule: Schedule {
            name: row.try_get(0)?,
            cron: row.try_get(1)?,
            tz: row.try_get(2)?,
            queue: Some(row.try_get(3)?),
            priority: Some(row.try_get(4)?),
            payload: row.try_get(5)?,
            missed: Missed::parse(&missed).unwrap_or_default(),
        },
        last: row.try_get(7)?,
    })
}
