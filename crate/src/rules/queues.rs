//! The checks of queues and priorities (docs/contract.md section 11), made before any storage
//! access on every backend: a queue name is non-empty text without U+0000, a queue list holds 1
//! to [`MAX_QUEUES`] names. A priority is any `i64`; its range is the readers' to check.

use crate::error::{Error, Result};

/// The queue a job joins when `enqueue` names none, and the queue of every job written by a
/// program that knows only the `jobs` table.
///
/// ```
/// assert_eq!(leasefence::DEFAULT_QUEUE, "default");
/// ```
pub const DEFAULT_QUEUE: &str = "default";

/// The most queue names one `claim_next` takes. Each named queue costs the claim a few index
/// probes (docs/decisions/queues-priorities.md), so the list is bounded.
///
/// ```
/// assert_eq!(leasefence::MAX_QUEUES, 64);
/// ```
pub const MAX_QUEUES: usize = 64;

/// The longest queue name, in bytes.
pub(crate) const MAX_QUEUE_NAME: usize = 200;

/// A queue name: 1 to 200 bytes of text, no U+0000.
pub(crate) fn check_queue(argument: &'static str, queue: &str) -> Result<()> {
    if queue.is_empty() {
        return Err(Error::invalid(
            argument,
            "is an empty queue name: name a queue, or leave it out for \"default\"",
        ));
    }
    if queue.len() > MAX_QUEUE_NAME {
        return Err(Error::invalid(
            argument,
            format!(
                "is a queue name of {} bytes, longer than the {MAX_QUEUE_NAME} allowed",
                queue.len()
            ),
        ));
    }
    if queue.contains('\0') {
        return Err(Error::invalid(
            argument,
            "contains the character U+0000, which no queue name may hold",
        ));
    }
    Ok(())
}

/// An optional queue name (`enqueue`'s `queue`, `stats`' `queue`).
pub(crate) fn check_optional_queue(argument: &'static str, queue: Option<&str>) -> Result<()> {
    queue.map_or(Ok(()), |queue| check_queue(argument, queue))
}

/// `claim_next`'s `queues`: absent means every queue; given, 1 to [`MAX_QUEUES`] valid names.
pub(crate) fn check_queues<S: AsRef<str>>(queues: Option<&[S]>) -> Result<()> {
    let Some(queues) = queues else {
        return Ok(());
    };
    if queues.is_empty() {
        return Err(Error::invalid(
            "queues",
            "is an empty list: name at least one queue, or leave it out for every queue",
        ));
    }
    if queues.len() > MAX_QUEUES {
        return Err(Error::invalid(
            "queues",
            format!(
                "names {} queues, more than the {MAX_QUEUES} one claim takes",
                queues.len()
            ),
        ));
    }
    queues
        .iter()
        .try_for_each(|queue| check_queue("queues", queue.as_ref()))
}

/// A claim candidate's rank: higher priority first, then earlier `until`, then older (smaller
/// insertion number). `true` when `a` is claimed before `b`. Written once for every backend
/// that compares candidates of several queues.
pub(crate) fn claimed_before(a: (i64, f64, i64), b: (i64, f64, i64)) -> bool {
    let (pa, ua, sa) = a;
    let (pb, ub, sb) = b;
    if pa != pb {
        return pa > pb;
    }
    if ua != ub {
        return ua < ub;
    }
    sa < sb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_are_checked() {
        assert!(check_queue("queue", "mail").is_ok());
        assert!(check_queue("queue", "").is_err());
        assert!(check_queue("queue", "a\0b").is_err());
        assert!(check_queue("queue", &"q".repeat(MAX_QUEUE_NAME)).is_ok());
        assert!(check_queue("queue", &"q".repeat(MAX_QUEUE_NAME + 1)).is_err());
    }

    #[test]
    fn queue_lists_are_one_to_the_bound() {
        assert!(check_queues::<&str>(None).is_ok());
        assert!(check_queues::<&str>(Some(&[])).is_err());
        let many: Vec<String> = (0..=MAX_QUEUES).map(|i| format!("q{i}")).collect();
        assert!(check_queues(Some(&many[..MAX_QUEUES])).is_ok());
        assert!(check_queues(Some(&many)).is_err());
        assert!(check_queues(Some(&["ok", ""])).is_err());
    }

    #[test]
    fn priority_beats_until_beats_age() {
        assert!(claimed_before((1, 9.0, 9), (0, 0.0, 0)));
        assert!(claimed_before((0, 1.0, 9), (0, 2.0, 0)));
        assert!(claimed_before((0, 1.0, 1), (0, 1.0, 2)));
        assert!(!claimed_before((0, 1.0, 2), (0, 1.0, 1)));
    }
}
