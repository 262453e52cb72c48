//! The command line: the global options and the subcommands, as clap reads them.

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

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
pub(crate) struct Cli {
    /// The SQLite database file (created if missing), or a PostgreSQL server as
    /// postgres://user:password@host:port/database (tables created if missing).
    // `hide_env_values`: a URL in LEASEFENCE_DB may hold a password, and --help would print it.
    #[arg(
        long,
        global = true,
        value_name = "PATH|URL",
        env = "LEASEFENCE_DB",
        hide_env_values = true
    )]
    pub(crate) db: Option<PathBuf>,
    /// How long to wait for another process's write lock, in seconds like every time here
    /// (`0.25` is a quarter second; on PostgreSQL: the session's lock_timeout and the connect
    /// timeout).
    #[arg(long, global = true, value_name = "SECONDS", default_value = "10", value_parser = crate::clock::seconds)]
    pub(crate) busy_timeout: std::time::Duration,
    /// Locking protocol: `posix` (default: WAL, shared with Node processes on the npm package's
    /// native engine and with the Python seed) or `dotfile` (to share the file with Node processes
    /// on the package's wasm fallback; files such a process created use it automatically).
    #[arg(long, global = true, value_name = "PROTOCOL", default_value = "posix")]
    pub(crate) locking: LockingArg,
    /// Write without the write gate: every wait for the write lock in SQLite's busy handler
    /// instead of the gate's first-come, first-served queue. Faster for a few processes, and
    /// collapses with many (docs/decisions/write-gate.md).
    #[arg(long, global = true)]
    pub(crate) no_write_gate: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands as the top-level `--help` lists them: by what the reader is doing, a worker's
/// calls together, the ways to look at jobs together (every subcommand in exactly one group; a
/// test holds the list to the subcommands).
const GROUPS: &[(&str, &[&str])] = &[
    (
        "Add work",
        &[
            "enqueue",
            "schedule",
            "unschedule",
            "schedules",
            "enqueue-due",
        ],
    ),
    (
        "Run workers and tools",
        &["work", "ui", "batch", "call", "operations"],
    ),
    (
        "Hold a lease (what a worker calls)",
        &[
            "claim-next",
            "claim",
            "renew",
            "complete",
            "fail",
            "release",
            "fenced",
        ],
    ),
    (
        "The same, many in one transaction",
        &[
            "claim-next-many",
            "claim-many",
            "renew-many",
            "complete-many",
        ],
    ),
    ("Look at one job", &["state", "inspect"]),
    (
        "Look at many jobs",
        &["jobs", "stats", "queue-stats", "oldest-waiting", "workers"],
    ),
    (
        "Look after the store",
        &["init", "revive", "prune", "unlock"],
    ),
];

/// The first sentence of a subcommand's description, for the grouped list.
fn first_sentence(about: &str) -> &str {
    let end = about
        .find(". ")
        .or_else(|| about.find("; "))
        .map(|i| i + 1)
        .unwrap_or(about.len());
    about[..end].trim_end_matches(['.', ';'])
}

/// The grouped list of subcommands, aligned like clap's own.
fn grouped_commands(cli: &clap::Command) -> String {
    let width = GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter())
        .map(|name| name.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (heading, names) in GROUPS {
        out.push_str(heading);
        out.push_str(":\n");
        for name in *names {
            let about = cli
                .find_subcommand(name)
                .and_then(|sub| sub.get_about())
                .map(|about| about.to_string())
                .unwrap_or_default();
            out.push_str(&format!("  {name:<width$}  {}\n", first_sentence(&about)));
        }
        out.push('\n');
    }
    out
}

/// The command line as clap reads it, its `--help` listing the subcommands by group.
pub(crate) fn command() -> clap::Command {
    let cli = Cli::command();
    let template = format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{}\
         Each command's --help gives its options and an example: leasefence help claim-next\n\n\
         Options:\n{{options}}{{after-help}}",
        grouped_commands(&cli)
    );
    cli.help_template(template)
}

/// Reads the process's arguments (with the grouped `--help`).
pub(crate) fn parse() -> Result<Cli, clap::Error> {
    let matches = command().try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum LockingArg {
    Posix,
    Dotfile,
}

#[derive(Args)]
pub(crate) struct Clock {
    /// The current time in seconds (default: the wall clock, Unix seconds).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) now: Option<f64>,
}

/// What `claim-next` and `claim-next-many` ask: who claims, from which queues, for how long.
#[derive(Args)]
pub(crate) struct ClaimOptions {
    /// Who takes the lease.
    #[arg(long)]
    pub(crate) owner: String,
    /// Claim only from this queue; repeat for several (default: every queue).
    #[arg(long = "queue", visible_alias = "queues", value_name = "NAME")]
    pub(crate) queues: Vec<String>,
    /// Lease length in seconds (> 0).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) ttl: f64,
    #[command(flatten)]
    pub(crate) clock: Clock,
}

#[derive(Args)]
pub(crate) struct Lease {
    /// The job id.
    pub(crate) job: String,
    /// Who holds the lease (any string naming the worker).
    #[arg(long)]
    pub(crate) owner: String,
    /// The fence returned by `claim`.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) fence: i64,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Create the jobs table if it is missing.
    #[command(after_help = "Example:\n  leasefence --db queue.db init")]
    Init,
    /// Add a job; false when the id exists (nothing changes, its payload included).
    ///
    /// With --stdin, adds the jobs read from standard input instead: one a line, either a job
    /// id or a JSON object {"job": ID, "run_at": SECONDS, "payload": TEXT, "queue": NAME,
    /// "priority": N} (all but job optional; a line starting with `{` is read as JSON; empty lines are skipped). Every line
    /// is checked before anything is written, so a bad line anywhere is an error naming its
    /// line number (exit 2) and adds nothing. The jobs are then added in transactions of up to
    /// 1024 (enqueue_many: one sync each, not one per job), in input order; prints
    /// {"value": {"added": N, "existed": M}}. A storage error part-way (exit 3) leaves the
    /// transactions before it committed; running the same input again adds only the rest.
    #[command(
        after_help = "Example:\n  seq 1 100000 | sed 's/^/job-/' | leasefence --db queue.db enqueue --stdin"
    )]
    Enqueue {
        /// The job id.
        #[arg(required_unless_present = "stdin", conflicts_with = "stdin")]
        job: Option<String>,
        /// Nobody can claim the job before this time (seconds, as --now); default: at once.
        #[arg(long, allow_hyphen_values = true, value_name = "SECONDS")]
        run_at: Option<f64>,
        /// Text handed to whoever claims the job (claim-next prints it).
        #[arg(long)]
        payload: Option<String>,
        /// The queue the job joins (default: "default"); `claim-next --queue` and
        /// `work --queue` serve named queues.
        #[arg(long, value_name = "NAME")]
        queue: Option<String>,
        /// Among claimable jobs, a higher priority is claimed first (an integer; default 0).
        #[arg(long, allow_hyphen_values = true, value_name = "N")]
        priority: Option<i64>,
        /// Read the jobs from standard input, one a line (see above).
        #[arg(long, conflicts_with_all = ["run_at", "payload", "queue", "priority"])]
        stdin: bool,
    },
    /// Print a job's stored row, or null.
    #[command(after_help = "Example:\n  leasefence --db queue.db state resize-7")]
    State {
        /// The job id.
        job: String,
    },
    /// Take a lease on a job; prints the new fence, or null with the reason.
    #[command(
        after_help = "Example:\n  leasefence --db queue.db claim resize-7 --owner worker-1 --ttl 30"
    )]
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
    #[command(
        after_help = "Example:\n  leasefence --db queue.db renew resize-7 --owner worker-1 --fence 1 --ttl 30"
    )]
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
    #[command(
        after_help = "Example:\n  leasefence --db queue.db complete resize-7 --owner worker-1 --fence 1 --result thumbs/7.png"
    )]
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
    #[command(
        after_help = "Example:\n  leasefence --db queue.db release resize-7 --owner worker-1 --fence 1"
    )]
    Release {
        #[command(flatten)]
        lease: Lease,
    },
    /// Claim one job for several owners at once, each on its own thread and connection.
    #[command(
        after_help = "Example:\n  leasefence --db queue.db claim-many resize-7 --owner a,b,c --ttl 30"
    )]
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
    /// Claim the next claimable job (highest priority, then earliest lease end, then oldest).
    #[command(
        after_help = "Example:\n  leasefence --db queue.db claim-next --owner worker-1 --ttl 30\n  leasefence --db queue.db claim-next --owner worker-1 --ttl 30 --queue images --queue mail"
    )]
    ClaimNext {
        #[command(flatten)]
        claim: ClaimOptions,
    },
    /// Claim up to N jobs for one owner in one transaction: N successive claim-next calls.
    /// Prints the list of claimed jobs (empty, exit 1, when none was claimable).
    #[command(
        after_help = "Example:\n  leasefence --db queue.db claim-next-many --owner worker-1 --n 10 --ttl 30"
    )]
    ClaimNextMany {
        /// How many jobs to claim at most (1 to 1024).
        #[arg(long, value_name = "N")]
        n: usize,
        #[command(flatten)]
        claim: ClaimOptions,
    },
    /// Renew several of your leases in one transaction. Prints one answer per lease, in order:
    /// {"value": true} or {"value": false, "reason": ...}; exit 1 when any was refused.
    #[command(
        after_help = "Example:\n  leasefence --db queue.db renew-many --owner worker-1 --ttl 30 --leases '[{\"job\": \"a\", \"fence\": 1}, {\"job\": \"b\", \"fence\": 3}]'"
    )]
    RenewMany {
        /// Who holds the leases.
        #[arg(long)]
        owner: String,
        /// The leases as JSON: [{"job": "a", "fence": 1}, ...] (at most 1024).
        #[arg(long)]
        leases: String,
        /// New lease length in seconds from now (> 0).
        #[arg(long, allow_hyphen_values = true)]
        ttl: f64,
        #[command(flatten)]
        clock: Clock,
    },
    /// Complete several of your leases, each with its result, in one transaction. Prints one
    /// answer per lease, in order; exit 1 when any was refused.
    #[command(
        after_help = "Example:\n  leasefence --db queue.db complete-many --owner worker-1 --leases '[{\"job\": \"a\", \"fence\": 1, \"result\": \"ok\"}, {\"job\": \"b\", \"fence\": 3}]'"
    )]
    CompleteMany {
        /// Who holds the leases.
        #[arg(long)]
        owner: String,
        /// The leases as JSON: [{"job": "a", "fence": 1, "result": "..."}, ...] (result
        /// optional: null; at most 1024).
        #[arg(long)]
        leases: String,
        #[command(flatten)]
        clock: Clock,
    },
    /// Record a failure of your live lease: retry at a time, or make the job dead.
    #[command(group(clap::ArgGroup::new("then").required(true).args(["retry_at", "dead"])))]
    #[command(
        after_help = "Example:\n  leasefence --db queue.db fail resize-7 --owner worker-1 --fence 1 --retry-at 1767225600 --error timeout\n  leasefence --db queue.db fail resize-7 --owner worker-1 --fence 1 --dead --error 'bad image'"
    )]
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
    #[command(after_help = "Example:\n  leasefence --db queue.db revive resize-7")]
    Revive {
        /// The job id.
        job: String,
        #[command(flatten)]
        clock: Clock,
    },
    /// Print everything stored about a job: row, attempts, dead, payload, failures.
    #[command(after_help = "Example:\n  leasefence --db queue.db inspect resize-7")]
    Inspect {
        /// The job id.
        job: String,
    },
    /// Print how many jobs are queued, scheduled, leased, done and dead.
    ///
    /// Counts the stored jobs at --now. What one `work` process did (claimed, completed,
    /// failed, dead, leases lost, stale writes refused, renewals) is the JSON line it prints
    /// at exit.
    #[command(
        after_help = "Example:\n  leasefence --db queue.db stats\n  leasefence --db queue.db stats --queue images"
    )]
    Stats {
        /// Count only the jobs of this queue.
        #[arg(long, value_name = "NAME")]
        queue: Option<String>,
        #[command(flatten)]
        clock: Clock,
    },
    /// Print every queue that has a job, with its jobs in each state, as JSON.
    #[command(after_help = "Example:\n  leasefence --db queue.db queue-stats")]
    QueueStats {
        #[command(flatten)]
        clock: Clock,
    },
    /// Print, as JSON, each queue with a claimable job and since when its longest-waiting one has
    /// waited (`since`, Unix seconds: the later of its run time and its enqueue time).
    #[command(after_help = "Example:\n  leasefence --db queue.db oldest-waiting")]
    OldestWaiting {
        #[command(flatten)]
        clock: Clock,
    },
    /// Delete jobs that finished (completed, or dead unless --keep-dead) more than DURATION ago,
    /// with their payloads and failures, 1,000 per transaction so that workers go on meanwhile.
    /// Open and unfinished jobs are never touched. Prints how many were deleted. An id enqueued
    /// again later starts above every fence it had (the fence floor), so old tokens stay stale.
    #[command(
        after_help = "Example:\n  leasefence --db queue.db prune --older-than 7d\n  leasefence --db queue.db prune --older-than 30d --keep-dead\n\nRun it from cron, or give `work` and the worker runtimes a retention option."
    )]
    Prune {
        /// How long finished jobs are kept: `7d`, `12h`, `90m`, `1h 30m`, `45s`.
        #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
        older_than: std::time::Duration,
        /// Keep dead jobs (failed for good), whatever their age, to inspect or revive.
        #[arg(long)]
        keep_dead: bool,
        /// Delete at most N jobs in this run (default: every one that matches).
        #[arg(long, value_name = "N")]
        limit: Option<i64>,
        #[command(flatten)]
        clock: Clock,
    },
    /// Print the worker registry as JSON: every worker of the last hour (alive first) with its
    /// host, process id, last beat, counters and the leases it holds.
    #[command(after_help = "Example:\n  leasefence --db queue.db workers")]
    Workers {
        #[command(flatten)]
        clock: Clock,
    },
    /// Store a recurring job: each slot of CRON becomes the job NAME@YYYY-MM-DDTHH:MM:SSZ.
    ///
    /// CRON is 5 fields (minute hour day-of-month month day-of-week), read in --tz (default
    /// UTC). A running `work` process (or any worker) enqueues the due slot as it ticks, once
    /// however many run; `enqueue-due` does it by hand. An existing NAME is replaced (its latest
    /// slot enqueued is kept). Prints true; a bad pattern or time zone is an error (exit 2).
    #[command(
        after_help = "Example:\n  leasefence --db queue.db schedule nightly-report '30 2 * * *' --tz America/New_York --queue reports"
    )]
    Schedule {
        /// The schedule's name (its jobs' ids start with it).
        name: String,
        /// The 5-field cron pattern, e.g. '*/15 * * * *' or '0 9 * * MON-FRI'.
        cron: String,
        /// The IANA time zone the pattern is read in (e.g. Europe/Paris; default UTC).
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        /// The queue of its jobs (default: "default").
        #[arg(long, value_name = "NAME")]
        queue: Option<String>,
        /// The priority of its jobs (an integer; default 0).
        #[arg(long, allow_hyphen_values = true, value_name = "N")]
        priority: Option<i64>,
        /// The payload of its jobs.
        #[arg(long)]
        payload: Option<String>,
        /// After a downtime, enqueue only the latest slot (default) or every missed one
        /// (at most 1024).
        #[arg(long, value_parser = ["latest", "all"])]
        missed: Option<String>,
    },
    /// Remove a schedule; prints true, or false (exit 1) when there was none. Its jobs stay.
    #[command(after_help = "Example:\n  leasefence --db queue.db unschedule nightly-report")]
    Unschedule {
        /// The schedule's name.
        name: String,
    },
    /// Print every stored schedule (with `last`, its latest slot enqueued) as JSON.
    #[command(after_help = "Example:\n  leasefence --db queue.db schedules")]
    Schedules,
    /// Enqueue every schedule's due slot at --now; prints the ids added ([] when they exist).
    #[command(after_help = "Example:\n  leasefence --db queue.db enqueue-due")]
    EnqueueDue {
        #[command(flatten)]
        clock: Clock,
    },
    /// List jobs, one page at a time: a table for people, or with --json the page as the
    /// protocol's `list_jobs` answers it (`{"value": {"jobs": [...], "next"}}`).
    ///
    /// Read through an index, so it stays fast on a million jobs. Newest enqueued first; with
    /// --state queued: longest due first, scheduled: next due first, leased: next to expire
    /// first. When more jobs follow, the table's last line (and the JSON's `next`) is the cursor
    /// to pass to --after. One job in full (its attempts, payload and failures): `inspect JOB`.
    #[command(
        after_help = "Example:\n  leasefence --db queue.db jobs\n  leasefence --db queue.db jobs --state dead --queue mail --limit 20\n  leasefence --db queue.db jobs --json --after CURSOR"
    )]
    Jobs {
        /// Only jobs in this state.
        #[arg(long, value_parser = ["queued", "scheduled", "leased", "done", "dead"])]
        state: Option<String>,
        /// Only jobs of this queue.
        #[arg(long, value_name = "NAME")]
        queue: Option<String>,
        /// The cursor the previous page ended with (its `next`).
        #[arg(long, value_name = "CURSOR")]
        after: Option<String>,
        /// At most this many jobs (1 to 1000; default 50).
        #[arg(long)]
        limit: Option<i64>,
        /// Print the page as JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        clock: Clock,
    },
    /// Run any operation of the protocol by name, with an option for each of its parameters.
    ///
    /// The options are made from the operation's signature (`leasefence call OP --help` lists
    /// them), so every operation the library has is here, with the checks and the answer of `batch`; the
    /// other subcommands are the same operations with shorter spellings (positional job ids,
    /// repeated --queue). `now` defaults to the wall clock; lists of objects are JSON.
    #[command(
        disable_help_flag = true,
        after_help = "Example:\n  leasefence --db queue.db call fence-floor\n  leasefence --db queue.db call renew --job j --owner w --fence 1 --ttl 30"
    )]
    Call {
        /// The operation (`leasefence call --help` lists them) and its options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., value_name = "OP [OPTIONS]")]
        args: Vec<String>,
    },
    /// Serve the JSON-lines protocol: one request per stdin line, one response per line.
    #[command(
        after_help = "Example:\n  echo '{\"op\": \"enqueue\", \"job\": \"resize-7\"}' | leasefence --db queue.db batch"
    )]
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
    /// With --concurrency N, up to N commands run at once, each on a job of its own with its
    /// own lease: the jobs are claimed together as slots free up, their leases renewed
    /// together, and the completions that finish together written in one transaction. A lost
    /// lease terminates its own command only.
    ///
    /// At exit, prints its counters as one JSON line: {"claimed", "completed", "failed"
    /// (failures with a retry), "dead", "leases_lost", "stale_writes_refused",
    /// "renewals"}. `leasefence stats` counts the jobs by state. Exit status: 0 when
    /// stopped (a signal, or --until-empty), 2 bad usage, 3 storage error.
    #[command(
        after_help = "Example:\n  leasefence --db queue.db enqueue resize-7 --payload photo-7.jpg\n  leasefence --db queue.db work --ttl 30 --until-empty -- sh -c 'resize \"$LEASEFENCE_PAYLOAD\"'\n  leasefence --db queue.db stats"
    )]
    Work(crate::work::WorkArgs),
    /// Serve a local dashboard: a web page, a JSON API under /api/ and Prometheus /metrics.
    ///
    /// Listens on 127.0.0.1 by default and prints the URL with a random token
    /// (http://127.0.0.1:PORT/?token=...). Every request needs the token (?token=,
    /// Authorization: Bearer, or the cookie the page sets); a POST also needs a same-origin
    /// Origin (or Sec-Fetch-Site: same-origin) header. --read-only refuses every write.
    /// Listening beyond loopback needs an explicit --token.
    #[command(
        after_help = "Example:\n  leasefence --db queue.db ui\n  leasefence --db queue.db ui --listen 127.0.0.1:8080 --read-only"
    )]
    Ui(crate::ui::UiArgs),
    /// Remove a dot-file lock (<db>.lock) left by a killed process, if no process on this
    /// machine has the database open; otherwise list who has it open and remove nothing.
    ///
    /// Files shared with Node use dot-file locks. leasefence's own name their owner, and the
    /// next opener breaks one whose process died; SQLite's unix-dotfile VFS (an earlier
    /// leasefence) leaves an ownerless <db>.lock directory when killed, which every other
    /// process would wait on forever. Stop every process using the file, then run this (as
    /// root, or as the user of all of them: their open files are read from /proc). Prints
    /// {"value":"free"|"cleared"} (exit 0) or {"value":"in_use","pids":[...]} (exit 1).
    #[command(after_help = "Example:\n  leasefence --db queue.db unlock")]
    Unlock,
    /// Print every operation of the protocol as JSON: its name, its positional parameters (kind,
    /// optional, nullable), what it answers and what it does. Needs no --db.
    ///
    /// Bindings in other languages are generated from it; the npm package's method table and
    /// typings are (scripts/generate-operations.mjs).
    #[command(after_help = "Example:\n  leasefence operations")]
    Operations,
    /// Run your SQL statements in the transaction that checks your lease: committed only
    /// while the lease is current, all or nothing; with --complete the job completes in the
    /// same commit. Writes to `jobs` or a `leasefence_*` table are refused.
    #[command(
        after_help = "Example:\n  leasefence --db queue.db fenced resize-7 --owner worker-1 --fence 1 --complete --statements '[{\"sql\": \"INSERT INTO thumbs(job, path) VALUES ($1, $2)\", \"params\": [\"resize-7\", \"7.png\"]}]'"
    )]
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

impl Clock {
    pub(crate) fn now(&self) -> f64 {
        self.now.unwrap_or_else(crate::clock::wall_clock)
    }
}

#[cfg(test)]
mod tests {
    use super::{command, Cli, GROUPS};
    use clap::CommandFactory;

    /// The example lines of a subcommand's `--help`: after `Example:`, each indented line, the
    /// part a pipe feeds (`echo ... | leasefence ...`).
    fn examples(help: &str) -> Vec<String> {
        let Some((_, after)) = help.split_once("Example:\n") else {
            return Vec::new();
        };
        after
            .lines()
            .take_while(|line| line.starts_with("  "))
            .map(|line| line.rsplit(" | ").next().unwrap().trim().to_owned())
            .collect()
    }

    /// clap's own checks of the whole command, every subcommand built (unique names and argument
    /// groups, defaults that parse): a clash fails here, not at a user's first run of it.
    #[test]
    fn the_command_passes_claps_checks() {
        command().debug_assert();
    }

    /// Every subcommand's `--help` ends with an example of it, and every example is a command
    /// line this CLI reads (a renamed or removed flag fails here).
    #[test]
    fn every_subcommand_has_an_example_that_parses() {
        let cli = Cli::command();
        let mut checked = 0;
        for sub in cli.get_subcommands() {
            let name = sub.get_name();
            let help = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            let lines = examples(&help);
            assert!(
                !lines.is_empty(),
                "`leasefence {name} --help` shows no example"
            );
            let mut own = 0;
            for line in lines {
                let words = shlex::split(&line)
                    .unwrap_or_else(|| panic!("{name}: unbalanced quotes in {line}"));
                assert_eq!(
                    words.first().map(String::as_str),
                    Some("leasefence"),
                    "{line}"
                );
                let matches = Cli::command()
                    .try_get_matches_from(&words)
                    .unwrap_or_else(|err| panic!("{name}: the example `{line}` fails: {err}"));
                // A workflow may show its neighbours too (`work`: enqueue, work, stats).
                own += usize::from(matches.subcommand_name() == Some(name));
                checked += 1;
            }
            assert!(
                own > 0,
                "no example of `leasefence {name} --help` runs {name}"
            );
        }
        assert!(checked >= 30, "only {checked} examples found");
    }

    /// The grouped `--help` lists every subcommand exactly once, and names nothing else.
    #[test]
    fn the_grouped_help_lists_every_subcommand_once() {
        let listed: Vec<&str> = GROUPS
            .iter()
            .flat_map(|(_, names)| names.iter().copied())
            .collect();
        let cli = Cli::command();
        let mut real: Vec<&str> = cli.get_subcommands().map(|sub| sub.get_name()).collect();
        let mut sorted = listed.clone();
        sorted.sort_unstable();
        real.sort_unstable();
        assert_eq!(sorted, real, "GROUPS and the subcommands differ");
        let help = command().render_help().to_string();
        for name in listed {
            let lines = help
                .lines()
                .filter(|line| line.split_whitespace().next() == Some(name))
                .count();
            assert_eq!(lines, 1, "`{name}` is listed {lines} times in:\n{help}");
        }
        assert!(
            help.contains("Options:") && help.contains("--busy-timeout"),
            "{help}"
        );
    }
}
