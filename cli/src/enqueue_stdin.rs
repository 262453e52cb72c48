//! `enqueue --stdin`: many jobs from standard input, added with `enqueue_many` in transactions of
//! up to [`MAX_BATCH`] jobs, so 100,000 jobs cost about a hundred syncs, not 100,000.
//!
//! Every line is read and checked before the first write: a bad line anywhere names its line
//! number and adds nothing. Checking first costs holding the jobs in memory (about 100 bytes a
//! job); in exchange a typo on line 90,000 never leaves 89,999 jobs half-added.

use std::io::BufRead;

use leasefence::protocol::{execute, Request, Response, TargetBackend};
use leasefence::{NewJob, MAX_BATCH};
use serde_json::{json, Value};

use crate::exit::{EXIT_INVALID, EXIT_OK, EXIT_STORAGE};

/// Reads every job from standard input, then adds them; prints `{"value": {"added", "existed"}}`.
pub(crate) fn enqueue_stdin(backend: &mut TargetBackend) -> i32 {
    let jobs = match read_jobs(std::io::stdin().lock()) {
        Ok(jobs) => jobs,
        Err(failed) => {
            println!("{}", failed.to_json());
            return EXIT_INVALID;
        }
    };
    let chunks: Vec<Request> = jobs
        .chunks(MAX_BATCH)
        .map(|chunk| Request::EnqueueMany {
            jobs: chunk.to_vec(),
            statements: Vec::new(),
        })
        .collect();
    let (mut added, mut existed) = (0u64, 0u64);
    for request in &chunks {
        let answers = match execute(backend, request) {
            Response::Answered { value, .. } => value,
            failed @ Response::Failed { code, .. } => {
                println!("{}", failed.to_json());
                eprintln!(
                    "leasefence enqueue --stdin: stopped after adding {added} jobs ({existed} \
                     existed); the transactions before the error are committed, so running the \
                     same input again adds only the rest"
                );
                return if code == "storage" {
                    EXIT_STORAGE
                } else {
                    EXIT_INVALID
                };
            }
        };
        for answer in answers.as_array().into_iter().flatten() {
            if answer == &Value::Bool(true) {
                added += 1;
            } else {
                existed += 1;
            }
        }
    }
    println!("{}", json!({"value": {"added": added, "existed": existed}}));
    EXIT_OK
}

/// Every job of the input, checked as `enqueue_many` checks its items; the first bad line is a
/// `bad_request` or `invalid_argument` naming its line number.
fn read_jobs(input: impl BufRead) -> Result<Vec<NewJob>, Response> {
    let mut jobs = Vec::new();
    for (index, line) in input.split(b'\n').enumerate() {
        let number = index + 1;
        let line = line.map_err(|err| Response::Failed {
            code: "storage",
            message: format!("cannot read standard input at line {number}: {err}"),
        })?;
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            continue;
        }
        let text = std::str::from_utf8(line).map_err(|err| {
            bad_line(
                number,
                "bad_request",
                &format!("is not valid UTF-8 ({err})"),
            )
        })?;
        jobs.push(job_of_line(number, text)?);
    }
    Ok(jobs)
}

/// One line: a JSON object when it starts with `{`, read by the protocol's own reader as an item
/// of `enqueue_many` (so the members and their checks are the protocol's); else the job id.
fn job_of_line(number: usize, text: &str) -> Result<NewJob, Response> {
    if !text.starts_with('{') {
        return Ok(NewJob::new(text));
    }
    let item: Value = serde_json::from_str(text).map_err(|err| {
        bad_line(
            number,
            "bad_request",
            &format!(
                "is not valid JSON ({err}); write a job id, or {{\"job\": \"id\", \"run_at\": \
                 SECONDS, \"payload\": \"text\"}}"
            ),
        )
    })?;
    let line = json!({"op": "enqueue_many", "jobs": [item]}).to_string();
    let request = Request::parse(&line).map_err(|failed| relabel(number, failed))?;
    request
        .validate()
        .map_err(|err| bad_line(number, err.code(), &err.to_string()))?;
    match request {
        Request::EnqueueMany { mut jobs, .. } if jobs.len() == 1 => Ok(jobs.remove(0)),
        _ => Err(bad_line(number, "bad_request", "is not one job")),
    }
}

/// The reader's error, said of the input line (its `jobs[0]` is the line).
fn relabel(number: usize, failed: Response) -> Response {
    match failed {
        Response::Failed { code, message } => {
            let message = message.replace("jobs[0] of op \"enqueue_many\"", "the object");
            bad_line(number, code, &message)
        }
        answered => answered,
    }
}

fn bad_line(number: usize, code: &'static str, what: &str) -> Response {
    Response::Failed {
        code,
        message: format!(
            "line {number} of standard input: {what}; nothing was enqueued (fix the line and \
             run again)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_objects_are_read_and_blank_lines_skipped() {
        let input = "a\r\n\n{\"job\": \"b\", \"run_at\": 5, \"payload\": \"p\"}\n{\"job\":\"c\"}";
        let jobs = read_jobs(input.as_bytes()).unwrap();
        assert_eq!(
            jobs,
            [
                NewJob::new("a"),
                NewJob::new("b").run_at(5.0).payload("p"),
                NewJob::new("c")
            ]
        );
    }

    #[test]
    fn a_bad_line_names_its_number_and_the_problem() {
        for (input, code, says) in [
            ("a\nb\n{\"job\": 5}\n", "bad_request", "line 3 "),
            (
                "a\n{\"job\": \"b\", \"runAt\": 5}\n",
                "bad_request",
                "\"runAt\"",
            ),
            ("a\n{\"job\": \"b\"\n", "bad_request", "not valid JSON"),
            (
                "a\n\n\n{\"job\": \"b\", \"run_at\": 1e999}\n",
                "bad_request",
                "line 4 ",
            ),
            (
                "{\"job\": \"x\", \"run_at\": \"soon\"}",
                "bad_request",
                "the object",
            ),
        ] {
            let Err(Response::Failed { code: got, message }) = read_jobs(input.as_bytes()) else {
                panic!("{input:?} was accepted");
            };
            assert_eq!(got, code, "{message}");
            assert!(
                message.contains(says),
                "{message:?} should contain {says:?}"
            );
        }
    }
}
