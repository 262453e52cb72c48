//! Recurring jobs (docs/contract.md section 11): a [`Schedule`] names a 5-field cron pattern, read
//! in a time zone, and the job each of its slots becomes. The operations are
//! [`Leases`](crate::Leases)' `schedule`, `unschedule`, `schedules` and `enqueue_due`; the cron
//! and slot rules, the same on every backend and runtime, are in `rules/schedule.rs`.

use serde::Serialize;

/// Which slots [`enqueue_due`](crate::Leases::enqueue_due) enqueues after a time without any
/// call (a downtime): only the latest (the default), or every one missed since the last slot
/// enqueued, at most [`MAX_MISSED_SLOTS`] of them (the latest ones).
///
/// ```
/// use leasefence::{Missed, Schedule};
/// assert_eq!(Schedule::new("report", "0 6 * * *").missed, Missed::Latest);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Missed {
    /// Only the latest slot at or before `now`; the ones before it are skipped.
    #[default]
    Latest,
    /// Every slot after the last one enqueued, up to `now` (at most [`MAX_MISSED_SLOTS`]).
    All,
}

impl Missed {
    /// The protocol's spelling: `"latest"` or `"all"`.
    ///
    /// ```
    /// assert_eq!(leasefence::Missed::All.as_str(), "all");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Missed::Latest => "latest",
            Missed::All => "all",
        }
    }

    /// The option read back from its spelling; `None` for anything else.
    ///
    /// ```
    /// assert_eq!(leasefence::Missed::parse("all"), Some(leasefence::Missed::All));
    /// assert_eq!(leasefence::Missed::parse("every"), None);
    /// ```
    pub fn parse(text: &str) -> Option<Missed> {
        match text {
            "latest" => Some(Missed::Latest),
            "all" => Some(Missed::All),
            _ => None,
        }
    }
}

/// The most slots of one schedule that one `enqueue_due` enqueues with [`Missed::All`]: after a
/// longer downtime the oldest missed slots are skipped, so one call stays one short transaction.
///
/// ```
/// assert_eq!(leasefence::MAX_MISSED_SLOTS, 1024);
/// ```
pub const MAX_MISSED_SLOTS: usize = crate::MAX_BATCH;

/// A recurring job: every slot of `cron` (minute, hour, day of month, month, day of week, read
/// in `tz`, UTC when `None`) becomes the job `name@YYYY-MM-DDTHH:MM:SSZ` (the slot in UTC), with
/// `run_at` the slot and this schedule's queue, priority and payload.
///
/// ```
/// use leasefence::{LeaseStore, Leases, Schedule};
/// let store = LeaseStore::open_in_memory()?;
/// store.schedule(&Schedule::new("report", "0 6 * * *").tz("Europe/Paris").queue("reports"))?;
/// // 2026-01-05 09:00 UTC: the latest slot is 06:00 in Paris, 05:00 UTC.
/// assert_eq!(store.enqueue_due(1_767_603_600.0)?, ["report@2026-01-05T05:00:00Z"]);
/// assert!(store.enqueue_due(1_767_603_660.0)?.is_empty());
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    /// The schedule's name (1 to 200 bytes, no U+0000); its jobs' ids start with it.
    pub name: String,
    /// A 5-field cron pattern: `minute hour day-of-month month day-of-week` (lists, ranges,
    /// steps, month and day names; a day matches when either day field does, as in Vixie cron).
    pub cron: String,
    /// The IANA time zone the pattern is read in (`"America/New_York"`); `None` is UTC.
    pub tz: Option<String>,
    /// The queue of its jobs; `None` is [`DEFAULT_QUEUE`](crate::DEFAULT_QUEUE).
    pub queue: Option<String>,
    /// The priority of its jobs; `None` is 0.
    pub priority: Option<i64>,
    /// The payload of its jobs.
    pub payload: Option<String>,
    /// Which missed slots `enqueue_due` enqueues after a downtime.
    pub missed: Missed,
}

impl Schedule {
    /// A schedule in UTC, in the default queue, with priority 0, no payload, latest slot only.
    ///
    /// ```
    /// assert_eq!(leasefence::Schedule::new("tick", "*/5 * * * *").tz, None);
    /// ```
    pub fn new(name: impl Into<String>, cron: impl Into<String>) -> Self {
        Schedule {
            name: name.into(),
            cron: cron.into(),
            tz: None,
            queue: None,
            priority: None,
            payload: None,
            missed: Missed::Latest,
        }
    }

    /// Read the pattern in the IANA time zone `tz`.
    ///
    /// ```
    /// let s = leasefence::Schedule::new("r", "0 9 * * 1").tz("Asia/Tokyo");
    /// assert_eq!(s.tz.as_deref(), Some("Asia/Tokyo"));
    /// ```
    pub fn tz(mut self, tz: impl Into<String>) -> Self {
        self.tz = Some(tz.into());
        self
    }

    /// Its jobs join `queue`.
    ///
    /// ```
    /// assert_eq!(leasefence::Schedule::new("r", "0 9 * * *").queue("q").queue.as_deref(), Some("q"));
    /// ```
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Its jobs have `priority`.
    ///
    /// ```
    /// assert_eq!(leasefence::Schedule::new("r", "0 9 * * *").priority(3).priority, Some(3));
    /// ```
    pub fn priority(mut self, priority: i64) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Its jobs carry `payload`.
    ///
    /// ```
    /// let s = leasefence::Schedule::new("r", "0 9 * * *").payload("{}");
    /// assert_eq!(s.payload.as_deref(), Some("{}"));
    /// ```
    pub fn payload(mut self, payload: impl Into<String>) -> Self {
        self.payload = Some(payload.into());
        self
    }

    /// Which missed slots to enqueue after a downtime ([`Missed::All`]: every one).
    ///
    /// ```
    /// use leasefence::{Missed, Schedule};
    /// assert_eq!(Schedule::new("r", "0 9 * * *").missed(Missed::All).missed, Missed::All);
    /// ```
    pub fn missed(mut self, missed: Missed) -> Self {
        self.missed = missed;
        self
    }
}

/// A stored schedule, as [`schedules`](crate::Leases::schedules) lists it: the schedule (queue
/// and priority filled in with their defaults) and `last`, its latest slot enqueued so far (Unix
/// seconds; `None` before the first). In the protocol and JavaScript one flat object:
/// `{"name", "cron", "tz", "queue", "priority", "payload", "missed", "last"}`.
///
/// ```
/// use leasefence::{LeaseStore, Leases, Schedule};
/// let store = LeaseStore::open_in_memory()?;
/// store.schedule(&Schedule::new("tick", "*/5 * * * *"))?;
/// let listed = store.schedules()?;
/// assert_eq!((listed[0].schedule.name.as_str(), listed[0].last), ("tick", None));
/// assert_eq!(listed[0].schedule.queue.as_deref(), Some("default"));
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredSchedule {
    /// The schedule as stored.
    #[serde(flatten)]
    pub schedule: Schedule,
    /// The latest slot enqueued so far, Unix seconds; `None` before the first.
    pub last: Option<i64>,
}
