//! The subcommands run: each operation as the protocol's own [`Request`], checked, dispatched
//! and answered as a `batch` line would be, its response printed and turned into the exit status.

use leasefence::protocol::{execute, Request, Response, TargetBackend};
use leasefence::{ErrorCode, Locking, OpenOptions};
use serde_json::json;

use crate::commands::{Command, Lease, LockingArg};
use crate::exit::{EXIT_INVALID, EXIT_OK, EXIT_REJECTED, EXIT_STORAGE};
use crate::{batch, enqueue_stdin, jobs_table, unlock};

pub(crate) fn run() -> i32 {
    let cli = match crate::commands::parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                EXIT_INVALID
            } else {
                EXIT_OK
            };
        }
    };
    // The commands that need no database (`call --help` and a bad `call` neither).
    if let Command::Operations = cli.command {
        return crate::operations::print();
    }
    let called = match &cli.command {
        Command::Call { args } => match call_request(args) {
            Ok(request) => Some(request),
            Err(status) => return status,
        },
        _ => None,
    };
    let Some(db) = cli.db else {
        eprintln!("leasefence: --db PATH|URL is required (or set LEASEFENCE_DB)");
        return EXIT_INVALID;
    };
    let locking = match cli.locking {
        LockingArg::Posix => Locking::Posix,
        LockingArg::Dotfile => Locking::Dotfile,
    };
    // A command that only reads never creates a database: a mistyped --db is an error. The
    // check words it for the CLI; create(false) keeps a file deleted since from being made.
    let reads_only = reads_only(&cli.command);
    if reads_only {
        if let Some(status) = refuse_missing_file(&db) {
            return status;
        }
    }
    let options = OpenOptions::new()
        .busy_timeout(cli.busy_timeout)
        .locking(locking)
        .write_gate(!cli.no_write_gate)
        .create(!reads_only);
    // The backend opens lazily: building it touches nothing, so `unlock` can sit beside
    // the other commands.
    let mut backend = TargetBackend::new(db.clone(), options.clone());
    let request = match cli.command {
        // Read above, before the database was required.
        Command::Call { .. } => match called {
            Some(request) => request,
            None => return EXIT_INVALID,
        },
        Command::Unlock => return unlock::unlock(&db),
        Command::Operations => return crate::operations::print(),
        Command::Batch => return batch::batch(&mut backend),
        Command::Work(args) => return crate::work::run(&db, &options, args),
        Command::Ui(args) => return crate::ui::run(&db, &options, args),
        Command::Jobs {
            state,
            queue,
            after,
            limit,
            json,
            clock,
        } => {
            let now = clock.now();
            let request = Request::ListJobs {
                now,
                status: state,
                queue,
                after,
                limit,
            };
            let response = execute(&mut backend, &request);
            if json || response.code().is_some() {
                println!("{}", response.to_json());
                return exit_code(&request, &response);
            }
            return jobs_table::print(&response, now);
        }
        Command::Fenced {
            lease,
            statements,
            complete,
            result,
            clock,
        } => {
            return fenced(
                &mut backend,
                lease,
                &statements,
                complete,
                result,
                clock.now(),
            )
        }
        Command::Enqueue { stdin: true, .. } => return enqueue_stdin::enqueue_stdin(&mut backend),
        Command::RenewMany {
            owner,
            leases,
            ttl,
            clock,
        } => {
            let fields = json!({"owner": owner, "now": clock.now(), "ttl": ttl});
            return with_json_member(&mut backend, "renew_many", fields, "leases", &leases);
        }
        Command::CompleteMany {
            owner,
            leases,
            clock,
        } => {
            let fields = json!({"owner": owner, "now": clock.now()});
            return with_json_member(&mut backend, "complete_many", fields, "leases", &leases);
        }
        Command::Init => Request::Init,
        Command::Enqueue {
            job,
            run_at,
            payload,
            queue,
            priority,
            stdin: false,
        } => Request::Enqueue {
            // clap requires the id without --stdin.
            job: job.unwrap_or_default(),
            run_at,
            payload,
            queue,
            priority,
        },
        Command::ClaimNextMany { n, claim } => Request::ClaimNextMany {
            owner: claim.owner,
            n,
            now: claim.clock.now(),
            ttl: claim.ttl,
            queues: queue_list(claim.queues),
        },
        Command::Fail {
            lease,
            retry_at,
            dead: _,
            error,
            clock,
        } => Request::Fail {
            job: lease.job,
            owner: lease.owner,
            fence: lease.fence,
            now: clock.now(),
            // The group makes this exactly one of --retry-at and --dead.
            retry_at,
            error,
        },
        Command::Revive { job, clock } => Request::Revive {
            job,
            now: clock.now(),
        },
        Command::Inspect { job } => Request::Inspect { job },
        Command::Schedule {
            name,
            cron,
            tz,
            queue,
            priority,
            payload,
            missed,
        } => Request::Schedule {
            name,
            cron,
            tz,
            queue,
            priority,
            payload,
            missed,
        },
        Command::Unschedule { name } => Request::Unschedule { name },
        Command::Schedules => Request::Schedules,
        Command::EnqueueDue { clock } => Request::EnqueueDue { now: clock.now() },
        Command::QueueStats { clock } => Request::QueueStats { now: clock.now() },
        Command::Workers { clock } => Request::ListWorkers { now: clock.now() },
        Command::OldestWaiting { clock } => Request::OldestWaiting { now: clock.now() },
        Command::Prune {
            older_than,
            keep_dead,
            limit,
            clock,
        } => Request::Prune {
            before: clock.now() - older_than.as_secs_f64(),
            keep_dead: Some(keep_dead),
            limit,
            only_dead: None,
        },
        Command::Stats { queue, clock } => Request::Stats {
            now: clock.now(),
            queue,
        },
        Command::State { job } => Request::State { job },
        Command::Claim {
            job,
            owner,
            ttl,
            clock,
        } => Request::Claim {
            job,
            owner,
            now: clock.now(),
            ttl,
        },
        Command::Renew { lease, ttl, clock } => Request::Renew {
            job: lease.job,
            owner: lease.owner,
            fence: lease.fence,
            now: clock.now(),
            ttl,
        },
        Command::Complete {
            lease,
            result,
            clock,
        } => Request::Complete {
            job: lease.job,
            owner: lease.owner,
            fence: lease.fence,
            now: clock.now(),
            result,
        },
        Command::Release { lease } => Request::Release {
            job: lease.job,
            owner: lease.owner,
            fence: lease.fence,
        },
        Command::ClaimMany {
            job,
            owners,
            ttl,
            clock,
        } => Request::ClaimMany {
            job,
            owners,
            now: clock.now(),
            ttl,
        },
        Command::ClaimNext { claim } => Request::ClaimNext {
            owner: claim.owner,
            now: claim.clock.now(),
            ttl: claim.ttl,
            queues: queue_list(claim.queues),
        },
    };
    // The protocol's own request: the same checks, dispatch and response line as `batch`.
    let response = execute(&mut backend, &request);
    println!("{}", response.to_json());
    exit_code(&request, &response)
}

/// `call OP ...`: the request its options name, read by the command built from the operation's
/// signature; or the exit status when there is none to run (`--help`, a bad option).
fn call_request(args: &[String]) -> Result<Request, i32> {
    let words = std::iter::once("call".to_owned()).chain(args.iter().cloned());
    let matches = crate::call::command()
        .try_get_matches_from(words)
        .map_err(|err| {
            let _ = err.print();
            if err.use_stderr() {
                EXIT_INVALID
            } else {
                EXIT_OK
            }
        })?;
    crate::call::request(&matches, crate::clock::wall_clock()).map_err(|response| {
        println!("{}", response.to_json());
        EXIT_INVALID
    })
}

/// Whether `command` only reads the store (so it must find one, never make one).
fn reads_only(command: &Command) -> bool {
    match command {
        Command::Ui(args) => args.read_only(),
        Command::State { .. }
        | Command::Inspect { .. }
        | Command::Schedules
        | Command::QueueStats { .. }
        | Command::Workers { .. }
        | Command::OldestWaiting { .. }
        | Command::Stats { .. }
        | Command::Jobs { .. } => true,
        _ => false,
    }
}

/// A read-only command's refusal of an SQLite file that does not exist (a PostgreSQL target
/// is the server's to refuse): the error line and exit status 3, nothing created.
fn refuse_missing_file(db: &std::path::Path) -> Option<i32> {
    if leasefence::is_postgres_url(&db.to_string_lossy()) || db.exists() {
        return None;
    }
    let failed = Response::Failed {
        code: "storage",
        message: format!(
            "cannot open {}: the file does not exist, and a command that only reads never \
             creates one; check --db, or create the database with `leasefence --db {} init`",
            db.display(),
            db.display()
        ),
    };
    println!("{}", failed.to_json());
    Some(EXIT_STORAGE)
}

/// `fenced`: the statements are read by the protocol's own reader, as a `fenced` request line.
fn fenced(
    backend: &mut TargetBackend,
    lease: Lease,
    statements: &str,
    complete: bool,
    result: Option<String>,
    now: f64,
) -> i32 {
    let fields = json!({
        "job": lease.job, "owner": lease.owner, "fence": lease.fence,
        "now": now, "complete": complete, "result": result,
    });
    with_json_member(backend, "fenced", fields, "statements", statements)
}

/// Runs `op` with `fields` and the member `name` given as JSON text on the command line
/// (`--statements`, `--leases`): the whole request read by the protocol's own reader, as a
/// request line.
fn with_json_member(
    backend: &mut TargetBackend,
    op: &str,
    mut fields: serde_json::Value,
    name: &str,
    text: &str,
) -> i32 {
    let member: serde_json::Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            let shape = match name {
                "statements" => "[{\"sql\": \"...\", \"params\": [...]}]",
                _ => "[{\"job\": \"...\", \"fence\": 1}]",
            };
            let failed = Response::Failed {
                code: "bad_request",
                message: format!("--{name} is not valid JSON ({err}); write {shape}"),
            };
            println!("{}", failed.to_json());
            return EXIT_INVALID;
        }
    };
    fields["op"] = op.into();
    fields[name] = member;
    let response = match Request::parse(&fields.to_string()) {
        Ok(request) => {
            let response = execute(backend, &request);
            println!("{}", response.to_json());
            return exit_code(&request, &response);
        }
        Err(response) => response,
    };
    println!("{}", response.to_json());
    EXIT_INVALID
}

fn exit_code(request: &Request, response: &Response) -> i32 {
    match response {
        Response::Failed { .. } => {
            // A code the CLI does not know is no storage failure: the call is what to fix.
            crate::exit::exit_status_of(response.error_code().unwrap_or(ErrorCode::BadRequest))
        }
        Response::Answered { value, .. } => {
            let refused = match request {
                Request::Init | Request::Stats { .. } => false,
                Request::Schedules | Request::EnqueueDue { .. } => false,
                Request::ClaimMany { .. } => value
                    .as_array()
                    .is_some_and(|fences| fences.iter().all(|f| f.is_null())),
                Request::EnqueueMany { .. } => false,
                Request::ClaimNextMany { .. } => value.as_array().is_some_and(Vec::is_empty),
                // Any item refused: the caller reads the answers to see which.
                Request::RenewMany { .. } | Request::CompleteMany { .. } => {
                    value.as_array().is_some_and(|answers| {
                        answers
                            .iter()
                            .any(|answer| answer["value"] == serde_json::Value::Bool(false))
                    })
                }
                _ => value.is_null() || *value == serde_json::Value::Bool(false),
            };
            if refused {
                EXIT_REJECTED
            } else {
                EXIT_OK
            }
        }
    }
}

/// Repeated `--queue` flags as the protocol's `queues`: none given is every queue.
fn queue_list(queues: Vec<String>) -> Option<Vec<String>> {
    (!queues.is_empty()).then_some(queues)
}
