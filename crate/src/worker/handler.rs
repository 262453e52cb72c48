//! What a handler gets (a [`Job`]) and what it returns (a result, or a [`Completion`] with
//! statements that commit with it).

use super::CancelToken;
use crate::outcome::Fence;
use crate::rules::fenced::Statement;

/// What a handler returns: `Ok(result)` completes the job with `result` (text or none); an
/// error fails it, with the error's text recorded.
///
/// ```
/// fn handle(job: &leasefence::worker::Job) -> leasefence::worker::HandlerResult {
///     let n: u32 = job.payload.as_deref().unwrap_or("0").parse()?; // a parse error fails the job
///     Ok(Some((n * 2).to_string()))
/// }
/// # let _ = handle;
/// ```
pub type HandlerResult =
    std::result::Result<Option<String>, Box<dyn std::error::Error + Send + Sync>>;

/// A handler's success for [`Worker::run_fenced`](super::Worker::run_fenced): the job's result, and statements on your own
/// tables that commit in the same transaction as the completion, or not at all (a fenced write,
/// docs/contract.md section 8). With no statements it is a plain completion.
///
/// ```
/// use leasefence::worker::Completion;
/// use leasefence::Statement;
/// let done = Completion::new(Some("sent".into()))
///     .statement(Statement::new("INSERT INTO outbox(job) VALUES ($1)", ["mail-7".into()]));
/// assert_eq!(done.statements.len(), 1);
/// let same = Completion::fenced(done.statements.clone(), Some("sent".into()));
/// assert_eq!(same, done);
/// assert_eq!(Completion::from(None), Completion::new(None));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// The job's result (text or none), stored by the completion.
    pub result: Option<String>,
    /// Your statements, run in order before the lease check; `jobs` and the `leasefence_*`
    /// tables are refused.
    pub statements: Vec<Statement>,
}

impl Completion {
    /// A completion with `result` and no statements.
    ///
    /// ```
    /// let done = leasefence::worker::Completion::new(Some("42".into()));
    /// assert!(done.statements.is_empty());
    /// ```
    pub fn new(result: Option<String>) -> Self {
        Completion {
            result,
            statements: Vec::new(),
        }
    }

    /// A completion with `result` whose `statements` commit with it (the JavaScript runtime's
    /// `fencedResult(statements, result)`).
    ///
    /// ```
    /// use leasefence::{worker::Completion, Statement};
    /// let done = Completion::fenced([Statement::new("DELETE FROM pending WHERE id = $1", [7.into()])], None);
    /// assert_eq!(done.statements.len(), 1);
    /// ```
    pub fn fenced(statements: impl IntoIterator<Item = Statement>, result: Option<String>) -> Self {
        Completion {
            result,
            statements: statements.into_iter().collect(),
        }
    }

    /// Adds one statement, run after those added before it.
    ///
    /// ```
    /// use leasefence::{worker::Completion, Statement};
    /// let done = Completion::new(None)
    ///     .statement(Statement::new("UPDATE totals SET n = n + 1", []))
    ///     .statement(Statement::new("INSERT INTO log(line) VALUES ($1)", ["counted".into()]));
    /// assert_eq!(done.statements[1].params.len(), 1);
    /// ```
    pub fn statement(mut self, statement: Statement) -> Self {
        self.statements.push(statement);
        self
    }
}

impl From<Option<String>> for Completion {
    fn from(result: Option<String>) -> Self {
        Completion::new(result)
    }
}

/// What a handler given to [`Worker::run_fenced`](super::Worker::run_fenced) returns: `Ok(completion)` completes the job,
/// with the completion's statements in the same commit; an error fails it, as in
/// [`HandlerResult`].
///
/// ```
/// use leasefence::{worker::{Completion, CompletionResult, Job}, Statement};
/// fn handle(job: &Job) -> CompletionResult {
///     let n: i64 = job.payload.as_deref().unwrap_or("0").parse()?;
///     Ok(Completion::new(Some((n * 2).to_string()))
///         .statement(Statement::new("INSERT INTO doubled(n) VALUES ($1)", [(n * 2).into()])))
/// }
/// # let _ = handle;
/// ```
pub type CompletionResult =
    std::result::Result<Completion, Box<dyn std::error::Error + Send + Sync>>;

/// One claimed job, as the handler sees it.
///
/// ```
/// use leasefence::worker::{CancelToken, Job};
/// let job = Job { id: "j".into(), fence: 2, attempt: 2, payload: None, token: CancelToken::for_lease(|| 0.0, 30.0) };
/// assert_eq!(job.attempt(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct Job {
    /// The job id.
    pub id: String,
    /// The lease's fence.
    pub fence: Fence,
    /// The attempt this run is, from 1: the job's claims since the fence it started at (the
    /// fence floor when it was enqueued, docs/contract.md section 13; without pruning, the
    /// fence itself).
    pub attempt: Fence,
    /// The payload given at `enqueue_with`.
    pub payload: Option<String>,
    /// Cancelled the moment the lease is lost or the worker is interrupted.
    pub token: CancelToken,
}

impl Job {
    /// The attempt number: 1 on the first claim (see [`attempt`](Job::attempt)'s field).
    ///
    /// ```
    /// # use leasefence::worker::{CancelToken, Job};
    /// let job = Job { id: "j".into(), fence: 4, attempt: 1, payload: None, token: CancelToken::for_lease(|| 0.0, 30.0) };
    /// assert_eq!(job.attempt(), 1);
    /// ```
    pub fn attempt(&self) -> Fence {
        self.attempt
    }
}
