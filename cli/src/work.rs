//! `leasefence work -- CMD [ARGS...]`: the worker runtime (docs/contract.md section 9) with a
//! command as the handler, run once per claimed job; `--concurrency N` runs up to N at once.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use leasefence::worker::{
    Backoff, CancelToken, Job, Liveness, Retention, StopHandle, Worker, WorkerOptions,
};
use leasefence::OpenOptions;

/// Payloads up to this size are also put in `LEASEFENCE_PAYLOAD` (larger ones would exceed the
/// kernel's limit for one environment string); every payload is written to the command's stdin.
const MAX_ENV_PAYLOAD: usize = 64 * 1024;

/// The longest wait between two looks at whether the command has exited.
const MAX_POLL: Duration = Duration::from_millis(10);

/// Options of `leasefence work`, parsed by clap (the subcommand's own help is in main.rs).
#[derive(clap::Args)]
pub struct WorkArgs {
    /// Lease length in seconds (> 0).
    #[arg(long, default_value_t = 30.0)]
    pub ttl: f64,
    /// Attempts per job; the failure of the last makes the job dead.
    #[arg(long, default_value_t = 5)]
    pub max_attempts: i64,
    /// Stop when nothing is claimable (instead of polling).
    #[arg(long)]
    pub until_empty: bool,
    /// Seconds between SIGTERM and SIGKILL for a command whose lease is lost.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub grace: f64,
    /// The lease owner (default: work-HOSTNAME-PID).
    #[arg(long)]
    pub owner: Option<String>,
    /// Seconds between renews (default: ttl/3).
    #[arg(long, value_name = "SECONDS")]
    pub renew_every: Option<f64>,
    /// Wait after a job's first failure, in seconds; it doubles with each attempt.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pub backoff: f64,
    /// The longest wait between attempts, in seconds.
    #[arg(long, default_value_t = 300.0, value_name = "SECONDS")]
    pub backoff_max: f64,
    /// Up to this fraction of each wait is cut at random (0 to 1), so failed jobs spread.
    #[arg(long, default_value_t = 0.5, value_name = "FRACTION")]
    pub backoff_jitter: f64,
    /// Stop renewing after this many seconds: the lease then ends and CMD is terminated
    /// (default: renew as long as CMD runs).
    #[arg(long, value_name = "SECONDS")]
    pub max_run_time: Option<f64>,
    /// The longest wait between looks when nothing is claimable: an idle worker is woken sooner
    /// by a commit to the SQLite file (Linux) or a PostgreSQL enqueue, and when the next job
    /// falls due.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pub idle: f64,
    /// How many commands run at once (1 to 1024), each on a job of its own.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub concurrency: usize,
    /// Serve only this queue; repeat for several (default: every queue). Among the claimable
    /// jobs of the queues served, the highest priority runs first.
    #[arg(long = "queue", value_name = "NAME")]
    pub queues: Vec<String>,
    /// Prune completed jobs older than this as the worker runs (`7d`, `12h`; default: keep
    /// them), at most once a minute: see `leasefence prune`.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub keep_done: Option<Duration>,
    /// With --keep-done: prune dead jobs older than this too (default: keep them for ever).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration,
          requires = "keep_done")]
    pub keep_dead: Option<Duration>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

fn check_seconds(name: &str, value: f64, zero_ok: bool) -> Result<(), String> {
    let ok = value.is_finite() && (value > 0.0 || (zero_ok && value == 0.0));
    if ok {
        Ok(())
    } else {
        let bound = if zero_ok { ">= 0" } else { "> 0" };
        Err(format!(
            "--{name} must be a finite number of seconds {bound}, got {value}"
        ))
    }
}

fn check(args: &WorkArgs) -> Result<(), String> {
    check_seconds("grace", args.grace, true)?;
    check_seconds("backoff", args.backoff, true)?;
    check_seconds("backoff-max", args.backoff_max, true)?;
    check_seconds("idle", args.idle, false)?;
    if let Some(limit) = args.max_run_time {
        check_seconds("max-run-time", limit, false)?;
    }
    if !(0.0..=1.0).contains(&args.backoff_jitter) {
        return Err(format!(
            "--backoff-jitter must be between 0 and 1, got {}",
            args.backoff_jitter
        ));
    }
    if args.command.is_empty() {
        return Err("give the command to run after --: leasefence work -- CMD [ARGS...]".into());
    }
    Ok(())
}

fn default_owner() -> String {
    let mut name = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that much.
    let ok = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) } == 0;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let host = if ok {
        String::from_utf8_lossy(&name[..end]).into_owned()
    } else {
        "host".into()
    };
    format!("work-{host}-{}", std::process::id())
}

/// SIGINT and SIGTERM go to one thread that asks the worker to stop (no handler code runs in
/// signal context). The mask is set before any other thread starts, so they all inherit it;
/// commands are started with an empty mask again (`run_command`).
fn watch_stop_signals(stop: StopHandle) -> Result<(), String> {
    // SAFETY: plain libc calls on a local, initialized sigset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(format!("cannot block SIGINT/SIGTERM: error {rc}"));
        }
        std::thread::Builder::new()
            .name("leasefence-signals".into())
            .spawn(move || loop {
                let mut signal: libc::c_int = 0;
                if libc::sigwait(&set, &mut signal) == 0 {
                    stop.interrupt();
                }
            })
            .map_err(|err| format!("cannot start the signal thread: {err}"))?;
    }
    Ok(())
}

/// Runs `leasefence work`; answers the exit status.
pub fn run(db: &Path, open: &OpenOptions, args: WorkArgs) -> i32 {
    if let Err(message) = check(&args) {
        eprintln!("leasefence work: {message}");
        return crate::exit::EXIT_INVALID;
    }
    let owner = args.owner.clone().unwrap_or_else(default_owner);
    let mut options = WorkerOptions::new(owner.clone())
        .ttl(args.ttl)
        .max_attempts(args.max_attempts)
        .until_empty(args.until_empty)
        .concurrency(args.concurrency)
        .idle_poll(Duration::from_secs_f64(args.idle))
        .backoff(
            Backoff::exponential(
                Duration::from_secs_f64(args.backoff),
                Duration::from_secs_f64(args.backoff_max),
            )
            .jitter(args.backoff_jitter),
        )
        // A command cannot call checkpoint: renew while it runs, up to --max-run-time.
        .liveness(match args.max_run_time {
            Some(limit) => Liveness::MaxRunTime(Duration::from_secs_f64(limit)),
            None => Liveness::Unbounded,
        });
    if let Some(every) = args.renew_every {
        options = options.renew_every(every);
    }
    if !args.queues.is_empty() {
        options = options.queues(args.queues.iter().cloned());
    }
    if let Some(done) = args.keep_done {
        options = options.retention(Retention::done(done).dead(args.keep_dead));
    }
    let mut worker = match Worker::open(db, open, options) {
        Ok(worker) => worker,
        Err(err) => {
            eprintln!("leasefence work: {err}");
            return crate::exit::exit_status_of(err.error_code());
        }
    };
    if let Err(message) = watch_stop_signals(worker.stop_handle()) {
        eprintln!("leasefence work: {message}");
        return crate::exit::EXIT_STORAGE;
    }
    let grace = Duration::from_secs_f64(args.grace);
    let db_text = db.as_os_str().to_owned();
    let answer =
        worker.run_concurrent(|job| run_command(&args.command, &db_text, &owner, job, grace));
    let counters = worker.counters();
    println!("{}", serde_json::to_string(&counters).unwrap_or_default());
    match answer {
        Ok(_) => crate::exit::EXIT_OK,
        Err(err) => {
            eprintln!("leasefence work: stopped: {err}");
            crate::exit::EXIT_STORAGE
        }
    }
}

/// What `work` keeps of a command's output pipe, so that its memory stays bounded whatever the
/// command writes (docs/contract.md section 13): standard output's first bytes up to the
/// result limit (the result; more fails the attempt), standard error's last bytes (the error
/// text: what finally went wrong is at its end). The rest is read and dropped, so the command
/// never blocks on a full pipe. `0`: keep everything.
#[derive(Clone, Copy)]
enum Keep {
    Head(usize),
    Tail(usize),
}

/// The last 64 KiB of standard error are kept for a failed attempt's error text.
const STDERR_KEPT: usize = 64 << 10;

/// What one of the command's output pipes has delivered so far: the bytes kept, how many came
/// in all, and whether it reached its end.
#[derive(Default)]
struct Piped {
    kept: Vec<u8>,
    total: u64,
    ended: bool,
}

impl Piped {
    fn take_in(&mut self, chunk: &[u8], keep: Keep) {
        self.total += chunk.len() as u64;
        match keep {
            Keep::Head(0) | Keep::Tail(0) => self.kept.extend_from_slice(chunk),
            Keep::Head(limit) => {
                let room = limit.saturating_sub(self.kept.len()).min(chunk.len());
                self.kept.extend_from_slice(&chunk[..room]);
            }
            Keep::Tail(limit) => {
                self.kept.extend_from_slice(chunk);
                // Trimmed in halves, not per chunk: each byte is moved a bounded number of times.
                if self.kept.len() > 2 * limit {
                    self.kept.drain(..self.kept.len() - limit);
                }
            }
        }
    }

    /// The bytes kept, a tail cut to its limit.
    fn finish(&mut self, keep: Keep) -> (Vec<u8>, u64) {
        let mut kept = std::mem::take(&mut self.kept);
        if let Keep::Tail(limit) = keep {
            if limit != 0 && kept.len() > limit {
                kept.drain(..kept.len() - limit);
            }
        }
        (kept, self.total)
    }
}

type Collected = Arc<(Mutex<Piped>, Condvar)>;

fn reader(mut pipe: impl Read + Send + 'static, keep: Keep) -> Collected {
    let collected: Collected = Arc::default();
    let filling = Arc::clone(&collected);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            let read = pipe.read(&mut chunk);
            let (lock, ended) = &*filling;
            let mut state = lock.lock().unwrap_or_else(|p| p.into_inner());
            match read {
                Ok(0) | Err(_) => {
                    state.ended = true;
                    ended.notify_all();
                    return;
                }
                Ok(n) => state.take_in(&chunk[..n], keep),
            }
        }
    });
    collected
}

/// The pipe's kept bytes and its total length once it reaches its end, waiting until
/// `deadline` at most (a process the command left behind may hold the pipe open); `None` when
/// it did not end in time.
fn collect(collected: &Collected, keep: Keep, deadline: Instant) -> Option<(Vec<u8>, u64)> {
    let (lock, ended) = &**collected;
    let mut state = lock.lock().unwrap_or_else(|p| p.into_inner());
    while !state.ended {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        state = ended
            .wait_timeout(state, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    Some(state.finish(keep))
}

fn signal_group(child: &Child, signal: libc::c_int) {
    // The command leads its own process group (process_group(0)), so its children get the
    // signal too. SAFETY: kill(2) with a negative pid signals that group; no memory involved.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), signal);
    }
}

/// SIGTERM to the command's group, SIGKILL after `grace` (stragglers of the group included).
fn terminate(child: &mut Child, grace: Duration) {
    signal_group(child, libc::SIGTERM);
    let start = Instant::now();
    while start.elapsed() < grace {
        if matches!(child.try_wait(), Ok(Some(_))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    signal_group(child, libc::SIGKILL);
    let _ = child.wait();
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("the command exited with status {code}"),
        (None, Some(signal)) => format!("the command was killed by signal {signal}"),
        _ => format!("the command ended with {status}"),
    }
}

/// Waits for the command or the token, whichever comes first; `None` when cancelled.
fn wait_or_cancel(child: &mut Child, token: &CancelToken) -> std::io::Result<Option<ExitStatus>> {
    let mut poll = Duration::from_micros(250);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if token.wait_timeout(poll) {
            return Ok(None);
        }
        poll = (poll * 2).min(MAX_POLL);
    }
}

fn run_command(
    command: &[OsString],
    db: &OsString,
    owner: &str,
    job: &Job,
    grace: Duration,
) -> leasefence::worker::HandlerResult {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..])
        .env("LEASEFENCE_DB", db)
        .env("LEASEFENCE_JOB", &job.id)
        .env("LEASEFENCE_FENCE", job.fence.to_string())
        .env("LEASEFENCE_ATTEMPT", job.attempt().to_string())
        .env("LEASEFENCE_OWNER", owner)
        .env_remove("LEASEFENCE_PAYLOAD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: only sigprocmask between fork and exec, which is async-signal-safe. `work` blocks
    // SIGINT and SIGTERM for its signal thread; the command must get them as usual.
    unsafe {
        cmd.pre_exec(|| {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    if let Some(payload) = job
        .payload
        .as_deref()
        .filter(|p| p.len() <= MAX_ENV_PAYLOAD)
    {
        cmd.env("LEASEFENCE_PAYLOAD", payload);
    }
    let mut child = cmd
        .spawn()
        .map_err(|err| format!("cannot start {}: {err}", command[0].to_string_lossy()))?;
    let payload = job.payload.clone().unwrap_or_default();
    let mut stdin = child.stdin.take().expect("piped");
    // A thread, so a command that never reads a large payload cannot block the worker; a
    // command that exits without reading it is no error.
    std::thread::spawn(move || {
        let _ = stdin.write_all(payload.as_bytes());
    });
    // The CLI opens its store with the default limits (section 13).
    let result_limit = leasefence::Limits::default().result_bytes();
    let (keep_out, keep_err) = (Keep::Head(result_limit), Keep::Tail(STDERR_KEPT));
    let stdout = reader(child.stdout.take().expect("piped"), keep_out);
    let stderr = reader(child.stderr.take().expect("piped"), keep_err);
    let status = match wait_or_cancel(&mut child, &job.token) {
        Ok(status) => status,
        Err(err) => {
            terminate(&mut child, grace);
            return Err(format!("cannot wait for the command: {err}").into());
        }
    };
    let Some(status) = status else {
        // Lost lease or interrupted: the runtime discards whatever we answer.
        terminate(&mut child, grace);
        let why = job
            .token
            .reason()
            .map(|r| r.to_string())
            .unwrap_or_default();
        return Err(format!("the command was terminated: {why}").into());
    };
    // The command has exited; its output ends when the last process holding the pipes does. One
    // it left behind gets `grace` to let go, then the group is killed and what came is taken.
    let deadline = Instant::now() + grace;
    let mut out = collect(&stdout, keep_out, deadline);
    let mut err = collect(&stderr, keep_err, deadline);
    if out.is_none() || err.is_none() {
        signal_group(&child, libc::SIGKILL);
        let deadline = Instant::now() + Duration::from_secs(1);
        out = out.or_else(|| collect(&stdout, keep_out, deadline));
        err = err.or_else(|| collect(&stderr, keep_err, deadline));
    }
    let ((stdout, written), (stderr, _)) = (out.unwrap_or_default(), err.unwrap_or_default());
    if status.success() && result_limit != 0 && written > result_limit as u64 {
        Err(format!(
            "the command wrote {written} bytes to standard output, over the store's result \
             limit of {result_limit} bytes: write large output elsewhere (a file, object \
             storage) and print a reference to it"
        )
        .into())
    } else if status.success() {
        Ok(Some(String::from_utf8_lossy(&stdout).into_owned()))
    } else if stderr.is_empty() {
        Err(describe(status).into())
    } else {
        Err(String::from_utf8_lossy(&stderr).into_owned().into())
    }
}
