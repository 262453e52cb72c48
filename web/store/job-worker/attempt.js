// The attempt rules (docs/contract.md sections 7 and 9: every claim is one attempt): whether a
// claim may run, and what a failed attempt becomes. The decisions are the crate's core's
// (crate/src/rules/worker.rs, through the store's `workerRules`), the same as the Rust worker's;
// here is only what the worker reads from the store for them.

/**
 * Whether the attempt before `fence` recorded a failure (a revived job's has the one that made
 * it dead), from the job's `failures` as `inspect` lists them.
 */
function previousAttemptFailed(failures, fence) {
  return (failures ?? []).some((failure) => failure.fence === fence - 1);
}

export { previousAttemptFailed };
