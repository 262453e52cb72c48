-- ?1 before (an insertion number), ?2 queue or NULL, ?3 1 for done jobs only (0: any state),
-- ?4 how many. Newest enqueued first, down leasefence_order's primary key from the cursor; done
-- jobs are told apart by the copy `open` before `jobs` is read.
SELECT j.id, j.owner, j.until, j.fence, j.result, j.done, o.queue, o.priority,
       EXISTS (SELECT 1 FROM leasefence_dead d WHERE d.job = j.id),
       (SELECT count(*) FROM leasefence_failures f WHERE f.job = j.id), o.seq
FROM leasefence_order o JOIN jobs j ON j.id = o.job
WHERE o.seq < ?1 AND (?2 IS NULL OR o.queue = ?2)
  AND (?3 = 0 OR (o.open = 0 AND j.done = 1
                 AND NOT EXISTS (SELECT 1 FROM leasefence_dead d WHERE d.job = j.id)))
ORDER BY o.seq DESC
LIMIT ?4
