-- ?1 before (an insertion number), ?2 queue or NULL, ?3 how many. Dead jobs, newest enqueued
-- first. Read from the dead marks (CROSS JOIN keeps them the outer loop), so the cost follows
-- the dead jobs, not every job done before them.
SELECT j.id, j.owner, j.until, j.fence, j.result, j.done, o.queue, o.priority, 1,
       (SELECT count(*) FROM leasefence_failures f WHERE f.job = j.id), o.seq
FROM leasefence_dead d CROSS JOIN leasefence_order o CROSS JOIN jobs j
WHERE o.job = d.job AND j.id = d.job AND j.done = 1
  AND o.seq < ?1 AND (?2 IS NULL OR o.queue = ?2)
ORDER BY o.seq DESC
LIMIT ?3
