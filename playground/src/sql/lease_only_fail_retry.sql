-- ?1 job, ?2 retry_at, ?3 error: failed by job id alone, whoever asks and whenever (as pg-boss's
-- fail while retries remain); nobody holds it, and the claim waits until retry_at.
UPDATE lease_only_jobs SET owner = NULL, until = ?2, error = ?3 WHERE id = ?1 AND done = 0
