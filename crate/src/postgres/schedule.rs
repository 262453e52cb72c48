//! Recurring jobs on the native store: the checks (`checks.rs`), then `recurring.rs`, written
//! once for every client, on the session.

use super::store::PgStore;
use super::{checks, recurring};
use crate::error::Result;
use crate::rules::schedule::{check_name, now_seconds};
use crate::schedule::{Schedule, StoredSchedule};

impl PgStore {
    pub(super) fn schedule_on(&self, schedule: &Schedule) -> Result<()> {
        checks::schedule(schedule)?;
        self.run("schedule", async |wire| {
            recurring::schedule(wire, schedule).await
        })
    }

    pub(super) fn unschedule_on(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        self.run("unschedule", async |wire| {
            recurring::unschedule(wire, name).await
        })
    }

    pub(super) fn schedules_on(&self) -> Result<Vec<StoredSchedule>> {
        self.run("schedules", async |wire| {
            recurring::schedules(wire, "schedules").await
        })
    }

    pub(super) fn enqueue_due_on(&self, now: f64) -> Result<Vec<String>> {
        let now = now_seconds(now)?;
        self.run("enqueue_due", async |wire| {
            recurring::enqueue_due(wire, now).await
        })
    }
}
