-- $1 lowest until, $2 highest until, $3 cursor until, $4 cursor insertion number, $5 owner
-- wanted (NULL: either), $6 queue or NULL, $7 how many. The open jobs (queued, scheduled,
-- leased) in `until` order, then insertion order, along leasefence_next (until, seq) WHERE
-- done = 0; a job whose fence is exhausted is closed, not open.
SELECT j.id, j.owner, j.until, j.fence, j.result, j.done, j.queue, j.priority, false,
       (SELECT count(*) FROM leasefence_failures f WHERE f.job = j.id), j.seq
FROM jobs j
WHERE j.done = 0 AND j.fence < 9223372036854775807
  AND j.until >= $1 AND j.until <= $2 AND (j.until, j.seq) > ($3, $4)
  AND ($5::boolean IS NULL OR (j.owner IS NOT NULL) = $5)
  AND ($6::text IS NULL OR j.queue = $6)
ORDER BY j.until, j.seq
LIMIT $7
