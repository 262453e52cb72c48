//! What one job may carry (docs/contract.md section 13): the largest payload, result and
//! failure error text a store accepts, set when it is opened, and how many failure records a
//! job keeps. Checked before anything is written, so a refused call changes nothing.

use crate::error::{Error, Result};

/// A job keeps at most this many failure records, its latest; `attempts` still counts every
/// claim (the fence), so nothing about the count is lost.
pub const MAX_FAILURE_RECORDS: usize = 100;

/// The largest payload, result and failure error text a store accepts, in bytes of UTF-8
/// (`0`: no limit). The defaults: 1 MiB, 1 MiB and 64 KiB. Set them with
/// [`OpenOptions::limits`](crate::OpenOptions::limits).
///
/// ```
/// use leasefence::{Leases, Limits, NewJob, OpenOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let store = OpenOptions::new()
///     .limits(Limits::default().payload(16))
///     .open(dir.path().join("queue.db"))?;
/// let err = store.enqueue_job(&NewJob::new("big").payload("x".repeat(17))).unwrap_err();
/// assert_eq!(err.code(), "invalid_argument");
/// assert!(err.to_string().contains("17 bytes"), "{err}");
/// assert_eq!(store.state("big")?, None); // nothing changed
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub(crate) payload: usize,
    pub(crate) result: usize,
    pub(crate) error: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            payload: 1 << 20,
            result: 1 << 20,
            error: 64 << 10,
        }
    }
}

impl Limits {
    /// The limits a caller gave, each one it left out the default: what the JavaScript and the
    /// component openers read from their options.
    #[cfg_attr(
        not(any(web, feature = "addon", feature = "component")),
        allow(dead_code)
    )]
    pub(crate) fn given_or_default(
        payload: Option<usize>,
        result: Option<usize>,
        error: Option<usize>,
    ) -> Self {
        let defaults = Limits::default();
        Limits {
            payload: payload.unwrap_or(defaults.payload),
            result: result.unwrap_or(defaults.result),
            error: error.unwrap_or(defaults.error),
        }
    }

    /// No limit on anything (each `0`): what a store without limits accepted.
    ///
    /// ```
    /// let none = leasefence::Limits::none();
    /// assert_eq!(none.payload_bytes(), 0);
    /// ```
    pub fn none() -> Self {
        Limits {
            payload: 0,
            result: 0,
            error: 0,
        }
    }

    /// The largest payload `enqueue` accepts, in bytes (`0`: no limit).
    ///
    /// ```
    /// let limits = leasefence::Limits::default().payload(4096);
    /// assert_eq!(limits.payload_bytes(), 4096);
    /// ```
    pub fn payload(mut self, bytes: usize) -> Self {
        self.payload = bytes;
        self
    }

    /// The largest result `complete` accepts, in bytes (`0`: no limit).
    ///
    /// ```
    /// let limits = leasefence::Limits::default().result(0);
    /// assert_eq!(limits.result_bytes(), 0);
    /// ```
    pub fn result(mut self, bytes: usize) -> Self {
        self.result = bytes;
        self
    }

    /// The largest error text `fail` accepts, in bytes (`0`: no limit).
    ///
    /// ```
    /// let limits = leasefence::Limits::default().error(1024);
    /// assert_eq!(limits.error_bytes(), 1024);
    /// ```
    pub fn error(mut self, bytes: usize) -> Self {
        self.error = bytes;
        self
    }

    /// The payload limit in bytes (`0`: none).
    ///
    /// ```
    /// assert_eq!(leasefence::Limits::default().payload_bytes(), 1 << 20);
    /// ```
    pub fn payload_bytes(&self) -> usize {
        self.payload
    }

    /// The result limit in bytes (`0`: none).
    ///
    /// ```
    /// assert_eq!(leasefence::Limits::default().result_bytes(), 1 << 20);
    /// ```
    pub fn result_bytes(&self) -> usize {
        self.result
    }

    /// The error text limit in bytes (`0`: none).
    ///
    /// ```
    /// assert_eq!(leasefence::Limits::default().error_bytes(), 64 << 10);
    /// ```
    pub fn error_bytes(&self) -> usize {
        self.error
    }

    pub(crate) fn check_payload(&self, payload: Option<&str>) -> Result<()> {
        within("payload", payload, self.payload)
    }

    pub(crate) fn check_result(&self, result: Option<&str>) -> Result<()> {
        within("result", result, self.result)
    }

    pub(crate) fn check_error(&self, error: Option<&str>) -> Result<()> {
        within("error", error, self.error)
    }

    /// Every job's payload (`enqueue_many`): one too big refuses the list.
    pub(crate) fn check_jobs(&self, jobs: &[crate::batch::NewJob]) -> Result<()> {
        jobs.iter()
            .try_for_each(|job| self.check_payload(job.payload.as_deref()))
    }

    /// Every completion's result (`complete_many`): one too big refuses the list.
    pub(crate) fn check_completions(&self, done: &[crate::batch::LeaseCompletion]) -> Result<()> {
        done.iter()
            .try_for_each(|done| self.check_result(done.result.as_deref()))
    }

    /// A fenced write's result, when it completes the job.
    pub(crate) fn check_finish(&self, finish: &super::fenced::Finish) -> Result<()> {
        match finish {
            super::fenced::Finish::Complete(result) => self.check_result(result.as_deref()),
            super::fenced::Finish::KeepLease => Ok(()),
        }
    }
}

/// `text` cut to at most `limit` bytes (`0`: no limit), keeping its end, where a command's or a
/// handler's error says what finally went wrong; the cut is marked and falls on a character
/// boundary. What the worker runtimes record as a failure's error text (the Rust runtime's: the
/// wasm builds have no worker of their own).
#[cfg_attr(web, allow(dead_code))]
pub(crate) fn keep_end(text: &str, limit: usize) -> std::borrow::Cow<'_, str> {
    if limit == 0 || text.len() <= limit {
        return text.into();
    }
    let marker = format!("[{} bytes cut] ", text.len());
    let room = limit.saturating_sub(marker.len());
    let mut start = text.len() - room;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("{marker}{}", &text[start..]).into()
}

fn within(argument: &'static str, text: Option<&str>, limit: usize) -> Result<()> {
    match text {
        Some(text) if limit != 0 && text.len() > limit => Err(Error::InvalidArgument {
            argument,
            message: format!(
                "is {} bytes, over this store's limit of {limit} bytes; store large data \
                 elsewhere and pass a reference to it, or open the store with a higher limit \
                 (Limits; 0 means no limit)",
                text.len()
            ),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_cut_to_its_end_within_the_limit() {
        assert_eq!(keep_end("short", 100), "short");
        assert_eq!(keep_end(&"x".repeat(500), 0).len(), 500);
        let long = format!("{}the real cause", "日".repeat(1000));
        let cut = keep_end(&long, 40);
        assert!(cut.len() <= 40, "{cut}");
        assert!(
            cut.starts_with("[3014 bytes cut] ") && cut.ends_with("the real cause"),
            "{cut}"
        );
    }

    #[test]
    fn a_text_at_the_limit_passes_and_one_byte_more_names_both_sizes() {
        let limits = Limits::default().result(10);
        assert!(limits.check_result(Some(&"r".repeat(10))).is_ok());
        assert!(limits.check_result(None).is_ok());
        let err = limits.check_result(Some(&"r".repeat(11))).unwrap_err();
        assert_eq!(err.code(), "invalid_argument");
        let text = err.to_string();
        assert!(
            text.contains("result") && text.contains("11 bytes"),
            "{text}"
        );
        assert!(text.contains("limit of 10 bytes"), "{text}");
        // 0 is no limit; bytes, not characters, are counted.
        assert!(Limits::none()
            .check_payload(Some(&"p".repeat(5 << 20)))
            .is_ok());
        assert!(Limits::default().error(3).check_error(Some("日")).is_ok());
        assert!(Limits::default().error(2).check_error(Some("日")).is_err());
    }
}
