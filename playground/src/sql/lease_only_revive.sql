-- ?1 job, ?2 now: a dead job is queued again, claimable from now.
UPDATE lease_only_jobs SET done = 0, dead = 0, owner = NULL, until = ?2 WHERE id = ?1 AND dead = 1
