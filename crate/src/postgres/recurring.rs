//! Recurring jobs and waking on PostgreSQL (docs/contract.md section 11), over a [`Wire`],
//! written once for every client: schedules in `leasefence_schedules`, `enqueue_due` as one
//! transaction that enqueues each schedule's due slots if missing (`ON CONFLICT DO NOTHING`, so
//! racing callers add each job once) and moves its `last` forward, and when the next job of some
//! queues falls due. The cron and slot rules are `rules/schedule.rs`, shared with SQLite.
//! Arguments arrive checked (`checks.rs`).

use super::ops::enqueue_for;
use super::wire::{in_transaction, Row, Sql, Value, Wire};
use crate::error::Result;
use crate::rules::schedule::due;
use crate::rules::DEFAULT_QUEUE;
use crate::schedule::{Missed, Schedule, StoredSchedule};

/// Stores `schedule`, replacing one of the same name but keeping its `last`.
pub(crate) async fn schedule(wire: &mut impl Wire, schedule: &Schedule) -> Result<()> {
    let params = vec![
        schedule.name.as_str().into(),
        schedule.cron.as_str().into(),
        schedule.tz.as_deref().into(),
        schedule.queue.as_deref().unwrap_or(DEFAULT_QUEUE).into(),
        schedule.priority.unwrap_or(0).into(),
        schedule.payload.as_deref().into(),
        schedule.missed.as_str().into(),
    ];
    wire.run("schedule", Sql::SchedulePut, params)
        .await
        .map(drop)
}

/// Removes the schedule `name`; whether there was one.
pub(crate) async fn unschedule(wire: &mut impl Wire, name: &str) -> Result<bool> {
    let answer = wire
        .run("unschedule", Sql::ScheduleDelete, vec![name.into()])
        .await?;
    Ok(answer.changed == 1)
}

/// Every schedule, by name.
pub(crate) async fn schedules(
    wire: &mut impl Wire,
    operation: &'static str,
) -> Result<Vec<StoredSchedule>> {
    let answer = wire.run(operation, Sql::Schedules, Vec::new()).await?;
    answer
        .rows
        .iter()
        .map(|row| stored(row, operation))
        .collect()
}

/// Enqueues every schedule's due slots at `now` (whole seconds) that are missing; the ids added.
pub(crate) async fn enqueue_due(wire: &mut impl Wire, now: i64) -> Result<Vec<String>> {
    const OP: &str = "enqueue_due";
    in_transaction(wire, OP, async |wire| {
        let listed = schedules(wire, OP).await?;
        let mut added = Vec::new();
        for schedule in &listed {
            let Some((jobs, last)) = due(schedule, now) else {
                continue;
            };
            for job in &jobs {
                if enqueue_for(wire, OP, job).await? {
                    added.push(job.job.clone());
                }
            }
            let params = vec![schedule.schedule.name.as_str().into(), last.into()];
            wire.run(OP, Sql::ScheduleLast, params).await?;
        }
        Ok(added)
    })
    .await
}

/// When the next job of `queues` (every queue when `None`) falls due: the smallest `until` of a
/// job not done, `None` when there is none.
pub(crate) async fn next_due(
    wire: &mut impl Wire,
    queues: Option<Vec<&str>>,
) -> Result<Option<f64>> {
    const OP: &str = "next_due";
    let row = wire
        .run(OP, Sql::NextDue, vec![Value::from(queues)])
        .await?
        .one(OP)?;
    row.opt_float(OP, 0)
}

/// One row of `sql/schedules.sql`.
fn stored(row: &Row, operation: &'static str) -> Result<StoredSchedule> {
    Ok(StoredSchedule {
        schedule: Schedule {
            name: row.text(operation, 0)?,
            cron: row.text(operation, 1)?,
            tz: row.opt_text(operation, 2)?,
            queue: Some(row.text(operation, 3)?),
            priority: Some(row.int(operation, 4)?),
            payload: row.opt_text(operation, 5)?,
            missed: Missed::parse(&row.text(operation, 6)?).unwrap_or_default(),
        },
        last: row.opt_int(operation, 7)?,
    })
}
