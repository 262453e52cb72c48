-- $1 before (an insertion number), $2 queue or NULL, $3 done jobs only, $4 how many. Newest
-- enqueued first, down leasefence_seq from the cursor.
SELECT j.id, j.owner, j.until, j.fence, j.result, j.done, j.queue, j.priority,
       EXISTS (SELECT 1 FROM leasefence_dead d WHERE d.job = j.id),
       (SELECT count(*) FROM leasefence_failures f WHERE f.job = j.id), j.seq
FROM jobs j
WHERE j.seq < $1 AND ($2::text IS NULL OR j.queue = $2)
  AND (NOT $3 OR (j.done = 1
                  AND NOT EXISTS (SELECT 1 FROM leasefence_dead d WHERE d.job = j.id)))
ORDER BY j.seq DESC
LIMIT $4
