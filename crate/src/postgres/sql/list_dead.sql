-- $1 before (an insertion number), $2 queue or NULL, $3 how many. Dead jobs, newest enqueued
-- first, read from the dead marks.
SELECT j.id, j.owner, j.until, j.fence, j.result, j.done, o.queue, o.priority, true,
       (SELECT count(*) FROM leasefence_failures f WHERE f.job = j.id), o.seq
FROM leasefence_dead d JOIN leasefence_order o ON o.id = d.job JOIN jobs j ON j.id = d.job
WHERE j.done = 1 AND o.seq < $1 AND ($2::text IS NULL OR o.queue = $2)
ORDER BY o.seq DESC
LIMIT $3
