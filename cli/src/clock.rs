//! Time on the command line: the wall clock the commands read when no `--now` is given (Unix
//! seconds), and the one reading of a number of seconds that options take.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, in Unix seconds (0 on a clock set before 1970).
pub(crate) fn wall_clock() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Longer than any wait an option sets (an hour): such a value is a mistake, most likely
/// milliseconds given for seconds.
const LONGEST: f64 = 3_600.0;

/// A number of seconds, `0` to an hour, as a duration (`--busy-timeout 0.25`).
pub(crate) fn seconds(text: &str) -> Result<Duration, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds (e.g. 10 or 0.25)"))?;
    if !(0.0..=LONGEST).contains(&value) {
        return Err(format!(
            "{text} is outside 0 to {LONGEST} seconds (an hour): give seconds, e.g. 10 or 0.25"
        ));
    }
    Ok(Duration::from_secs_f64(value))
}

/// A number of seconds above 0, to an hour (a timeout of 0 would refuse everything).
pub(crate) fn positive_seconds(text: &str) -> Result<Duration, String> {
    match seconds(text)? {
        zero if zero.is_zero() => Err(format!("`{text}`: give more than 0 seconds")),
        positive => Ok(positive),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_read_numbers_of_seconds_and_refuse_the_rest() {
        assert_eq!(seconds("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(seconds("10"), Ok(Duration::from_secs(10)));
        assert_eq!(seconds("0"), Ok(Duration::ZERO));
        for bad in ["-1", "NaN", "inf", "10ms", "", "3601", "60000"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
        assert!(positive_seconds("0").is_err());
        assert_eq!(positive_seconds("1.5"), Ok(Duration::from_millis(1500)));
    }
}
