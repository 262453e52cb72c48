// The attempt rules (docs/contract.md section 7: every claim is one attempt): whether a claim may
// run, and what a failed attempt becomes. Pure functions of what the store told the worker.

/**
 * Whether a claim past maxAttempts may still run (the rule of the Rust runtime too, so workers
 * of both on one file agree): only when its previous attempt recorded a failure, i.e. the job
 * was revived after that failure made it dead. Otherwise its holders lost their leases or
 * crashed (a poison job kills its worker) and it is made dead at once. `failures` is the job's
 * list from `inspect`.
 */
function mayRunPastMax(failures, fence) {
  return (failures ?? []).some((failure) => failure.fence === fence - 1);
}

/** Why a claim past maxAttempts is made dead without running. */
const pastMaxReason = (attempt, maxAttempts) =>
  `attempt ${attempt} of at most ${maxAttempts}: earlier holders lost their leases without completing or failing the job (killed, paused, or blocked past the lease)`;

/**
 * What a failed attempt becomes: `{dead: true}` at maxAttempts, else `{dead: false, delay}` with
 * the backoff's delay in seconds (anything but a finite number >= 0 counts as 0).
 */
function afterFailure(attempt, maxAttempts, backoff, error) {
  if (attempt >= maxAttempts) return { dead: true };
  let delay = Number(backoff(attempt, error));
  if (!Number.isFinite(delay) || delay < 0) delay = 0;
  return { dead: false, delay };
}

export { mayRunPastMax, pastMaxReason, afterFailure };
