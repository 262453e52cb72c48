//! The rules of recurring jobs (docs/contract.md section 11), with no storage: checking a
//! schedule (its cron pattern through `croner`, its time zone through `jiff`'s bundled time zone
//! database, the same in every runtime), the slots due at `now`, and a slot's job id. Both
//! backends store schedules and enqueue what [`due`] answers, in one transaction.
//!
//! Daylight saving time: a slot is a wall-clock time of the schedule's zone. A time the clocks
//! skip (02:30 on the night they go forward) runs at the first instant after the gap (03:00); a
//! time they repeat (01:30 on the night they go back) runs once, at its first instant. Patterns
//! that run every hour or more often keep running through the repeated hour, whose instants are
//! different slots (decisions/recurring-jobs.md).

use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

use crate::batch::NewJob;
use crate::error::{Error, Result};
use crate::schedule::{Missed, Schedule, StoredSchedule, MAX_MISSED_SLOTS};

/// The longest schedule name, in bytes (as a queue name's).
const MAX_NAME: usize = 200;

/// A schedule's pattern, parsed, and the zone it is read in.
pub(crate) struct Pattern {
    cron: Cron,
    zone: TimeZone,
}

/// Checks every member of `schedule` and parses its pattern: `invalid_argument` for an empty or
/// too long name, a pattern that is not 5 valid fields or never matches, an unknown time zone, a
/// bad queue name.
pub(crate) fn check(schedule: &Schedule) -> Result<Pattern> {
    check_name(&schedule.name)?;
    super::queues::check_optional_queue("queue", schedule.queue.as_deref())?;
    pattern(&schedule.cron, schedule.tz.as_deref())
}

/// A schedule's name: 1 to 200 bytes of text, no U+0000.
pub(crate) fn check_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(
            "name",
            "is empty: name the schedule (its jobs' ids start with the name)",
        ));
    }
    if name.len() > MAX_NAME {
        return Err(Error::invalid(
            "name",
            format!(
                "is {} bytes, longer than the {MAX_NAME} allowed for a schedule name",
                name.len()
            ),
        ));
    }
    if name.contains('\0') {
        return Err(Error::invalid(
            "name",
            "contains the character U+0000, which no schedule name may hold",
        ));
    }
    Ok(())
}

/// Parses `cron` (exactly 5 fields) read in `tz` (UTC when `None`).
pub(crate) fn pattern(cron: &str, tz: Option<&str>) -> Result<Pattern> {
    let zone = match tz {
        None => TimeZone::UTC,
        Some(name) => TimeZone::get(name).map_err(|err| {
            Error::invalid(
                "tz",
                format!("is not a time zone this build knows ({err}); use an IANA name such as \"Europe/Paris\" or \"UTC\""),
            )
        })?,
    };
    let parser = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build();
    let cron_error = |why: String| {
        Error::invalid(
            "cron",
            format!("{cron:?} is not a 5-field cron pattern (minute hour day-of-month month day-of-week): {why}"),
        )
    };
    let parsed = parser
        .parse(cron)
        .map_err(|err| cron_error(err.to_string()))?;
    let pattern = Pattern { cron: parsed, zone };
    // A pattern that never matches (30 February) would make every enqueue_due search in vain.
    let start = Timestamp::UNIX_EPOCH.to_zoned(pattern.zone.clone());
    if pattern.cron.find_next_occurrence(&start, true).is_err() {
        return Err(cron_error("it never matches a date".into()));
    }
    Ok(pattern)
}

impl Pattern {
    /// The latest slot at or before `now` (Unix seconds), if there is one.
    pub(crate) fn at_or_before(&self, now: i64) -> Option<i64> {
        let now = Timestamp::from_second(now)
            .ok()?
            .to_zoned(self.zone.clone());
        self.cron
            .find_previous_occurrence(&now, true)
            .ok()
            .map(|slot: Zoned| slot.timestamp().as_second())
    }

    /// The slot just before `slot`, if there is one.
    fn before(&self, slot: i64) -> Option<i64> {
        let slot = Timestamp::from_second(slot)
            .ok()?
            .to_zoned(self.zone.clone());
        self.cron
            .find_previous_occurrence(&slot, false)
            .ok()
            .map(|slot: Zoned| slot.timestamp().as_second())
    }

    /// The first slot after `slot`, if there is one.
    // The native worker's rest uses it (next_slot); the wasm builds have no Rust worker.
    #[cfg_attr(web, allow(dead_code))]
    pub(crate) fn after(&self, slot: i64) -> Option<i64> {
        let slot = Timestamp::from_second(slot)
            .ok()?
            .to_zoned(self.zone.clone());
        self.cron
            .find_next_occurrence(&slot, false)
            .ok()
            .map(|slot: Zoned| slot.timestamp().as_second())
    }

    /// The slots to enqueue at `now` given `last`, the latest slot enqueued before: none when
    /// the latest slot at or before `now` was enqueued already; else that slot alone, or with
    /// [`Missed::All`] every slot after `last` up to it (the latest [`MAX_MISSED_SLOTS`]), in
    /// time order.
    pub(crate) fn slots(&self, missed: Missed, last: Option<i64>, now: i64) -> Vec<i64> {
        let Some(latest) = self.at_or_before(now) else {
            return Vec::new();
        };
        match last {
            Some(last) if last >= latest => Vec::new(),
            Some(last) if missed == Missed::All => {
                let mut slots = vec![latest];
                while slots.len() < MAX_MISSED_SLOTS {
                    match self.before(slots[slots.len() - 1]) {
                        Some(slot) if slot > last => slots.push(slot),
                        _ => break,
                    }
                }
                slots.reverse();
                slots
            }
            _ => vec![latest],
        }
    }
}

/// `now` as whole Unix seconds (rounded down), within the years jiff handles (-9999 to 9999).
pub(crate) fn now_seconds(now: f64) -> Result<i64> {
    super::check_now(now)?;
    let seconds = now.floor();
    let min = Timestamp::MIN.as_second() as f64;
    let max = Timestamp::MAX.as_second() as f64;
    if seconds < min || seconds > max {
        return Err(Error::invalid(
            "now",
            format!("{now} is outside the years -9999 to 9999 that schedules can be read in"),
        ));
    }
    Ok(seconds as i64)
}

/// The first slot of any of `stored` after `now` (Unix seconds, as `now` is read), when an idle
/// worker should wake to enqueue it; `None` when no schedule has one. Rows that no longer parse
/// are skipped, as in [`due`].
#[cfg_attr(web, allow(dead_code))]
pub(crate) fn next_slot(stored: &[StoredSchedule], now: f64) -> Option<f64> {
    let now = now_seconds(now).ok()?;
    stored
        .iter()
        .filter_map(|s| pattern(&s.schedule.cron, s.schedule.tz.as_deref()).ok())
        .filter_map(|pattern| pattern.after(now))
        .min()
        .map(|slot| slot as f64)
}

/// The id of the job of `name`'s slot: `name@YYYY-MM-DDTHH:MM:SSZ`, the slot in UTC.
///
/// The same slot always gets the same id, so enqueue-if-missing makes a slot's job exist once
/// however many callers enqueue it.
pub(crate) fn slot_job(name: &str, slot: i64) -> String {
    let at = Timestamp::from_second(slot)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| slot.to_string());
    format!("{name}@{at}")
}

/// What one stored schedule has due at `now`: the jobs to enqueue (in slot order) and the new
/// `last`, or `None` when nothing is due. A stored row that no longer parses (written by hand)
/// is skipped: it has nothing due, and `schedules` still shows it.
pub(crate) fn due(stored: &StoredSchedule, now: i64) -> Option<(Vec<NewJob>, i64)> {
    let schedule = &stored.schedule;
    let pattern = pattern(&schedule.cron, schedule.tz.as_deref()).ok()?;
    let slots = pattern.slots(schedule.missed, stored.last, now);
    let last = *slots.last()?;
    let jobs = slots
        .into_iter()
        .map(|slot| NewJob {
            job: slot_job(&schedule.name, slot),
            run_at: Some(slot as f64),
            payload: schedule.payload.clone(),
            queue: schedule.queue.clone(),
            priority: schedule.priority,
        })
        .collect();
    Some((jobs, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_second()
    }

    fn utc(slot: i64) -> String {
        Timestamp::from_second(slot).unwrap().to_string()
    }

    fn slots_after(p: &Pattern, from: &str, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut t = at(from);
        for _ in 0..n {
            t = p.after(t).unwrap();
            out.push(utc(t));
        }
        out
    }

    #[test]
    fn a_slot_in_the_spring_gap_runs_at_the_first_instant_after_it() {
        // America/New_York, 2026-03-08: 02:00 EST jumps to 03:00 EDT; 02:30 does not exist.
        let p = pattern("30 2 * * *", Some("America/New_York")).unwrap();
        assert_eq!(
            slots_after(&p, "2026-03-07T12:00:00Z", 3),
            [
                "2026-03-08T07:00:00Z", // 03:00 EDT, the gap's end
                "2026-03-09T06:30:00Z", // 02:30 EDT
                "2026-03-10T06:30:00Z"
            ]
        );
        // Looking back from any time after it finds the same slot, so enqueue_due agrees.
        assert_eq!(
            p.at_or_before(at("2026-03-08T07:00:00Z")),
            Some(at("2026-03-08T07:00:00Z"))
        );
        assert_eq!(
            p.at_or_before(at("2026-03-08T23:00:00Z")),
            Some(at("2026-03-08T07:00:00Z"))
        );
        assert_eq!(
            p.at_or_before(at("2026-03-08T06:59:59Z")),
            Some(at("2026-03-07T07:30:00Z"))
        );
    }

    #[test]
    fn a_repeated_wall_clock_time_runs_once_at_its_first_instant() {
        // America/New_York, 2026-11-01: 02:00 EDT goes back to 01:00 EST; 01:30 happens twice.
        let p = pattern("30 1 * * *", Some("America/New_York")).unwrap();
        assert_eq!(
            slots_after(&p, "2026-10-31T12:00:00Z", 2),
            ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"] // 01:30 EDT only, then 01:30 EST
        );
        // During the second 01:30 (06:30Z) the latest slot is still the first one.
        assert_eq!(
            p.at_or_before(at("2026-11-01T06:45:00Z")),
            Some(at("2026-11-01T05:30:00Z"))
        );
        let stored = StoredSchedule {
            schedule: Schedule::new("n", "30 1 * * *").tz("America/New_York"),
            last: Some(at("2026-11-01T05:30:00Z")),
        };
        assert!(due(&stored, at("2026-11-01T06:45:00Z")).is_none());
    }

    #[test]
    fn a_pattern_every_hour_runs_in_both_passes_of_a_repeated_hour() {
        let p = pattern("30 * * * *", Some("America/New_York")).unwrap();
        let slots = slots_after(&p, "2026-11-01T04:45:00Z", 3);
        assert_eq!(
            slots,
            [
                "2026-11-01T05:30:00Z",
                "2026-11-01T06:30:00Z",
                "2026-11-01T07:30:00Z"
            ]
        );
    }

    #[test]
    fn after_downtime_only_the_latest_slot_or_all_with_the_option() {
        let p = pattern("0 * * * *", None).unwrap();
        let last = Some(at("2026-01-01T00:00:00Z"));
        let now = at("2026-01-01T05:10:00Z");
        assert_eq!(
            p.slots(Missed::Latest, last, now),
            [at("2026-01-01T05:00:00Z")]
        );
        let all: Vec<String> = p
            .slots(Missed::All, last, now)
            .into_iter()
            .map(utc)
            .collect();
        assert_eq!(
            all,
            [
                "2026-01-01T01:00:00Z",
                "2026-01-01T02:00:00Z",
                "2026-01-01T03:00:00Z",
                "2026-01-01T04:00:00Z",
                "2026-01-01T05:00:00Z"
            ]
        );
        // A schedule never run before starts with its latest slot, whatever the option.
        assert_eq!(
            p.slots(Missed::All, None, now),
            [at("2026-01-01T05:00:00Z")]
        );
        // Bounded: a year of hourly slots missed gives the latest MAX_MISSED_SLOTS.
        let year = p.slots(Missed::All, last, at("2027-01-01T00:30:00Z"));
        assert_eq!(year.len(), MAX_MISSED_SLOTS);
        assert_eq!(year.last(), Some(&at("2027-01-01T00:00:00Z")));
        assert!(year.windows(2).all(|w| w[1] - w[0] == 3600));
    }

    #[test]
    fn slot_ids_name_the_slot_in_utc() {
        assert_eq!(
            slot_job("report", at("2026-03-08T07:00:00Z")),
            "report@2026-03-08T07:00:00Z"
        );
        assert_eq!(slot_job("r", 0), "r@1970-01-01T00:00:00Z");
    }

    #[test]
    fn bad_patterns_zones_and_names_are_invalid_arguments() {
        for (cron, tz) in [
            ("* * * *", None),
            ("0 0 * * * *", None),
            ("61 * * * *", None),
            ("0 0 30 2 *", None),
            ("hello", None),
            ("0 9 * * *", Some("Mars/Olympus")),
            ("0 9 * * *", Some("")),
        ] {
            let err = pattern(cron, tz)
                .err()
                .unwrap_or_else(|| panic!("{cron} {tz:?} accepted"));
            assert_eq!(err.code(), "invalid_argument", "{cron} {tz:?}");
        }
        assert!(check(&Schedule::new("", "0 9 * * *")).is_err());
        assert!(check(&Schedule::new("a\0b", "0 9 * * *")).is_err());
        assert!(check(&Schedule::new("x".repeat(201), "0 9 * * *")).is_err());
        assert!(check(&Schedule::new("r", "0 9 * * *").queue("")).is_err());
        assert!(check(&Schedule::new("r", "0 9 * * MON-FRI").tz("Asia/Tokyo")).is_ok());
        assert!(now_seconds(f64::NAN).is_err());
        assert!(now_seconds(1e300).is_err());
        assert_eq!(now_seconds(12.9).unwrap(), 12);
    }
}
