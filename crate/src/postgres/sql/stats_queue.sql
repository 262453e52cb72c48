-- $1 now, $2 queue. stats.sql for the jobs of one queue.
SELECT count(*) FILTER (WHERE done = 0 AND until <= $1),
       count(*) FILTER (WHERE done = 0 AND until > $1 AND owner IS NULL),
       count(*) FILTER (WHERE done = 0 AND until > $1 AND owner IS NOT NULL),
       count(*) FILTER (WHERE done = 1 AND NOT EXISTS (
           SELECT 1 FROM leasefence_dead d WHERE d.job = jobs.id)),
       count(*) FILTER (WHERE done = 1 AND EXISTS (
           SELECT 1 FROM leasefence_dead d WHERE d.job = jobs.id))
FROM jobs WHERE queue = $2
