-- $1 before (an insertion number), $2 queue or NULL, $3 how many. Dead jobs, newest enqueued
-- first, read from the dead marks.
SELECT j.id, j.owner, j.until, j.fence, j.result, j.done, j.queue, j.priority, true,
       (SELECT count(*) FROM leasefence_failures f WHERE f.job = j.id), j.seq
FROM leasefence_dead d JOIN jobs j ON j.id = d.job
WHERE j.done = 1 AND j.seq < $1 AND ($2::text IS NULL OR j.queue = $2)
ORDER BY j.seq DESC
LIMIT $3
