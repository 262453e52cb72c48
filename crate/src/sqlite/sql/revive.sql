-- ?1 job, ?2 now. Dead jobs only (done and marked); the fence is kept, so every token handed out
-- before stays stale.
UPDATE jobs SET done = 0, owner = NULL, until = ?2
WHERE id = ?1 AND done = 1 AND EXISTS (SELECT 1 FROM leasefence_dead WHERE job = ?1)
