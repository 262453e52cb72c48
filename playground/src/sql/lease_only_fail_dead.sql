-- ?1 job, ?2 error: failed for good by job id alone, whoever asks (as pg-boss's fail once the
-- retries are used up): done and marked dead, with no result.
UPDATE lease_only_jobs SET done = 1, dead = 1, error = ?2 WHERE id = ?1 AND done = 0
