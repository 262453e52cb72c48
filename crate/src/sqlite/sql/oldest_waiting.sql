-- ?1 now. Per queue, since when its longest-waiting claimable job has waited: a job waits from
-- the later of its `until` (a run time, a retry time, the end of a lapsed lease) and the time it
-- was enqueued (`enqueued`, the store's clock). One pass over the open rows due at `now`
-- (leasefence_next holds every open row); the dashboard's counting thread calls it, not a request.
SELECT queue, min(max(until, coalesce(enqueued, until)))
FROM leasefence_order
WHERE open = 1 AND until <= ?1
GROUP BY queue
ORDER BY queue
