-- $1 lowest until, $2 highest until, $3 cursor until, $4 cursor insertion number, $5 owner
-- wanted (NULL: either), $6 queue or NULL, $7 how many. The open jobs (queued, scheduled,
-- leased) in `until` order, then insertion order, along leasefence_next (until, seq) WHERE open.
SELECT j.id, j.owner, j.until, j.fence, j.result, j.done, o.queue, o.priority, false,
       (SELECT count(*) FROM leasefence_failures f WHERE f.job = j.id), o.seq
FROM leasefence_order o JOIN jobs j ON j.id = o.id
WHERE o.open AND o.until >= $1 AND o.until <= $2 AND (o.until, o.seq) > ($3, $4)
  AND ($5::boolean IS NULL OR (j.owner IS NOT NULL) = $5)
  AND ($6::text IS NULL OR o.queue = $6)
ORDER BY o.until, o.seq
LIMIT $7
