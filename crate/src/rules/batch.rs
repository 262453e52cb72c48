//! The checks of the batch operations (docs/contract.md section 10), made before any storage
//! access on every backend: a list too long or a bad item refuses the whole call.

use crate::batch::{NewJob, MAX_BATCH};
use crate::error::{Error, Result};
use crate::rules::check_time;
use crate::rules::queues::check_optional_queue;

/// A list of at most [`MAX_BATCH`] items.
pub(crate) fn check_batch(argument: &'static str, len: usize) -> Result<()> {
    if len > MAX_BATCH {
        return Err(Error::invalid(
            argument,
            format!("holds {len} items, more than the {MAX_BATCH} one batch takes: split it"),
        ));
    }
    Ok(())
}

/// `claim_next_many`'s `n`: 1 to [`MAX_BATCH`].
pub(crate) fn check_claim_count(n: usize) -> Result<()> {
    if n == 0 || n > MAX_BATCH {
        return Err(Error::invalid(
            "n",
            format!("must be between 1 and {MAX_BATCH} jobs to claim, got {n}"),
        ));
    }
    Ok(())
}

/// `enqueue_many`'s jobs: the list's length and every job's `run_at` and `queue`.
pub(crate) fn check_new_jobs(jobs: &[NewJob]) -> Result<()> {
    check_batch("jobs", jobs.len())?;
    jobs.iter().try_for_each(check_new_job)
}

/// One job to enqueue: its `run_at` and `queue` (a priority is any `i64`).
pub(crate) fn check_new_job(job: &NewJob) -> Result<()> {
    check_time("run_at", job.run_at)?;
    check_optional_queue("queue", job.queue.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_up_to_the_bound_pass_and_longer_ones_name_the_argument() {
        assert!(check_batch("leases", MAX_BATCH).is_ok());
        let err = check_batch("leases", MAX_BATCH + 1).unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidArgument {
                argument: "leases",
                ..
            }
        ));
        assert!(err.to_string().contains("split it"), "{err}");
    }

    #[test]
    fn a_claim_count_is_one_to_the_bound() {
        assert!(check_claim_count(0).is_err());
        assert!(check_claim_count(1).is_ok());
        assert!(check_claim_count(MAX_BATCH).is_ok());
        assert!(check_claim_count(MAX_BATCH + 1).is_err());
    }

    #[test]
    fn one_bad_run_at_refuses_the_list() {
        let jobs = [NewJob::new("a"), NewJob::new("b").run_at(f64::NAN)];
        assert!(matches!(
            check_new_jobs(&jobs),
            Err(Error::InvalidArgument {
                argument: "run_at",
                ..
            })
        ));
    }
}
