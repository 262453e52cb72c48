-- ?1 now. stats_queue.sql for every queue at once, in one pass: each queue's jobs by state,
-- with dead jobs still among `done` (dead_per_queue.sql counts those apart).
SELECT o.queue,
       coalesce(sum(j.done = 0 AND j.until <= ?1), 0),
       coalesce(sum(j.done = 0 AND j.until > ?1 AND j.owner IS NULL), 0),
       coalesce(sum(j.done = 0 AND j.until > ?1 AND j.owner IS NOT NULL), 0),
       coalesce(sum(j.done = 1), 0)
FROM leasefence_order o JOIN jobs j ON j.id = o.job
GROUP BY o.queue
ORDER BY o.queue
