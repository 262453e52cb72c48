//! `/metrics`: the jobs by queue and state in the Prometheus text exposition format (0.0.4).

use std::fmt::Write as _;

use leasefence::JobCounts;

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
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_label_values() {
        assert_eq!(super::label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
