//! Listing jobs a page at a time: the query's checks and the cursor, once for every backend.
//! A cursor is the position of a page's last job in the page's order, written as text; callers
//! treat it as opaque, and it is checked when it comes back.

use crate::error::{Error, Result};
use crate::listing::{JobPage, JobQuery, JobStatus, JobSummary, QueueCounts, MAX_PAGE};
use crate::outcome::{JobCounts, JobState};

/// Where a page starts: the position of the last job of the previous page, in the page's order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cursor {
    /// Newest first: jobs enqueued before this insertion number.
    Before(i64),
    /// `until` order: jobs after this (`until`, insertion number).
    After(f64, i64),
}

impl Cursor {
    /// The first page's position in the order of `status`.
    pub(crate) fn start(status: Option<JobStatus>) -> Cursor {
        if status.is_some_and(JobStatus::by_until) {
            Cursor::After(f64::NEG_INFINITY, i64::MIN)
        } else {
            Cursor::Before(i64::MAX)
        }
    }

    /// The text of `next`.
    pub(crate) fn text(self) -> String {
        match self {
            Cursor::Before(seq) => format!("b{seq}"),
            // `{:?}` of an f64 reads back exactly.
            Cursor::After(until, seq) => format!("a{until:?}/{seq}"),
        }
    }

    /// Reads `after` for a query of `status`: a cursor this listing gave for that state's order.
    fn parse(text: &str, status: Option<JobStatus>) -> Result<Cursor> {
        let wrong = || cursor_error(text);
        let cursor = if let Some(seq) = text.strip_prefix('b') {
            Cursor::Before(seq.parse().map_err(|_| wrong())?)
        } else if let Some(rest) = text.strip_prefix('a') {
            let (until, seq) = rest.split_once('/').ok_or_else(wrong)?;
            let until: f64 = until.parse().map_err(|_| wrong())?;
            if until.is_nan() {
                return Err(wrong());
            }
            Cursor::After(until, seq.parse().map_err(|_| wrong())?)
        } else {
            return Err(wrong());
        };
        match (cursor, status.is_some_and(JobStatus::by_until)) {
            (Cursor::Before(_), false) | (Cursor::After(..), true) => Ok(cursor),
            _ => Err(wrong()),
        }
    }
}

fn cursor_error(text: &str) -> Error {
    Error::invalid(
        "after",
        format!(
            "is {text:?}, not the `next` of a page of this listing: pass the `next` the previous \
             page answered (with the same state), or leave it out for the first page"
        ),
    )
}

/// The error of a cursor that does not fit the query's order.
pub(crate) fn wrong_cursor(query: &JobQuery) -> Error {
    cursor_error(query.after.as_deref().unwrap_or(""))
}

/// Moves each queue's dead jobs out of its `done` count (the per-queue pass counts every done
/// job; the dead marks are counted apart). A queue the marks name but the pass did not see has
/// no job, so it is left out.
/// The queues end in byte order of their names on every backend (PostgreSQL's own order follows
/// its collation).
pub(crate) fn set_dead(queues: &mut [QueueCounts], dead: Vec<(String, u64)>) {
    queues.sort_by(|a, b| a.queue.cmp(&b.queue));
    for (queue, n) in dead {
        if let Some(q) = queues.iter_mut().find(|q| q.queue == queue) {
            q.counts.dead = n.min(q.counts.done);
            q.counts.done -= q.counts.dead;
        }
    }
}

/// A queue's counts from the per-queue pass's columns: queued, open but not due yet, of those
/// the leased ones, and closed (done, the dead among them until [`set_dead`] moves them).
pub(crate) fn queue_counts(
    queue: String,
    [queued, not_due, leased, closed]: [i64; 4],
) -> QueueCounts {
    let n = |count: i64| count.max(0) as u64;
    QueueCounts {
        queue,
        counts: JobCounts {
            queued: n(queued),
            scheduled: n(not_due).saturating_sub(n(leased)),
            leased: n(leased),
            done: n(closed),
            dead: 0,
        },
    }
}

/// The `until` range of an open state's page, from the cursor's `until` on: queued jobs are due
/// (`until <= now`), scheduled and leased ones are not (`until > now`, from the next float up so
/// that the index range starts there), told apart by whether an owner holds them
/// (`owner`: `None` either, `Some(true)` held).
pub(crate) fn until_range(status: JobStatus, from: f64, now: f64) -> (f64, f64, Option<bool>) {
    match status {
        JobStatus::Queued => (from, now, None),
        JobStatus::Scheduled => (from.max(now.next_up()), f64::INFINITY, Some(false)),
        _ => (from.max(now.next_up()), f64::INFINITY, Some(true)),
    }
}

/// A listed row as the page shows it: its state at `now` from the row and its dead mark.
pub(crate) fn summary(
    state: JobState,
    dead: bool,
    queue: String,
    priority: i64,
    failures: i64,
    now: f64,
) -> JobSummary {
    JobSummary {
        status: JobStatus::at(&state, dead, now),
        state,
        queue,
        priority,
        failures: failures.max(0) as u64,
    }
}

/// A query's checks, once for every backend: the limit, the queue name and the cursor.
pub(crate) fn check_query(query: &JobQuery) -> Result<Cursor> {
    if !(1..=MAX_PAGE).contains(&query.limit) {
        return Err(Error::invalid(
            "limit",
            format!("is {}: ask for 1 to {MAX_PAGE} jobs a page", query.limit),
        ));
    }
    crate::rules::queues::check_optional_queue("queue", query.queue.as_deref())?;
    match &query.after {
        None => Ok(Cursor::start(query.status)),
        Some(text) => Cursor::parse(text, query.status),
    }
}

/// Builds a page from the rows a backend read, `limit + 1` at most: the extra row only says
/// that a next page exists, and the last row kept gives its cursor.
pub(crate) fn page(mut rows: Vec<(JobSummary, i64)>, query: &JobQuery) -> JobPage {
    let more = rows.len() > query.limit;
    rows.truncate(query.limit);
    let next = match rows.last() {
        Some((last, seq)) if more => Some(
            if query.status.is_some_and(JobStatus::by_until) {
                Cursor::After(last.state.until, *seq)
            } else {
                Cursor::Before(*seq)
            }
            .text(),
        ),
        _ => None,
    };
    JobPage {
        jobs: rows.into_iter().map(|(job, _)| job).collect(),
        next,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back_what_they_wrote_and_refuse_the_rest() {
        let until = Cursor::After(1.0 / 3.0, 7);
        assert_eq!(
            Cursor::parse(&until.text(), Some(JobStatus::Leased)).unwrap(),
            until
        );
        let before = Cursor::Before(42);
        assert_eq!(Cursor::parse(&before.text(), None).unwrap(), before);
        assert_eq!(
            Cursor::parse(&before.text(), Some(JobStatus::Dead)).unwrap(),
            before
        );
        // A cursor of the other order, or anything else, is refused with the argument named.
        for (text, status) in [
            (until.text(), None),
            (before.text(), Some(JobStatus::Queued)),
            ("b".to_owned(), None),
            ("x1".to_owned(), None),
            ("aNaN/1".to_owned(), Some(JobStatus::Queued)),
            ("a1.5".to_owned(), Some(JobStatus::Queued)),
        ] {
            let err = Cursor::parse(&text, status).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidArgument {
                        argument: "after",
                        ..
                    }
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn limits_outside_one_to_max_page_are_refused() {
        for limit in [0, MAX_PAGE + 1] {
            let err = check_query(&JobQuery::new().limit(limit)).unwrap_err();
            assert!(matches!(
                err,
                Error::InvalidArgument {
                    argument: "limit",
                    ..
                }
            ));
        }
        assert!(check_query(&JobQuery::new().limit(MAX_PAGE)).is_ok());
        assert!(check_query(&JobQuery::new().queue("")).is_err());
    }
}
