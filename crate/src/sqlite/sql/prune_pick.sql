-- ?1 before, ?2 keep_dead, ?3 at most, ?4 only_dead. Finished jobs in finish order through the partial index
-- (no scan of open jobs), with their fences for the floor; `done = 1` is read from `jobs` itself,
-- so a row whose stamp is out of line (changed behind the triggers) is never deleted.
SELECT o.job, j.fence FROM leasefence_order o INDEXED BY leasefence_finished
JOIN jobs j ON j.id = o.job
WHERE o.finished IS NOT NULL AND o.finished < ?1 AND j.done = 1
  AND (?2 = 0 OR NOT EXISTS (SELECT 1 FROM leasefence_dead d WHERE d.job = o.job))
  AND (?4 = 0 OR EXISTS (SELECT 1 FROM leasefence_dead d WHERE d.job = o.job))
ORDER BY o.finished
LIMIT ?3
