//! Code shared by integration tests (`mod support;`). A subdirectory, so Cargo does not build it
//! as a test target of its own.

pub mod workload;
