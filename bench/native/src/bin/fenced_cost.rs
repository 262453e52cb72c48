//! What a fenced write costs next to a plain `complete`, in one run (a timing loop, run by hand):
//!
//!   cargo run --release -p leasefence-bench --bin fenced_cost [-- JOBS]
//!   bash scripts/postgres.sh cargo run --release -p leasefence-bench --bin fenced_cost
//!
//! On an SQLite file in a temp directory (the machine's disk, fsync included), and on PostgreSQL
//! when LEASEFENCE_PG_URL is set. Per variant, JOBS jobs are claimed first; only the finishing
//! calls are timed:
//! - `complete`: the plain complete (the baseline, ratio 1);
//! - `complete + insert`: the unfenced equivalent: complete, then the caller's INSERT in a
//!   transaction of its own (two commits, not atomic);
//! - `fenced, no statements, complete`: the fenced transaction's own overhead;
//! - `fenced insert + complete`: the caller's INSERT and the completion in one fenced commit.

use std::time::Instant;

use leasefence::{Finish, Lease, Leases, Statement};

/// The four variants take turns job by job, so that a load that drifts during the run (other
/// processes, the disk) weighs on each alike; each call is timed alone.
fn run(name: &str, store: &dyn Leases, plain_insert: &mut dyn FnMut(&str), jobs: usize) {
    println!("{name} ({jobs} jobs per variant, interleaved)");
    let prepare = |prefix: &str| -> Vec<(String, i64)> {
        (0..jobs)
            .map(|i| {
                let job = format!("{prefix}-{i}");
                store.enqueue(&job).unwrap();
                let fence = store.claim(&job, "w", 0.0, 1e9).unwrap().granted().unwrap();
                (job, fence)
            })
            .collect()
    };
    let lists = [
        prepare("plain"),
        prepare("two"),
        prepare("empty"),
        prepare("fenced"),
    ];
    let labels = [
        "complete",
        "complete + insert (2 commits)",
        "fenced, no statements, complete",
        "fenced insert + complete (1 commit)",
    ];
    let mut spent = [0.0f64; 4];
    for i in 0..jobs {
        for (variant, list) in lists.iter().enumerate() {
            let (job, fence) = &list[i];
            let lease = Lease::new(job.as_str(), "w", *fence);
            let done = || Finish::Complete(Some("r".into()));
            let started = Instant::now();
            let granted = match variant {
                0 => store.complete(&lease, 1.0, Some("r")).unwrap(),
                1 => {
                    let outcome = store.complete(&lease, 1.0, Some("r")).unwrap();
                    plain_insert(job);
                    outcome
                }
                2 => store.fenced(&lease, 1.0, &[], done()).unwrap(),
                _ => {
                    let insert = [Statement::new(
                        "INSERT INTO outcomes(job, v) VALUES ($1, $2)",
                        [job.as_str().into(), (i as i64).into()],
                    )];
                    store.fenced(&lease, 1.0, &insert, done()).unwrap()
                }
            };
            spent[variant] += started.elapsed().as_secs_f64();
            assert!(granted.is_granted());
        }
    }
    for (label, total) in labels.iter().zip(spent) {
        let per = total / jobs as f64;
        println!(
            "  {label:<36} {:>8.1} us/op   x{:.2}",
            per * 1e6,
            total / spent[0]
        );
    }
}

fn main() {
    let jobs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let dir = std::env::temp_dir().join(format!("leasefence-fenced-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("q.db");
    let store = leasefence::LeaseStore::open(&path).unwrap();
    let outcomes = "CREATE TABLE outcomes(job TEXT PRIMARY KEY, v INTEGER)";
    store.connection().execute(outcomes, []).unwrap();
    let other = leasefence::LeaseStore::open(&path).unwrap();
    let mut insert = |job: &str| {
        other
            .connection()
            .execute("INSERT INTO outcomes(job, v) VALUES (?1, 0)", [job])
            .unwrap();
    };
    run("SQLite file (default options)", &store, &mut insert, jobs);
    drop((store, other));
    let _ = std::fs::remove_dir_all(&dir);

    if let Ok(base) = std::env::var("LEASEFENCE_PG_URL") {
        let schema = format!("lf_fenced_cost_{}", std::process::id());
        let mut admin = postgres::Client::connect(&base, postgres::NoTls).unwrap();
        // Identifiers cannot be bound; this one is made from fixed characters and a number.
        admin
            .batch_execute(&format!(
                "CREATE SCHEMA {schema}; CREATE TABLE {schema}.outcomes(job TEXT PRIMARY KEY, v BIGINT)"
            ))
            .unwrap();
        let separator = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{separator}options=-csearch_path%3D{schema}");
        let store = leasefence::open(&url).unwrap();
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let mut insert = |job: &str| {
            client
                .execute("INSERT INTO outcomes(job, v) VALUES ($1, 0)", &[&job])
                .unwrap();
        };
        run("PostgreSQL", store.as_ref(), &mut insert, jobs.min(1000));
        drop(store);
        admin
            .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .unwrap();
    }
}
