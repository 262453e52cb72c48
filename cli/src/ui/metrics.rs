//! `/metrics`: the jobs by queue and state, and the worker registry, in the Prometheus text
//! exposition format (0.0.4).

use std::fmt::Write as _;

use leasefence::worker::Counters;
use leasefence::{JobCounts, WorkerInfo};

use super::sampler::Sample;

/// A label value escaped as the format asks: backslash, double quote and newline.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn by_state(c: &JobCounts) -> [(&'static str, u64); 5] {
    [
        ("queued", c.queued),
        ("scheduled", c.scheduled),
        ("leased", c.leased),
        ("done", c.done),
        ("dead", c.dead),
    ]
}

/// The exposition text of a sample: `leasefence_jobs{queue,state}`, and the totals
/// `leasefence_jobs_leased` and `leasefence_jobs_dead` over every queue.
pub(crate) fn render(sample: &Sample) -> String {
    let (all, per_queue) = (&sample.all, &sample.queues);
    let mut out = String::new();
    out.push_str("# HELP leasefence_jobs Jobs in each state, by queue.\n");
    out.push_str("# TYPE leasefence_jobs gauge\n");
    for q in per_queue {
        let queue = &q.queue;
        for (state, n) in by_state(&q.counts) {
            let _ = writeln!(
                out,
                "leasefence_jobs{{queue=\"{}\",state=\"{state}\"}} {n}",
                label(queue)
            );
        }
    }
    out.push_str("# HELP leasefence_jobs_leased Jobs held by a live lease, over every queue.\n");
    out.push_str("# TYPE leasefence_jobs_leased gauge\n");
    let _ = writeln!(out, "leasefence_jobs_leased {}", all.leased);
    out.push_str("# HELP leasefence_jobs_dead Dead jobs (failed for good), over every queue.\n");
    out.push_str("# TYPE leasefence_jobs_dead gauge\n");
    let _ = writeln!(out, "leasefence_jobs_dead {}", all.dead);
    out.push_str(
        "# HELP leasefence_oldest_waiting_job_age_seconds How long the longest-waiting claimable \
         job of the queue has waited (0: none waits).\n",
    );
    out.push_str("# TYPE leasefence_oldest_waiting_job_age_seconds gauge\n");
    for q in per_queue {
        let age = sample
            .waiting
            .iter()
            .find(|w| w.queue == q.queue)
            .map_or(0.0, |w| (sample.at - w.since).max(0.0));
        let _ = writeln!(
            out,
            "leasefence_oldest_waiting_job_age_seconds{{queue=\"{}\"}} {age}",
            label(&q.queue)
        );
    }
    out.push_str(
        "# HELP leasefence_jobs_stored Rows of the jobs table, every state (what retention keeps \
         in check).\n",
    );
    out.push_str("# TYPE leasefence_jobs_stored gauge\n");
    let _ = writeln!(out, "leasefence_jobs_stored {}", super::api::stored(all));
    out.push_str(
        "# HELP leasefence_fence_floor The highest fence prune ever deleted; new jobs start \
         there.\n",
    );
    out.push_str("# TYPE leasefence_fence_floor gauge\n");
    let _ = writeln!(out, "leasefence_fence_floor {}", sample.floor);
    render_workers(&mut out, &sample.workers);
    out
}

/// Each worker counter's help text, keyed by the counter's name (`Counters::named`), as is the
/// value of each series: no order has to match another (this table is alphabetical).
const COUNTER_HELP: [(&str, &str); 7] = [
    ("claimed", "Jobs the worker claimed."),
    ("completed", "Jobs the worker completed."),
    ("dead", "Jobs the worker made dead."),
    ("failed", "Failures the worker recorded with a retry time."),
    (
        "leases_lost",
        "Leases the worker lost while its handler ran.",
    ),
    ("renewals", "Lease renewals the store granted the worker."),
    (
        "stale_writes_refused",
        "Writes of the worker the store refused: its lease was no longer current.",
    ),
];

/// What every worker series says of its labels (label cardinality: one series a worker row).
const LABELS: &str = "worker: the owner name it leases under (leasefence work's default, \
work-HOST-PID, is new at each start; --owner keeps one), host: its machine; rows gone for an \
hour leave.";

/// The worker registry: how many workers are alive and gone, and each worker's counters as its
/// last beat reported them (`leasefence_worker_<counter>_total{worker, host}`). The `worker`
/// label is the owner string the worker chose, kept as it is: it is the registry's key (one row
/// an owner), and two processes under one name would be one row, so it is not shortened here.
fn render_workers(out: &mut String, workers: &[WorkerInfo]) {
    let alive = workers.iter().filter(|w| w.alive).count();
    out.push_str("# HELP leasefence_workers Workers in the registry, alive or gone (gone rows are pruned after an hour).\n");
    out.push_str("# TYPE leasefence_workers gauge\n");
    let _ = writeln!(out, "leasefence_workers{{status=\"alive\"}} {alive}");
    let _ = writeln!(
        out,
        "leasefence_workers{{status=\"gone\"}} {}",
        workers.len() - alive
    );
    // The families in the counters' own order; each one's help and values found by its name.
    for (name, _) in Counters::default().named() {
        let help = COUNTER_HELP
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("A worker counter.", |(_, help)| help);
        let _ = writeln!(
            out,
            "# HELP leasefence_worker_{name}_total {help} Labels: {LABELS}"
        );
        let _ = writeln!(out, "# TYPE leasefence_worker_{name}_total counter");
        for w in workers {
            let named = w.counters.named();
            let Some(&(_, value)) = named.iter().find(|(n, _)| *n == name) else {
                continue;
            };
            let _ = writeln!(
                out,
                "leasefence_worker_{name}_total{{worker=\"{}\",host=\"{}\"}} {value}",
                label(&w.owner),
                label(&w.host)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use leasefence::worker::Counters;
    use leasefence::WorkerInfo;

    #[test]
    fn escapes_label_values() {
        assert_eq!(super::label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    /// Each series gets the help text and the value of its own counter, by name: every counter
    /// has a help, and a worker whose counters all differ shows each under its name.
    #[test]
    fn worker_counters_are_paired_with_their_help_by_name() {
        let counters = Counters {
            claimed: 1,
            completed: 2,
            failed: 3,
            dead: 4,
            leases_lost: 5,
            stale_writes_refused: 6,
            renewals: 7,
        };
        let worker = WorkerInfo {
            owner: "w".into(),
            host: "h".into(),
            pid: 1,
            started: 0.0,
            last_seen: 0.0,
            until: 0.0,
            stopped: None,
            alive: true,
            counters,
            held: 0,
            holding: Vec::new(),
        };
        let mut out = String::new();
        super::render_workers(&mut out, &[worker]);
        let lines: Vec<&str> = out.lines().collect();
        for (name, value) in counters.named() {
            let help = super::COUNTER_HELP
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("no help text for the counter {name}"))
                .1;
            let family = format!("leasefence_worker_{name}_total");
            let at = lines
                .iter()
                .position(|l| l.starts_with(&format!("# HELP {family} ")))
                .unwrap_or_else(|| panic!("no HELP for {family}:\n{out}"));
            assert!(lines[at].contains(help), "{}", lines[at]);
            assert_eq!(lines[at + 1], format!("# TYPE {family} counter"));
            assert_eq!(
                lines[at + 2],
                format!("{family}{{worker=\"w\",host=\"h\"}} {value}")
            );
        }
        assert_eq!(super::COUNTER_HELP.len(), counters.named().len());
    }
}
