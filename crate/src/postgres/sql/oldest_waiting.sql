-- $1 now. Per queue, since when its longest-waiting claimable job has waited: from the later of
-- its `until` (a run time, a retry time, the end of a lapsed lease) and its enqueue time
-- (`enqueued`, the server's clock). One pass over the open rows due at `now`, along
-- leasefence_next (until, seq) WHERE done = 0.
SELECT queue, min(greatest(until, coalesce(enqueued, until)))
FROM jobs
WHERE done = 0 AND fence < 9223372036854775807 AND until <= $1
GROUP BY queue
ORDER BY queue
