#![cfg(not(target_arch = "wasm32"))]
//! Runs the shared contract vectors (`tests/vectors/*.json`) through the JSON-lines protocol on a
//! real database file, exactly as `leasefence batch` would. The Node and browser suites run the
//! same files through their own APIs; `postgres.rs` runs them on PostgreSQL. The runner itself is
//! `support/vectors.rs`.

mod support;

use leasefence::protocol::{Backend, TargetBackend};
use leasefence::{Error, LeaseStore, Leases, OpenOptions, SharedStore};
use serde_json::Value;
use support::vectors::{check_step, run_all};

#[test]
fn every_vector_passes_through_the_protocol() {
    let mut dirs = Vec::new();
    let (failures, steps) = run_all(|_| {
        let dir = tempfile::tempdir().unwrap();
        let backend = TargetBackend::new(dir.path().join("vector.db"), OpenOptions::new());
        dirs.push(dir);
        Box::new(backend) as Box<dyn Backend>
    });
    assert!(
        failures.is_empty(),
        "{} vector(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(steps > 100, "only {steps} steps ran");
}

/// The protocol's requests on a [`SharedStore`]: every vector through its group commit.
struct Shared(SharedStore);

impl Backend for Shared {
    fn store(&mut self) -> leasefence::Result<&LeaseStore> {
        Err(Error::InvalidArgument {
            argument: "store",
            message: "a shared store lends out no LeaseStore; use Backend::leases".into(),
        })
    }

    fn leases(&mut self) -> leasefence::Result<&dyn Leases> {
        Ok(&self.0)
    }
}

#[test]
fn every_vector_passes_through_a_shared_store() {
    let mut dirs = Vec::new();
    let (failures, steps) = run_all(|_| {
        let dir = tempfile::tempdir().unwrap();
        let store = SharedStore::open(dir.path().join("vector.db")).unwrap();
        dirs.push(dir);
        Box::new(Shared(store)) as Box<dyn Backend>
    });
    assert!(
        failures.is_empty(),
        "{} vector(s) failed on a shared store:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(steps > 100, "only {steps} steps ran");
}

#[test]
fn the_runner_catches_a_wrong_expectation() {
    // Guards the runner itself: a vector that expects the wrong fence must fail.
    let dir = tempfile::tempdir().unwrap();
    let mut backend = TargetBackend::new(dir.path().join("v.db"), OpenOptions::new());
    let steps: Vec<Value> = serde_json::from_str(
        r#"[{"op":"enqueue","job":"j","expect":{"value":true}},
            {"op":"claim","job":"j","owner":"a","now":0,"ttl":5,"expect":{"value":2}}]"#,
    )
    .unwrap();
    assert!(check_step("t", 0, steps[0].as_object().unwrap(), &mut backend).is_ok());
    assert!(check_step("t", 1, steps[1].as_object().unwrap(), &mut backend).is_err());
}
