//! The time and ttl checks of docs/contract.md section 2, made once per call: a checked
//! [`LeaseWindow`] is what the backends' operations take, so they never check `now` and `ttl`
//! again (a `claim_many` checks them once for all its owners).

use crate::error::{Error, Result};

/// A checked lease: `now` is finite, and `until = now + ttl` is finite and later than `now`.
/// Only [`LeaseWindow::new`] makes one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LeaseWindow {
    now: f64,
    until: f64,
}

impl LeaseWindow {
    /// Checks `now` and `ttl`: rejects a time that is NaN or infinite, a ttl that is not a
    /// finite positive number, and a lease end that overflows or is lost to rounding.
    pub(crate) fn new(now: f64, ttl: f64) -> Result<Self> {
        check_now(now)?;
        if !ttl.is_finite() || ttl <= 0.0 {
            return Err(Error::invalid(
                "ttl",
                format!("must be a finite number of seconds greater than 0, got {ttl}"),
            ));
        }
        let until = now + ttl;
        if !until.is_finite() {
            return Err(Error::invalid(
                "ttl",
                format!("now + ttl ({now} + {ttl}) overflows; use a smaller now or ttl"),
            ));
        }
        if until <= now {
            // A ttl lost to rounding (1e-9 s at now = 1.7e9, any ttl below one unit in the last
            // place of now) would grant a lease that is over before it starts: a burnt fence and
            // a token that is stale on arrival. Same effect as ttl = 0, so the same answer.
            return Err(Error::invalid(
                "ttl",
                format!(
                    "now + ttl == now at this magnitude ({now:?} + {ttl:?}): the lease would end \
                     as it starts; use a larger ttl or smaller time values"
                ),
            ));
        }
        Ok(LeaseWindow { now, until })
    }

    /// The caller's time the lease starts at.
    pub(crate) fn now(&self) -> f64 {
        self.now
    }

    /// The lease end, `now + ttl`.
    pub(crate) fn until(&self) -> f64 {
        self.until
    }
}

/// Rejects a time that is NaN or infinite.
pub(crate) fn check_now(now: f64) -> Result<()> {
    if now.is_finite() {
        Ok(())
    } else {
        Err(Error::invalid(
            "now",
            format!("must be a finite number of seconds, got {now}"),
        ))
    }
}

/// Rejects a time argument other than `now` (`run_at`, `retry_at`) that is NaN or infinite;
/// `None` (no time given) passes.
pub(crate) fn check_time(argument: &'static str, time: Option<f64>) -> Result<()> {
    match time {
        Some(time) if !time.is_finite() => Err(Error::invalid(
            argument,
            format!("must be a finite number of seconds (or null), got {time}"),
        )),
        _ => Ok(()),
    }
}

/// [`LeaseWindow::new`]'s checks alone, answering the lease end (the protocol's validation).
pub(crate) fn lease_end(now: f64, ttl: f64) -> Result<f64> {
    LeaseWindow::new(now, ttl).map(|window| window.until)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_in_the_contract_order() {
        assert_eq!(LeaseWindow::new(1.0, 2.0).unwrap().until(), 3.0);
        let argument = |now: f64, ttl: f64| match LeaseWindow::new(now, ttl) {
            Err(Error::InvalidArgument { argument, .. }) => argument,
            other => panic!("{other:?}"),
        };
        assert_eq!(argument(f64::NAN, 0.0), "now");
        assert_eq!(argument(0.0, 0.0), "ttl");
        assert_eq!(argument(f64::MAX, f64::MAX), "ttl");
        assert_eq!(argument(1.7e9, 1e-9), "ttl");
    }

    #[test]
    fn other_times_must_be_finite_when_given() {
        assert!(check_time("run_at", None).is_ok());
        assert!(check_time("run_at", Some(-5.0)).is_ok());
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            match check_time("retry_at", Some(bad)) {
                Err(Error::InvalidArgument { argument, .. }) => assert_eq!(argument, "retry_at"),
                other => panic!("{other:?}"),
            }
        }
    }
}
