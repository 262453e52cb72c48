//! The one request reader: which fields each operation takes, in which order, written once. The
//! protocol's JSON objects and the wasm calls' positional JavaScript arguments are each a
//! [`Source`] of field values; [`Request::read`] asks a source for the
//! fields of an operation and builds the [`Request`].
//!
//! Each source words its own errors (the texts its users and tests know) and decides when a value
//! error is reported: the protocol's source keeps the rule that shape errors (`bad_request`) beat
//! value errors (`invalid_argument`) by holding a value error back until every field has been
//! read, and [`Source::finish`] reports it then.

use super::Request;
use crate::outcome::Fence;
use crate::rules::fenced::Statement;

/// An operation, as every runtime names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `init`
    Init,
    /// `enqueue`
    Enqueue,
    /// `state`
    State,
    /// `claim`
    Claim,
    /// `renew`
    Renew,
    /// `complete`
    Complete,
    /// `release`
    Release,
    /// `claim_many` / `claimMany`
    ClaimMany,
    /// `claim_next` / `claimNext`
    ClaimNext,
    /// `fail` (section 7)
    Fail,
    /// `revive` (section 7)
    Revive,
    /// `inspect` (section 7)
    Inspect,
    /// `stats`: how many jobs are in each state
    Stats,
    /// `fenced`: the caller's statements in the transaction that checks the lease
    Fenced,
}

/// Every operation with its protocol name and its JavaScript name, in the protocol's order.
pub(crate) const OP_NAMES: [(Op, &str, &str); 14] = [
    (Op::Init, "init", "init"),
    (Op::Enqueue, "enqueue", "enqueue"),
    (Op::State, "state", "state"),
    (Op::Claim, "claim", "claim"),
    (Op::Renew, "renew", "renew"),
    (Op::Complete, "complete", "complete"),
    (Op::Release, "release", "release"),
    (Op::ClaimMany, "claim_many", "claimMany"),
    (Op::ClaimNext, "claim_next", "claimNext"),
    (Op::Fail, "fail", "fail"),
    (Op::Revive, "revive", "revive"),
    (Op::Inspect, "inspect", "inspect"),
    (Op::Stats, "stats", "stats"),
    (Op::Fenced, "fenced", "fenced"),
];

impl Op {
    /// The operation the protocol calls `name`.
    pub(crate) fn from_protocol(name: &str) -> Option<Op> {
        OP_NAMES
            .iter()
            .find(|(_, p, _)| *p == name)
            .map(|(op, _, _)| *op)
    }

    /// The operation JavaScript calls `name` (`claimNext`).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn from_js(name: &str) -> Option<Op> {
        OP_NAMES
            .iter()
            .find(|(_, _, j)| *j == name)
            .map(|(op, _, _)| *op)
    }
}

/// Where the field values of one request come from. Fields are asked for in the operation's
/// positional order (docs/contract.md section 5), so a positional source can keep a cursor.
pub(crate) trait Source {
    /// What a bad field becomes.
    type Error;
    /// A string field.
    fn string(&mut self, name: &'static str) -> Result<String, Self::Error>;
    /// A string or null.
    fn optional_string(&mut self, name: &'static str) -> Result<Option<String>, Self::Error>;
    /// A number (`now`, `ttl`).
    fn number(&mut self, name: &'static str) -> Result<f64, Self::Error>;
    /// An optional string: absent or null is `None` (`payload`, `error`).
    fn maybe_string(&mut self, name: &'static str) -> Result<Option<String>, Self::Error>;
    /// An optional number: absent or null is `None` (`run_at`, `retry_at`).
    fn maybe_number(&mut self, name: &'static str) -> Result<Option<f64>, Self::Error>;
    /// A fence: an integer.
    fn fence(&mut self, name: &'static str) -> Result<Fence, Self::Error>;
    /// An array of strings.
    fn strings(&mut self, name: &'static str) -> Result<Vec<String>, Self::Error>;
    /// The tail of a `fenced` request: its statements, whether the job completes, the result.
    fn fenced_writes(&mut self) -> Result<FencedArgs, Self::Error>;
    /// Called once every field was read: the place for a held-back value error.
    fn finish(self) -> Result<(), Self::Error>
    where
        Self: Sized,
    {
        Ok(())
    }
}

impl Request {
    /// Reads the fields of `op` from `source`, in positional order, and builds the request.
    /// Value checks beyond the field types are [`Request::validate`]'s.
    pub(crate) fn read<S: Source>(op: Op, mut s: S) -> Result<Request, S::Error> {
        let request = match op {
            Op::Init => Request::Init,
            Op::Enqueue => Request::Enqueue {
                job: s.string("job")?,
                run_at: s.maybe_number("run_at")?,
                payload: s.maybe_string("payload")?,
            },
            Op::State => Request::State {
                job: s.string("job")?,
            },
            Op::Claim => Request::Claim {
                job: s.string("job")?,
                owner: s.string("owner")?,
                now: s.number("now")?,
                ttl: s.number("ttl")?,
            },
            Op::Renew => Request::Renew {
                job: s.string("job")?,
                owner: s.string("owner")?,
                fence: s.fence("fence")?,
                now: s.number("now")?,
                ttl: s.number("ttl")?,
            },
            Op::Complete => Request::Complete {
                job: s.string("job")?,
                owner: s.string("owner")?,
                fence: s.fence("fence")?,
                now: s.number("now")?,
                result: s.optional_string("result")?,
            },
            Op::Release => Request::Release {
                job: s.string("job")?,
                owner: s.string("owner")?,
                fence: s.fence("fence")?,
            },
            Op::ClaimMany => Request::ClaimMany {
                job: s.string("job")?,
                owners: s.strings("owners")?,
                now: s.number("now")?,
                ttl: s.number("ttl")?,
            },
            Op::ClaimNext => Request::ClaimNext {
                owner: s.string("owner")?,
                now: s.number("now")?,
                ttl: s.number("ttl")?,
            },
            Op::Fail => Request::Fail {
                job: s.string("job")?,
                owner: s.string("owner")?,
                fence: s.fence("fence")?,
                now: s.number("now")?,
                retry_at: s.maybe_number("retry_at")?,
                error: s.maybe_string("error")?,
            },
            Op::Revive => Request::Revive {
                job: s.string("job")?,
                now: s.number("now")?,
            },
            Op::Inspect => Request::Inspect {
                job: s.string("job")?,
            },
            Op::Stats => Request::Stats {
                now: s.number("now")?,
            },
            Op::Fenced => {
                let (job, owner) = (s.string("job")?, s.string("owner")?);
                let (fence, now) = (s.fence("fence")?, s.number("now")?);
                let FencedArgs {
                    statements,
                    complete,
                    result,
                } = s.fenced_writes()?;
                Request::Fenced {
                    job,
                    owner,
                    fence,
                    now,
                    statements,
                    complete,
                    result,
                }
            }
        };
        s.finish()?;
        Ok(request)
    }
}

/// The fields of a `fenced` request after `now`: `statements`, and the optional `complete`
/// (default false) and `result` (default null).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct FencedArgs {
    /// The caller's statements, in order.
    pub(crate) statements: Vec<Statement>,
    /// Whether the job completes in the same commit.
    pub(crate) complete: bool,
    /// The result stored when it completes.
    pub(crate) result: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::{Op, OP_NAMES};

    #[test]
    fn every_operation_is_found_by_both_of_its_names() {
        for (op, protocol, js) in OP_NAMES {
            assert_eq!(Op::from_protocol(protocol), Some(op));
            assert_eq!(Op::from_js(js), Some(op));
        }
        assert_eq!(Op::from_protocol("claimNext"), None);
        assert_eq!(Op::from_js("claim_next"), None);
    }
}
