-- ?1 lowest until, ?2 highest until, ?3 cursor until, ?4 cursor rowid, ?5 owner wanted (NULL:
-- either, 0: none, 1: one), ?6 queue or NULL, ?7 how many. The open jobs (queued, scheduled,
-- leased) in `until` order, then insertion order, along leasefence_claimable: the index holds
-- `until` and the rowid, so the range and the order come from it and a page reads only its rows.
SELECT j.id, j.owner, j.until, j.fence, j.result, j.done, o.queue, o.priority, 0,
       (SELECT count(*) FROM leasefence_failures f WHERE f.job = j.id), j.rowid
FROM jobs j JOIN leasefence_order o ON o.job = j.id
WHERE j.done = 0 AND j.until >= ?1 AND j.until <= ?2
  AND (j.until > ?3 OR j.rowid > ?4)
  AND j.fence < 9223372036854775807
  AND (?5 IS NULL OR (j.owner IS NOT NULL) = ?5)
  AND (?6 IS NULL OR o.queue = ?6)
ORDER BY j.until, j.rowid
LIMIT ?7
