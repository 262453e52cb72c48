//! `leasefence`: the lease store from the command line, and the JSON-lines `batch` server.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    std::process::exit(cli::main());
}

#[cfg(not(target_arch = "wasm32"))]
mod work;

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use std::io::{BufRead, Read, Write};
    use std::path::PathBuf;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use clap::{Args, Parser, Subcommand};
    use leasefence::protocol::{execute, respond, Backend as _, Request, Response, TargetBackend};
    use leasefence::{JobState, Locking, OpenOptions};
    use serde_json::json;

    /// Exit status: the operation was granted (or returned a value).
    pub(crate) const EXIT_OK: i32 = 0;
    /// Exit status: the store said no (`false` or `null`, with a reason).
    pub(crate) const EXIT_REJECTED: i32 = 1;
    /// Exit status: bad usage or an invalid argument; nothing changed.
    pub(crate) const EXIT_INVALID: i32 = 2;
    /// Exit status: storage failed; nothing changed.
    pub(crate) const EXIT_STORAGE: i32 = 3;

    /// The longest request line `batch` reads; longer lines get `bad_request`.
    const MAX_LINE_BYTES: u64 = 64 << 20;

    #[derive(Parser)]
    #[command(
        name = "leasefence",
        version,
        about = "Leases with fencing tokens on an SQLite file or a PostgreSQL server: a stale \
                 worker can never overwrite a newer worker's result.",
        after_help = "Every operation prints one JSON line, as in the batch protocol: \
                      {\"value\": ...} with a \"reason\" when the store says no, or \
                      {\"error\": {\"code\", \"message\"}}.\n\n\
                      Exit status: 0 granted, 1 rejected by the store (false/null), \
                      2 invalid usage or argument, 3 storage error."
    )]
    struct Cli {
        /// The SQLite database file (created if missing), or a PostgreSQL server as
        /// postgres://user:password@host:port/database (tables created if missing).
        #[arg(long, global = true, value_name = "PATH|URL", env = "LEASEFENCE_DB")]
        db: Option<PathBuf>,
        /// How long to wait for another process's write lock, in milliseconds (on PostgreSQL:
        /// the session's lock_timeout and the connect timeout).
        #[arg(long, global = true, value_name = "MS", default_value_t = 10_000)]
        busy_timeout: u64,
        /// Locking protocol: `posix` (default; fastest) or `dotfile` (to share the file with
        /// Node processes; files a Node process created use it automatically).
        #[arg(long, global = true, value_name = "PROTOCOL", default_value = "posix")]
        locking: LockingArg,
        #[command(subcommand)]
        command: Command,
    }

    #[derive(Clone, Copy, clap::ValueEnum)]
    enum LockingArg {
        Posix,
        Dotfile,
    }

    #[derive(Args)]
    struct Clock {
        /// The current time in seconds (default: the wall clock, Unix seconds).
        #[arg(long, allow_hyphen_values = true)]
        now: Option<f64>,
    }

    #[derive(Args)]
    struct Lease {
        /// The job id.
        job: String,
        /// Who holds the lease (any string naming the worker).
        #[arg(long)]
        owner: String,
        /// The fence returned by `claim`.
        #[arg(long, allow_hyphen_values = true)]
        fence: i64,
    }

    #[derive(Subcommand)]
    enum Command {
        /// Create the jobs table if it is missing.
        Init,
        /// Add a job; false when the id exists (nothing changes, its payload included).
        Enqueue {
            /// The job id.
            job: String,
            /// Nobody can claim the job before this time (seconds, as --now); default: at once.
            #[arg(long, allow_hyphen_values = true, value_name = "SECONDS")]
            run_at: Option<f64>,
            /// Text handed to whoever claims the job (claim-next prints it).
            #[arg(long)]
            payload: Option<String>,
        },
        /// Print a job's stored row, or null.
        State {
            /// The job id.
            job: String,
        },
        /// Take a lease on a job; prints the new fence, or null with the reason.
        Claim {
            /// The job id.
            job: String,
            /// Who takes the lease.
            #[arg(long)]
            owner: String,
            /// Lease length in seconds (> 0).
            #[arg(long, allow_hyphen_values = true)]
            ttl: f64,
            #[command(flatten)]
            clock: Clock,
        },
        /// Extend your live lease to now + ttl.
        Renew {
            #[command(flatten)]
            lease: Lease,
            /// New lease length in seconds from now (> 0).
            #[arg(long, allow_hyphen_values = true)]
            ttl: f64,
            #[command(flatten)]
            clock: Clock,
        },
        /// Store the result and mark the job done, if your lease is current and live.
        Complete {
            #[command(flatten)]
            lease: Lease,
            /// The result text (omitted: null).
            #[arg(long)]
            result: Option<String>,
            #[command(flatten)]
            clock: Clock,
        },
        /// Give your lease up early; the fence is kept.
        Release {
            #[command(flatten)]
            lease: Lease,
        },
        /// Claim one job for several owners at once, each on its own thread and connection.
        ClaimMany {
            /// The job id.
            job: String,
            /// The owners, comma-separated or repeated.
            #[arg(long = "owner", value_delimiter = ',', required = true)]
            owners: Vec<String>,
            /// Lease length in seconds (> 0).
            #[arg(long, allow_hyphen_values = true)]
            ttl: f64,
            #[command(flatten)]
            clock: Clock,
        },
        /// Claim the next claimable job (earliest lease end, then oldest).
        ClaimNext {
            /// Who takes the lease.
            #[arg(long)]
            owner: String,
            /// Lease length in seconds (> 0).
            #[arg(long, allow_hyphen_values = true)]
            ttl: f64,
            #[command(flatten)]
            clock: Clock,
        },
        /// Record a failure of your live lease: retry at a time, or make the job dead.
        #[command(group(clap::ArgGroup::new("then").required(true).args(["retry_at", "dead"])))]
        Fail {
            #[command(flatten)]
            lease: Lease,
            /// Nobody can claim the job again before this time (seconds, as --now).
            #[arg(long, allow_hyphen_values = true, value_name = "SECONDS")]
            retry_at: Option<f64>,
            /// Make the job dead instead: done with no result, until `revive`.
            #[arg(long)]
            dead: bool,
            /// What went wrong (kept with the attempt; `inspect` shows it).
            #[arg(long)]
            error: Option<String>,
            #[command(flatten)]
            clock: Clock,
        },
        /// Bring a dead job back: claimable from now, its fence kept.
        Revive {
            /// The job id.
            job: String,
            #[command(flatten)]
            clock: Clock,
        },
        /// Print everything stored about a job: row, attempts, dead, payload, failures.
        Inspect {
            /// The job id.
            job: String,
        },
        /// Print how many jobs are queued, scheduled, leased, done and dead.
        ///
        /// Counts the stored jobs at --now. What one `work` process did (claimed, completed,
        /// failed, dead, leases lost, stale writes refused, renewals) is the JSON line it prints
        /// at exit.
        Stats {
            #[command(flatten)]
            clock: Clock,
        },
        /// Print every job and its lease as a table.
        Jobs {
            /// Print one JSON object per line instead of a table.
            #[arg(long)]
            json: bool,
            #[command(flatten)]
            clock: Clock,
        },
        /// Serve the JSON-lines protocol: one request per stdin line, one response per line.
        Batch,
        /// Run a command once for each claimed job, renewing the lease while it runs.
        ///
        /// Claims jobs one at a time (claim-next) and runs CMD for each with LEASEFENCE_DB,
        /// LEASEFENCE_JOB, LEASEFENCE_FENCE, LEASEFENCE_ATTEMPT (the fence: 1 on the first
        /// claim) and LEASEFENCE_OWNER in its environment. The job's payload is written to its
        /// standard input (empty when none) and, up to 64 KiB, also set as LEASEFENCE_PAYLOAD.
        /// Exit status 0 completes the job with CMD's standard output as the result; any other
        /// status fails it with CMD's standard error as the error (or the status, when stderr
        /// is empty), to be retried after the backoff, or dead once --max-attempts is reached.
        /// A job claimed past --max-attempts whose previous attempt recorded no failure (its
        /// worker lost the lease or crashed) is made dead without running CMD.
        ///
        /// While CMD runs, a heartbeat thread renews the lease every ttl/3. If the lease is
        /// lost (a renew refused, or no renew possible before it ends), CMD's process group
        /// gets SIGTERM, then SIGKILL after --grace seconds, and its exit never completes the
        /// job. SIGINT or SIGTERM to `work` stops it the same way and releases the lease.
        ///
        /// At exit, prints its counters as one JSON line: {"claimed", "completed", "failed"
        /// (failures with a retry), "dead", "leases_lost", "stale_writes_refused",
        /// "renewals"}. `leasefence stats` counts the jobs by state. Exit status: 0 when
        /// stopped (a signal, or --until-empty), 2 bad usage, 3 storage error.
        #[command(
            after_help = "Example:\n  leasefence --db queue.db enqueue resize-7 --payload photo-7.jpg\n  leasefence --db queue.db work --ttl 30 --until-empty -- sh -c 'resize \"$LEASEFENCE_PAYLOAD\"'\n  leasefence --db queue.db stats"
        )]
        Work(crate::work::WorkArgs),
        /// Remove a dot-file lock (<db>.lock) left by a killed process, if no process on this
        /// machine has the database open; otherwise list who has it open and remove nothing.
        ///
        /// Files shared with Node use dot-file locks; a native process killed while holding one
        /// leaves a <db>.lock directory that every other process would wait on forever. Stop
        /// every process using the file, then run this (as root, or as the user of all of
        /// them: their open files are read from /proc). Prints {"value":"free"|"cleared"} (exit
        /// 0) or {"value":"in_use","pids":[...]} (exit 1).
        Unlock,
        /// Run your SQL statements in the transaction that checks your lease: committed only
        /// while the lease is current, all or nothing; with --complete the job completes in the
        /// same commit. Writes to `jobs` or a `leasefence_*` table are refused.
        Fenced {
            #[command(flatten)]
            lease: Lease,
            /// The statements as JSON: [{"sql": "UPDATE t SET n = $1", "params": [5]}, ...].
            #[arg(long)]
            statements: String,
            /// Complete the job in the same commit.
            #[arg(long)]
            complete: bool,
            /// The result stored when the job completes (needs --complete; omitted: null).
            #[arg(long, requires = "complete")]
            result: Option<String>,
            #[command(flatten)]
            clock: Clock,
        },
    }

    fn wall_clock() -> f64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    }

    impl Clock {
        fn now(&self) -> f64 {
            self.now.unwrap_or_else(wall_clock)
        }
    }

    pub fn main() -> i32 {
        let cli = match Cli::try_parse() {
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
        let Some(db) = cli.db else {
            eprintln!("leasefence: --db PATH|URL is required (or set LEASEFENCE_DB)");
            return EXIT_INVALID;
        };
        let locking = match cli.locking {
            LockingArg::Posix => Locking::Posix,
            LockingArg::Dotfile => Locking::Dotfile,
        };
        let options = OpenOptions::new()
            .busy_timeout(Duration::from_millis(cli.busy_timeout))
            .locking(locking);
        // The backend opens lazily: building it touches nothing, so `unlock` can sit beside
        // the other commands.
        let mut backend = TargetBackend::new(db.clone(), options.clone());
        let request = match cli.command {
            Command::Unlock => return unlock(&db),
            Command::Batch => return batch(&mut backend),
            Command::Work(args) => return crate::work::run(&db, &options, args),
            Command::Jobs { json, clock } => return jobs(&mut backend, json, clock.now()),
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
            Command::Init => Request::Init,
            Command::Enqueue {
                job,
                run_at,
                payload,
            } => Request::Enqueue {
                job,
                run_at,
                payload,
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
            Command::Stats { clock } => Request::Stats { now: clock.now() },
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
            Command::ClaimNext { owner, ttl, clock } => Request::ClaimNext {
                owner,
                now: clock.now(),
                ttl,
            },
        };
        // The protocol's own request: the same checks, dispatch and response line as `batch`.
        let response = execute(&mut backend, &request);
        println!("{}", response.to_json());
        exit_code(&request, &response)
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
        let statements: serde_json::Value = match serde_json::from_str(statements) {
            Ok(value) => value,
            Err(err) => {
                let failed = Response::Failed {
                    code: "bad_request",
                    message: format!(
                        "--statements is not valid JSON ({err}); write \
                         [{{\"sql\": \"...\", \"params\": [...]}}]"
                    ),
                };
                println!("{}", failed.to_json());
                return EXIT_INVALID;
            }
        };
        let line = json!({
            "op": "fenced", "job": lease.job, "owner": lease.owner, "fence": lease.fence,
            "now": now, "statements": statements, "complete": complete, "result": result,
        });
        let response = match Request::parse(&line.to_string()) {
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

    fn unlock(db: &std::path::Path) -> i32 {
        if db.to_str().is_some_and(leasefence::is_postgres_url) {
            let failed = Response::Failed {
                code: "invalid_argument",
                message: "unlock clears a stale lock file beside an SQLite database; a \
                          PostgreSQL server releases the locks of a lost connection itself"
                    .into(),
            };
            println!("{}", failed.to_json());
            return EXIT_INVALID;
        }
        #[cfg(target_os = "linux")]
        {
            match leasefence::clear_stale_lock(db) {
                Ok(leasefence::LockCheck::Free) => {
                    println!("{}", json!({"value": "free"}));
                    EXIT_OK
                }
                Ok(leasefence::LockCheck::Cleared) => {
                    println!("{}", json!({"value": "cleared"}));
                    EXIT_OK
                }
                Ok(leasefence::LockCheck::InUse { pids }) => {
                    println!("{}", json!({"value": "in_use", "pids": pids}));
                    eprintln!(
                        "leasefence: processes {pids:?} have {} open (or could not be checked: \
                         run as root); the lock may be theirs, so it was left alone. Stop them \
                         and run unlock again.",
                        db.display()
                    );
                    EXIT_REJECTED
                }
                Err(err) => {
                    let failed = Response::Failed {
                        code: err.code(),
                        message: err.to_string(),
                    };
                    println!("{}", failed.to_json());
                    EXIT_STORAGE
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let failed = Response::Failed {
                code: "storage",
                message: "unlock reads open files from /proc, which only Linux has".into(),
            };
            println!("{}", failed.to_json());
            EXIT_STORAGE
        }
    }

    fn exit_code(request: &Request, response: &Response) -> i32 {
        match response {
            Response::Failed {
                code: "storage", ..
            } => EXIT_STORAGE,
            Response::Failed { .. } => EXIT_INVALID,
            Response::Answered { value, .. } => {
                let refused = match request {
                    Request::Init | Request::Stats { .. } => false,
                    Request::ClaimMany { .. } => value
                        .as_array()
                        .is_some_and(|fences| fences.iter().all(|f| f.is_null())),
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

    /// docs/contract.md section 4: one response line per request line, flushed at once; never stops
    /// on a bad line. Ends at end of input (exit 0) or when stdout is closed.
    fn batch(backend: &mut TargetBackend) -> i32 {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut input)
                .take(MAX_LINE_BYTES + 1)
                .read_until(b'\n', &mut line);
            let response = match read {
                Ok(0) => return EXIT_OK,
                Err(err) => {
                    eprintln!("leasefence batch: cannot read standard input: {err}");
                    return EXIT_STORAGE;
                }
                Ok(_) if line.last() != Some(&b'\n') && line.len() as u64 > MAX_LINE_BYTES => {
                    if let Err(err) = skip_rest_of_line(&mut input) {
                        eprintln!("leasefence batch: cannot read standard input: {err}");
                        return EXIT_STORAGE;
                    }
                    Response::Failed {
                        code: "bad_request",
                        message: format!(
                            "the line is longer than {MAX_LINE_BYTES} bytes; send smaller requests"
                        ),
                    }
                }
                Ok(_) => {
                    let text = line.strip_suffix(b"\n").unwrap_or(&line);
                    let text = text.strip_suffix(b"\r").unwrap_or(text);
                    match std::str::from_utf8(text) {
                        Ok(text) => respond(backend, text),
                        Err(err) => Response::Failed {
                            code: "bad_request",
                            message: format!("the line is not valid UTF-8 ({err}), so not JSON"),
                        },
                    }
                }
            };
            let written = writeln!(out, "{}", response.to_json()).and_then(|()| out.flush());
            if written.is_err() {
                // The reader went away; nobody is left to answer.
                return EXIT_OK;
            }
        }
    }

    fn skip_rest_of_line(input: &mut impl BufRead) -> std::io::Result<()> {
        loop {
            let buf = input.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    input.consume(i + 1);
                    return Ok(());
                }
                None => {
                    let n = buf.len();
                    input.consume(n);
                }
            }
        }
    }

    fn jobs(backend: &mut TargetBackend, json: bool, now: f64) -> i32 {
        let rows = match backend.leases().and_then(|store| store.jobs()) {
            Ok(rows) => rows,
            Err(err) => {
                println!(
                    "{}",
                    Response::Failed {
                        code: err.code(),
                        message: err.to_string()
                    }
                    .to_json()
                );
                return if err.code() == "storage" {
                    EXIT_STORAGE
                } else {
                    EXIT_INVALID
                };
            }
        };
        if json {
            for row in &rows {
                println!("{}", json!(row));
            }
            return EXIT_OK;
        }
        print!("{}", table(&rows, now));
        EXIT_OK
    }

    fn lease_state(row: &JobState, now: f64) -> String {
        if row.done {
            "done".into()
        } else if row.until > now && row.owner.is_none() {
            format!("scheduled, in {:.1}s", row.until - now)
        } else if row.until > now {
            format!("live, {:.1}s left", row.until - now)
        } else if row.owner.is_some() {
            "expired".into()
        } else {
            "free".into()
        }
    }

    fn clip(text: &str, width: usize) -> String {
        let flat: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if flat.chars().count() <= width {
            flat
        } else {
            flat.chars().take(width - 1).collect::<String>() + "…"
        }
    }

    fn table(rows: &[JobState], now: f64) -> String {
        let header = ["JOB", "OWNER", "FENCE", "UNTIL", "LEASE", "RESULT"].map(String::from);
        let mut cells: Vec<[String; 6]> = vec![header];
        for row in rows {
            cells.push([
                clip(&row.id, 24),
                clip(row.owner.as_deref().unwrap_or("-"), 16),
                row.fence.to_string(),
                row.until.to_string(),
                lease_state(row, now),
                clip(row.result.as_deref().unwrap_or("-"), 32),
            ]);
        }
        let widths: Vec<usize> = (0..6)
            .map(|i| {
                cells
                    .iter()
                    .map(|c| c[i].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &cells {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        if rows.is_empty() {
            out.push_str("(no jobs; add one with `leasefence enqueue JOB`)\n");
        }
        out
    }
}
