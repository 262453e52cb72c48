-- ?1 job: released by job id, whoever asks.
UPDATE lease_only_jobs SET owner = NULL, until = 0 WHERE id = ?1 AND done = 0
