//! `leasefence-bench prune`: what pruning a large backlog costs a fleet that keeps working
//! (docs/contract.md section 13). A file holds `--jobs` finished jobs (default 1,000,000); a
//! worker thread runs claim-then-complete cycles on a live queue, first alone (the baseline),
//! then while another connection prunes the whole backlog in its bounded transactions. Reports
//! each phase's claim latency (p50, p99, max) and the prune's time and rate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leasefence::{LeaseStore, Leases, NewJob, Prune};
use serde_json::json;

use super::{emit, percentile, Opts, Result, NOW, TTL};

pub fn prune(opts: &Opts) -> Result<()> {
    let dir = opts.dir()?;
    let jobs = opts.num("jobs", 1_000_000)?;
    let baseline_secs = opts.num("seconds", 10)? as f64;
    let path = dir.join("prune.db");
    for suffix in ["", "-wal", "-shm", "-leasefence-gate"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let store = LeaseStore::open(&path)?;
    let seeding = Instant::now();
    let batch = leasefence::MAX_BATCH;
    let mut made = 0;
    while made < jobs {
        let n = batch.min(jobs - made);
        let list: Vec<NewJob> = (made..made + n)
            .map(|i| NewJob::new(format!("old-{i:08}")).queue("old"))
            .collect();
        store.enqueue_many(&list)?;
        let claimed = store.claim_next_many_in(Some(&["old"]), "seeder", n, NOW, TTL)?;
        let done: Vec<leasefence::LeaseCompletion> = claimed
            .iter()
            .map(|c| leasefence::LeaseCompletion::new(c.lease(), Some("ok")))
            .collect();
        store.complete_many(&done, NOW + 1.0)?;
        made += n;
    }
    let seeded_in = seeding.elapsed().as_secs_f64();
    drop(store);
    eprintln!("prune: {jobs} finished jobs seeded in {seeded_in:.1} s");

    // The fleet: one worker's claim-then-complete cycles on the live queue, timing each claim.
    let fleet = |phase: &str, stop: Arc<AtomicBool>, until: Option<Instant>| -> Result<Vec<f64>> {
        let store = LeaseStore::open(&path)?;
        let mut took = Vec::new();
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) && until.is_none_or(|t| Instant::now() < t) {
            let job = format!("{phase}-{i}");
            i += 1;
            store.enqueue_job(&NewJob::new(&job).queue("live"))?;
            let started = Instant::now();
            let claimed = store
                .claim_next_in(Some(&["live"]), "fleet", NOW + 2.0, TTL)?
                .ok_or("the live job was not claimable")?;
            took.push(started.elapsed().as_secs_f64() * 1000.0);
            if !store
                .complete(&claimed.lease(), NOW + 2.0, Some("ok"))?
                .is_granted()
            {
                return Err("a live job's completion was refused".into());
            }
        }
        took.sort_by(f64::total_cmp);
        Ok(took)
    };
    let summary = |took: &[f64]| {
        json!({"claims": took.len(), "p50_ms": percentile(took, 0.5),
               "p99_ms": percentile(took, 0.99), "max_ms": took.last().copied().unwrap_or(0.0)})
    };
    let baseline = fleet(
        "alone",
        Arc::new(AtomicBool::new(false)),
        Some(Instant::now() + Duration::from_secs_f64(baseline_secs)),
    )?;

    let stop = Arc::new(AtomicBool::new(false));
    let (deleted, prune_secs, during) = std::thread::scope(|scope| -> Result<_> {
        let worker = scope.spawn(|| fleet("during", Arc::clone(&stop), None));
        // Let the fleet get going, then prune everything that finished before the live jobs.
        std::thread::sleep(Duration::from_millis(200));
        let pruner = LeaseStore::open(&path)?;
        let started = Instant::now();
        let deleted = pruner.prune(&Prune::finished_before(NOW + 1.5));
        let prune_secs = started.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        let during = worker.join().map_err(|_| "the fleet thread panicked")??;
        Ok((deleted?, prune_secs, during))
    })?;
    if deleted != jobs as u64 {
        return Err(format!("prune deleted {deleted} jobs, {jobs} were finished").into());
    }
    let size = std::fs::metadata(&path)?.len();
    emit(json!({
        "suite": "prune", "jobs": jobs, "seeded_s": seeded_in,
        "prune_s": prune_secs, "deleted_per_s": deleted as f64 / prune_secs,
        "transactions": jobs.div_ceil(leasefence::PRUNE_BATCH),
        "baseline": summary(&baseline), "during_prune": summary(&during),
        "p99_ratio": percentile(&during, 0.99) / percentile(&baseline, 0.99),
        "file_bytes_after": size,
    }));
    Ok(())
}
