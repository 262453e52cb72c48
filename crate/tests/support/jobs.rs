//! Jobs for the tests of many threads: a numbered set, enqueued in batches.

use leasefence::{Leases, NewJob};

/// Enqueues `count` jobs `PREFIX-00000`, `PREFIX-00001`, ... (all new) and returns their ids in
/// order.
pub fn enqueue_jobs(store: &dyn Leases, prefix: &str, count: usize) -> Vec<String> {
    let ids: Vec<String> = (0..count).map(|i| format!("{prefix}-{i:05}")).collect();
    for chunk in ids.chunks(leasefence::MAX_BATCH) {
        let jobs: Vec<NewJob> = chunk.iter().map(NewJob::new).collect();
        assert!(store
            .enqueue_many(&jobs)
            .unwrap()
            .iter()
            .all(|&added| added));
    }
    ids
}
