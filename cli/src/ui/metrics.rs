//! `/metrics`: the jobs by queue and state, and the worker registry, in the Prometheus text
//! exposition format (0.0.4).

use std::fmt::Write as _;

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
    render_workers(&mut out, &sample.workers);
    out
}

/// The worker registry: how many workers are alive and gone, and each worker's counters as its
/// last beat reported them (`leasefence_worker_<counter>_total{worker, host}`).
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
    let helps = [
        ("claimed", "Jobs the worker claimed."),
        ("completed", "Jobs the worker completed."),
        ("failed", "Failures the worker recorded with a retry time."),
        ("dead", "Jobs the worker made dead."),
        (
            "leases_lost",
            "Leases the worker lost while its handler ran.",
        ),
        (
            "stale_writes_refused",
            "Writes of the worker the store refused: its lease was no longer current.",
        ),
        ("renewals", "Lease renewals the store granted the worker."),
    ];
    for (i, (name, help)) in helps.iter().enumerate() {
        let _ = writeln!(out, "# HELP leasefence_worker_{name}_total {help}");
        let _ = writeln!(out, "# TYPE leasefence_worker_{name}_total counter");
        for w in workers {
            let value = w.counters.named()[i].1;
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
    #[test]
    fn escapes_label_values() {
        assert_eq!(super::label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
