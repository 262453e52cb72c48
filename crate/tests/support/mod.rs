//! Code shared by integration tests (`mod support;`). A subdirectory, so Cargo does not build it
//! as a test target of its own. Each test uses only some of it.

#[allow(dead_code)]
pub mod batch;
#[allow(dead_code)]
pub mod cli_bin;
#[allow(dead_code)]
pub mod commits;
#[allow(dead_code)]
pub mod fault_vfs;
#[allow(dead_code)]
pub mod jobs;
#[allow(dead_code)]
pub mod lease_value;
#[allow(dead_code)]
#[cfg(feature = "postgres")]
pub mod pg_schema;
#[allow(dead_code)]
pub mod retention;
#[allow(dead_code)]
pub mod rng;
#[allow(dead_code)]
pub mod stopped;
#[allow(dead_code)]
pub mod vectors;
#[allow(dead_code)]
pub mod workload;
#[allow(dead_code)]
pub mod wrapped;
